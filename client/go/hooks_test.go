package seqd

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seqd.dev/go/internal/testseqd"
)

// TestRetryAndFailoverHooks: the first endpoint answers STORE_UNAVAILABLE,
// the second serves: OnRetry, OnFailover and the logger each hear of it
// once, and the counters move with it.
func TestRetryAndFailoverHooks(t *testing.T) {
	a := startFake(t, func(op byte, p []byte) (Code, []byte) { return CodeStoreUnavailable, nil })
	b := startFake(t, func(op byte, p []byte) (Code, []byte) {
		if op == opNextIDs {
			return CodeUnknownKey, nil
		}
		var e enc
		e.u32(1)
		e.i64(42)
		return CodeOK, e.b
	})
	log := &recordingLogger{}
	var mu sync.Mutex
	var retries []RetryEvent
	var failovers []FailoverEvent
	c := newClient(t, Options{Endpoints: []string{a.addr(), b.addr()}, ConnsPerEndpoint: 1, Logger: log,
		OnRetry: func(ev RetryEvent) { mu.Lock(); retries = append(retries, ev); mu.Unlock() },
		OnFailover: func(ev FailoverEvent) {
			mu.Lock()
			failovers = append(failovers, ev)
			mu.Unlock()
		}})
	c.current.Store(0)
	if ids, err := c.Snowflake(ctxT(t, 5*time.Second), 1); err != nil || ids[0] != 42 {
		t.Fatalf("Snowflake: %v, %v", ids, err)
	}
	mu.Lock()
	if len(retries) != 1 || retries[0].Op != "SNOWFLAKE" || retries[0].Attempt != 1 ||
		retries[0].Endpoint != a.addr() || CodeOf(retries[0].Err) != CodeStoreUnavailable {
		t.Fatalf("retry events: %+v", retries)
	}
	if len(failovers) != 1 || failovers[0].From != a.addr() || failovers[0].To != b.addr() ||
		failovers[0].Attempt != 2 || CodeOf(failovers[0].Err) != CodeStoreUnavailable {
		t.Fatalf("failover events: %+v", failovers)
	}
	mu.Unlock()
	r, ok := log.find("seqd: attempt failed, retrying")
	if !ok || r.level != "WARN" || r.attrs["op"] != "SNOWFLAKE" || r.attrs["endpoint"] != a.addr() ||
		r.attrs["code"] != "STORE_UNAVAILABLE" {
		t.Fatalf("retry record: %+v (found %v)", r, ok)
	}
	r, ok = log.find("seqd: failing over")
	if !ok || r.level != "WARN" || r.attrs["from"] != a.addr() || r.attrs["to"] != b.addr() {
		t.Fatalf("failover record: %+v (found %v)", r, ok)
	}
	if _, err := c.NextID(ctxT(t, 5*time.Second), "n_x"); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("NextID: %v, want UNKNOWN_KEY", err)
	}
	m := c.Metrics()
	if m.Calls != 2 || m.Retries != 1 || m.Failovers != 1 || m.Connects != 2 || m.Reconnects != 0 ||
		len(m.Errors) != 1 || m.Errors[CodeUnknownKey] != 1 {
		t.Fatalf("metrics: %+v", m)
	}
}

// TestCustomDialerOverUnixSocket: Options.Dial opens the connections; here
// over a unix socket (proxied to seqd's TCP port) for an endpoint name
// that resolves nowhere, so only the custom dialer can reach seqd.
func TestCustomDialerOverUnixSocket(t *testing.T) {
	s := testseqd.Start(t)
	sock := filepath.Join(t.TempDir(), "seqd.sock")
	proxyUnixToTCP(t, sock, s.Addr())
	var dials atomic.Int32
	var mu sync.Mutex
	var asked []string
	c := newClient(t, Options{Endpoints: []string{"seqd.invalid:7070"}, ConnsPerEndpoint: 2,
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			dials.Add(1)
			mu.Lock()
			asked = append(asked, network+" "+address)
			mu.Unlock()
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}})
	ctx := ctxT(t, 10*time.Second)
	var seen sync.Map
	parallel(16, func(int) {
		for i := 0; i < 50; i++ {
			id, err := c.NextID(ctx, "n_unix")
			if err != nil {
				t.Error(err)
				return
			}
			if _, dup := seen.LoadOrStore(id, true); dup {
				t.Errorf("ID %d twice", id)
			}
		}
	})
	if n := dials.Load(); n != 2 {
		t.Fatalf("%d dials, want 2 (one per pooled connection)", n)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, a := range asked {
		if a != "tcp seqd.invalid:7070" {
			t.Fatalf("Dial asked for %q, want the endpoint as listed", a)
		}
	}
	if m := c.Metrics(); m.Connects != 2 || m.Calls != 16*50 {
		t.Fatalf("metrics: %+v", m)
	}
}

// proxyUnixToTCP serves a unix socket at path whose connections are
// relayed to addr, until t ends.
func proxyUnixToTCP(t *testing.T, path, addr string) {
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", addr)
			if err != nil {
				in.Close()
				continue
			}
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
}
