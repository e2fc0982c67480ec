// Package testseqd starts real seqd servers for the Go client's tests.
//
// The binary comes from the environment variable SEQD_BINARY (a test that
// needs a server FAILS when it is unset; it never skips). The store is
// sqlite:<temp dir>/db, or, when SEQD_GO_STORE=mariadb, a fresh database
// made next to SEQD_TEST_MYSQL_URL's (required then) and dropped when the
// test ends.
//
// Each Server has fixed free ports (HTTP, binary) so Restart comes back on
// the same ports with the same store. Servers are stopped (SIGKILL if
// need be) by t.Cleanup. Methods are not safe for concurrent use.
package testseqd

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Config says how to start a server. Zero values are the defaults.
type Config struct {
	// Args are extra seqd flags ("--snowflake", "on", ...).
	Args []string
	// Store overrides the store spec (e.g. to share one between servers).
	Store string
	// Certs: serve TLS on the binary and HTTP listeners with these.
	Certs *Certs
	// TokensFile: --tokens-file.
	TokensFile string
}

// Server is one running (or stopped) seqd.
type Server struct {
	t        testing.TB
	Dir      string
	Store    string
	HTTPPort int
	TCPPort  int
	args     []string
	tls      bool
	cmd      *exec.Cmd
	exited   chan struct{}
	log      *os.File
}

// Binary is SEQD_BINARY; it fails t when unset.
func Binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("SEQD_BINARY")
	if bin == "" {
		t.Fatal("SEQD_BINARY is not set: point it at a built seqd (e.g. SEQD_BINARY=$PWD/build/seqd)")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("SEQD_BINARY: %v", err)
	}
	return bin
}

// FreePort is a TCP port free on 127.0.0.1 now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start starts seqd with extra flags and waits for /healthz.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	return StartConfig(t, Config{Args: args})
}

// StartConfig starts seqd as cfg says and waits for /healthz.
func StartConfig(t testing.TB, cfg Config) *Server {
	t.Helper()
	Binary(t)
	s := &Server{t: t, Dir: t.TempDir()}
	s.Store = cfg.Store
	if s.Store == "" {
		s.Store = NewStore(t, s.Dir)
	}
	s.tls = cfg.Certs != nil
	t.Cleanup(func() { s.Kill() })
	// A port FreePort found free may be taken by another process before
	// seqd binds it (other suites run beside this one): then new ports.
	for attempt := 1; ; attempt++ {
		s.HTTPPort, s.TCPPort = FreePort(t), FreePort(t)
		s.args = serverArgs(s, cfg)
		if s.launchOnce(attempt < 5) {
			return s
		}
		t.Logf("seqd start %d: a port was taken before seqd bound it; again on new ports", attempt)
	}
}

// serverArgs is the command line for s on its current ports.
func serverArgs(s *Server, cfg Config) []string {
	args := []string{"--store", s.Store, "--http-port", strconv.Itoa(s.HTTPPort),
		"--tcp-port", strconv.Itoa(s.TCPPort), "--threads", "2", "--log-level", "warn"}
	if cfg.Certs != nil {
		args = append(args, "--tls-cert", cfg.Certs.ServerCert, "--tls-key", cfg.Certs.ServerKey,
			"--tls-listeners", "http,binary")
	}
	if cfg.TokensFile != "" {
		args = append(args, "--tokens-file", cfg.TokensFile)
	}
	return append(args, cfg.Args...)
}

var dbCounter atomic.Int64

// RequireMariaDB is for tests that need MariaDB whatever the run's store
// (cluster mode). They run in the MariaDB run (SEQD_GO_STORE=mariadb, ctest
// go_client_mariadb, which holds the shared MariaDB's lock) and fail there
// without SEQD_TEST_MYSQL_URL; a SQLite run skips them, saying where they run.
func RequireMariaDB(t testing.TB) {
	t.Helper()
	if os.Getenv("SEQD_GO_STORE") != "mariadb" {
		t.Skip("needs MariaDB: runs with SEQD_GO_STORE=mariadb (ctest go_client_mariadb)")
	}
	if os.Getenv("SEQD_TEST_MYSQL_URL") == "" {
		t.Fatal("SEQD_GO_STORE=mariadb needs SEQD_TEST_MYSQL_URL (scripts/mariadb.sh start DIR)")
	}
}

// NewStore is a store spec for a fresh store: sqlite in dir, or a new
// MariaDB database when SEQD_GO_STORE=mariadb (dropped at t's cleanup).
func NewStore(t testing.TB, dir string) string {
	t.Helper()
	switch os.Getenv("SEQD_GO_STORE") {
	case "", "sqlite":
		return "sqlite:" + filepath.Join(dir, "db")
	case "mariadb", "mysql":
	default:
		t.Fatalf("SEQD_GO_STORE=%q: want sqlite or mariadb", os.Getenv("SEQD_GO_STORE"))
	}
	base := os.Getenv("SEQD_TEST_MYSQL_URL")
	if base == "" {
		t.Fatal("SEQD_GO_STORE=mariadb needs SEQD_TEST_MYSQL_URL: start MariaDB with scripts/mariadb.sh")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("SEQD_TEST_MYSQL_URL: %v", err)
	}
	// Named after the URL's database (scripts/mariadb.sh grants its user
	// every database whose name starts with that name and "_").
	baseName := strings.TrimPrefix(u.Path, "/")
	if baseName == "" {
		baseName = "seqd_test"
	}
	name := fmt.Sprintf("%s_go_%d_%d", baseName, os.Getpid(), dbCounter.Add(1))
	mysqlExec(t, u, "DROP DATABASE IF EXISTS "+name+"; CREATE DATABASE "+name)
	t.Cleanup(func() { mysqlExec(t, u, "DROP DATABASE IF EXISTS "+name) })
	v := *u
	v.Path = "/" + name
	return v.String()
}

func mysqlExec(t testing.TB, u *url.URL, sql string) {
	t.Helper()
	client, err := exec.LookPath("mariadb")
	if err != nil {
		if client, err = exec.LookPath("mysql"); err != nil {
			t.Fatal("neither the mariadb nor the mysql client is installed")
		}
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "3306"
	}
	pass, _ := u.User.Password()
	cmd := exec.Command(client, "--protocol=TCP", "-h", host, "-P", port, "-u", u.User.Username(), "-e", sql)
	cmd.Env = append(os.Environ(), "MYSQL_PWD="+pass)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", sql, err, out)
	}
}

// Addr is the binary protocol's "127.0.0.1:port".
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.TCPPort) }

// Running reports whether the process is up (not exited).
func (s *Server) Running() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

func (s *Server) launch() {
	s.t.Helper()
	s.launchOnce(false)
}

// launchOnce starts seqd and waits until it is healthy. With portRetry, a
// start that fails because a port is in use returns false (its log is
// removed); any other failure fails the test.
func (s *Server) launchOnce(portRetry bool) bool {
	s.t.Helper()
	log, err := os.OpenFile(filepath.Join(s.Dir, "seqd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		s.t.Fatalf("log: %v", err)
	}
	s.log = log
	s.cmd = exec.Command(Binary(s.t), s.args...)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start seqd: %v", err)
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, ch chan struct{}) { cmd.Wait(); close(ch) }(s.cmd, s.exited)
	return s.waitHealthy(20*time.Second, portRetry)
}

func (s *Server) waitHealthy(limit time.Duration, portRetry bool) bool {
	s.t.Helper()
	scheme := "http"
	client := &http.Client{Timeout: time.Second}
	if s.tls {
		scheme = "https"
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			logs := s.Logs()
			if portRetry && strings.Contains(logs, "Address already in use") {
				s.log.Close()
				_ = os.Remove(filepath.Join(s.Dir, "seqd.log"))
				return false
			}
			s.t.Fatalf("seqd exited at start: %s", logs)
		default:
		}
		// /readyz, not /healthz: a MySQL store creates its tables in the
		// background after the start, and a request before that fails.
		resp, err := client.Get(fmt.Sprintf("%s://127.0.0.1:%d/readyz", scheme, s.HTTPPort))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				// The binary listener too.
				if c, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
					c.Close()
					return true
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("seqd not healthy within %v: %s", limit, s.Logs())
	return false
}

// Stop sends SIGTERM and waits (SIGKILL after 10 s).
func (s *Server) Stop() { s.signalAndWait(syscall.SIGTERM, 10*time.Second) }

// Kill sends SIGKILL and waits. No-op if not running.
func (s *Server) Kill() { s.signalAndWait(syscall.SIGKILL, 10*time.Second) }

func (s *Server) signalAndWait(sig syscall.Signal, limit time.Duration) {
	if !s.Running() {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
	case <-time.After(limit):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.log.Close()
}

// Pause stops the process (SIGSTOP) and waits until it is stopped:
// connections stay open, nothing is answered. Resume continues it.
func (s *Server) Pause() {
	s.t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGSTOP)
	stat := fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid)
	for i := 0; i < 500; i++ {
		b, err := os.ReadFile(stat)
		if err != nil {
			s.t.Fatalf("pause: %v", err)
		}
		// "pid (comm) S ...": the state follows the last ')'.
		if j := strings.LastIndexByte(string(b), ')'); j > 0 && len(b) > j+2 && (b[j+2] == 'T' || b[j+2] == 't') {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	s.t.Fatal("seqd did not stop after SIGSTOP")
}

func (s *Server) Resume() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }

// Restart stops the server (SIGTERM, or SIGKILL when kill) and starts it
// again on the same ports and store.
func (s *Server) Restart(kill bool) {
	s.t.Helper()
	if kill {
		s.Kill()
	} else {
		s.Stop()
	}
	s.Start()
}

// Start starts a stopped server again (same ports, store and flags).
func (s *Server) Start() {
	s.t.Helper()
	s.launch()
}

// Logs is the server's output so far.
func (s *Server) Logs() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "seqd.log"))
	return string(b)
}

// Token is one tokens-file line's parts.
type Token struct {
	ID     string
	Secret string
	Scopes []string // e.g. "ids:*", "snowflake", "msg:send:*", "msg:read:*"
}

// TokensFile writes tokens to a tokens file in dir and returns its path.
func TokensFile(t testing.TB, dir string, tokens ...Token) string {
	t.Helper()
	var b strings.Builder
	for _, tk := range tokens {
		sum := sha256.Sum256([]byte(tk.Secret))
		fmt.Fprintf(&b, "%s %s %s\n", tk.ID, hex.EncodeToString(sum[:]), strings.Join(tk.Scopes, ","))
	}
	path := filepath.Join(dir, "tokens")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatalf("tokens file: %v", err)
	}
	return path
}

// Certs are the files tests/tls/make_certs.sh writes.
type Certs struct {
	Dir        string
	CA         string // ca.crt
	ServerCert string // server.crt: SAN IP:127.0.0.1, DNS:localhost
	ServerKey  string
	OtherCA    string // other-ca.crt: an unrelated CA
}

// MakeCerts makes a throw-away PKI in a temp dir with the repository's
// tests/tls/make_certs.sh (openssl CLI).
func MakeCerts(t testing.TB) *Certs {
	t.Helper()
	script := findUp(t, "tests/tls/make_certs.sh")
	dir := t.TempDir()
	if out, err := exec.Command("sh", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("make_certs.sh: %v: %s", err, out)
	}
	return &Certs{Dir: dir, CA: filepath.Join(dir, "ca.crt"), ServerCert: filepath.Join(dir, "server.crt"),
		ServerKey: filepath.Join(dir, "server.key"), OtherCA: filepath.Join(dir, "other-ca.crt")}
}

// Pool is a cert pool holding the PEM file at path.
func Pool(t testing.TB, path string) *x509.CertPool {
	t.Helper()
	pem, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(pem) {
		t.Fatalf("%s: no certificate", path)
	}
	return p
}

// findUp finds rel in the working directory or one of its parents (the
// repository root, from a package directory).
func findUp(t testing.TB, rel string) string {
	t.Helper()
	dir, _ := os.Getwd()
	for {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("%s not found above the working directory", rel)
		}
		dir = parent
	}
}
