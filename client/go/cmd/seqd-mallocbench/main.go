// Command seqd-mallocbench measures OpenIM's seq allocation (Malloc) on
// two backends in the same shape: C closed-loop callers (goroutines), each
// call a Malloc of --size seqs of a conversation picked at random among
// --convs, for --duration.
//
//   - --redis HOST:PORT: OpenIM's own path on a cache hit, the malloc
//     script of its seq design (EVALSHA on a hash per conversation with
//     CURR and LAST), over one connection per caller as go-redis's pool
//     would give. The hashes are loaded first with LAST far ahead, so
//     every call is a hit (state 0). Not durable: Redis answers from memory.
//   - --seqd HOST:PORT: seqd's NEXT_BLOCK_ONCE (a dense key: durable and
//     gap-free, a fresh token per call) or, with --segment, NEXT_BLOCK of
//     segment keys; one seqd.Client with --connections connections.
//
// Prints calls/s and the latency quantiles as one JSON line.
//
//	seqd-mallocbench --redis 127.0.0.1:6379 --callers 64 --convs 1000 --duration 10
//	seqd-mallocbench --seqd 127.0.0.1:7070 --prefix si_bench_ --callers 64 --convs 1000
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	mrand "math/rand"
	"net"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	seqd "seqd.dev/go"
)

// mallocScript is the seed's §3.2 script, as OpenIM runs it: state 0 is a
// hit (CURR advanced by size), 1 a missing hash, 2 a locked one, 3 a hash
// whose LAST is too close (OpenIM then reserves more from MongoDB).
const mallocScript = `
local key = KEYS[1]
local size = tonumber(ARGV[1])
if redis.call("EXISTS", key) == 0 then
    local lock = math.random(0, 999999999)
    redis.call("HSET", key, "LOCK", lock)
    return {1, lock}
end
if redis.call("HEXISTS", key, "LOCK") == 1 then
    return {2}
end
local curr = tonumber(redis.call("HGET", key, "CURR"))
local last = tonumber(redis.call("HGET", key, "LAST"))
if curr + size > last then
    local lock = math.random(0, 999999999)
    redis.call("HSET", key, "LOCK", lock)
    redis.call("HSET", key, "CURR", last)
    return {3, curr, last, lock}
end
redis.call("HSET", key, "CURR", curr + size)
return {0, curr, last}
`

type config struct {
	redis, seqdAddr, prefix string
	callers, convs, size    int
	connections             int
	segment                 bool
	duration, warmup        time.Duration
}

type report struct {
	Backend   string  `json:"backend"`
	Callers   int     `json:"callers"`
	Convs     int     `json:"convs"`
	Size      int     `json:"size"`
	Calls     int64   `json:"calls"`
	Errors    int64   `json:"errors"`
	PerSecond float64 `json:"calls_per_s"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	FirstErr  string  `json:"first_error,omitempty"`
}

// mallocFunc makes one Malloc of conversation conv; each caller has its own.
type mallocFunc func(ctx context.Context, conv int) error

func main() {
	var cfg config
	var dur, warm float64
	flag.StringVar(&cfg.redis, "redis", "", "redis-server HOST:PORT: OpenIM's malloc script")
	flag.StringVar(&cfg.seqdAddr, "seqd", "", "seqd's binary endpoint HOST:PORT")
	flag.StringVar(&cfg.prefix, "prefix", "si_mallocbench_", "conversation ids: PREFIX<n>")
	flag.IntVar(&cfg.callers, "callers", 64, "concurrent callers")
	flag.IntVar(&cfg.convs, "convs", 1000, "conversations")
	flag.IntVar(&cfg.size, "size", 1, "seqs per Malloc")
	flag.IntVar(&cfg.connections, "connections", 4, "seqd connections (the client's pool)")
	flag.BoolVar(&cfg.segment, "segment", false, "seqd: NEXT_BLOCK of segment keys, no token")
	flag.Float64Var(&dur, "duration", 10, "seconds to run")
	flag.Float64Var(&warm, "warmup", 1, "seconds first, left out of the figures")
	flag.Parse()
	cfg.duration = time.Duration(dur * float64(time.Second))
	cfg.warmup = time.Duration(warm * float64(time.Second))
	if (cfg.redis == "") == (cfg.seqdAddr == "") || cfg.callers < 1 || cfg.convs < 1 || cfg.size < 1 {
		fmt.Fprintln(os.Stderr, "seqd-mallocbench: give exactly one of --redis and --seqd, and positive counts")
		os.Exit(2)
	}
	r, err := run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "seqd-mallocbench:", err)
		os.Exit(1)
	}
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
}

func run(cfg config) (report, error) {
	var callers []mallocFunc
	var backend string
	if cfg.redis != "" {
		backend = "redis"
		sha, err := loadRedis(cfg)
		if err != nil {
			return report{}, err
		}
		for i := 0; i < cfg.callers; i++ {
			c, err := dialRedis(cfg.redis)
			if err != nil {
				return report{}, err
			}
			defer c.Close()
			callers = append(callers, redisMalloc(c, sha, cfg))
		}
	} else {
		backend = "seqd-dense"
		if cfg.segment {
			backend = "seqd-segment"
		}
		client, err := seqd.New(seqd.Options{Endpoints: []string{cfg.seqdAddr}, ConnsPerEndpoint: cfg.connections})
		if err != nil {
			return report{}, err
		}
		defer client.Close()
		for i := 0; i < cfg.callers; i++ {
			callers = append(callers, seqdMalloc(client, cfg))
		}
	}
	return measure(backend, cfg, callers), nil
}

// measure runs every caller closed loop and collects their latencies.
func measure(backend string, cfg config, callers []mallocFunc) report {
	ctx := context.Background()
	start := time.Now()
	counted, end := start.Add(cfg.warmup), start.Add(cfg.warmup+cfg.duration)
	var mu sync.Mutex
	var lat []time.Duration
	var calls, errs int64
	var firstErr string
	var wg sync.WaitGroup
	for i, malloc := range callers {
		wg.Add(1)
		go func(seed int64, malloc mallocFunc) {
			defer wg.Done()
			rnd := mrand.New(mrand.NewSource(seed))
			var mine []time.Duration
			var myErrs int64
			var myFirst string
			for {
				t0 := time.Now()
				if t0.After(end) {
					break
				}
				err := malloc(ctx, rnd.Intn(cfg.convs))
				if t0.Before(counted) {
					continue
				}
				if err != nil {
					myErrs++
					if myFirst == "" {
						myFirst = err.Error()
					}
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			calls += int64(len(mine))
			errs += myErrs
			if firstErr == "" {
				firstErr = myFirst
			}
			mu.Unlock()
		}(int64(i+1), malloc)
	}
	wg.Wait()
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	q := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000
	}
	return report{backend, cfg.callers, cfg.convs, cfg.size, calls, errs,
		float64(calls) / cfg.duration.Seconds(), q(0.5), q(0.99), firstErr}
}

func seqdMalloc(c *seqd.Client, cfg config) mallocFunc {
	return func(ctx context.Context, conv int) error {
		key := cfg.prefix + strconv.Itoa(conv)
		if cfg.segment {
			_, _, err := c.NextBlock(ctx, key, cfg.size)
			return err
		}
		var t [12]byte
		if _, err := rand.Read(t[:]); err != nil {
			return err
		}
		_, _, err := c.NextBlockOnce(ctx, key, cfg.size, hex.EncodeToString(t[:]))
		return err
	}
}

// --- a minimal RESP2 client: what the benchmark needs, no more -------------

type redisConn struct {
	net.Conn
	r *bufio.Reader
}

func dialRedis(addr string) (*redisConn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &redisConn{c, bufio.NewReader(c)}, nil
}

func (c *redisConn) do(args ...string) (interface{}, error) {
	buf := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		buf = append(buf, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	if _, err := c.Write(buf); err != nil {
		return nil, err
	}
	return c.reply()
}

func (c *redisConn) reply() (interface{}, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 {
		return nil, errors.New("redis: short reply")
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, errors.New("redis: " + body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, b); err != nil {
			return nil, err
		}
		return string(b[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, err
		}
		out := make([]interface{}, 0, n)
		for i := 0; i < n; i++ {
			v, err := c.reply()
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	return nil, errors.New("redis: unknown reply " + line)
}

// loadRedis loads the script and every conversation's hash, far from its
// LAST, so that each Malloc of the run is a cache hit.
func loadRedis(cfg config) (string, error) {
	c, err := dialRedis(cfg.redis)
	if err != nil {
		return "", err
	}
	defer c.Close()
	sha, err := c.do("SCRIPT", "LOAD", mallocScript)
	if err != nil {
		return "", err
	}
	for i := 0; i < cfg.convs; i++ {
		key := "MALLOC_SEQ:" + cfg.prefix + strconv.Itoa(i)
		if _, err := c.do("DEL", key); err != nil {
			return "", err
		}
		if _, err := c.do("HSET", key, "CURR", "0", "LAST", "9000000000000000000"); err != nil {
			return "", err
		}
	}
	return sha.(string), nil
}

func redisMalloc(c *redisConn, sha string, cfg config) mallocFunc {
	size := strconv.Itoa(cfg.size)
	return func(ctx context.Context, conv int) error {
		v, err := c.do("EVALSHA", sha, "1", "MALLOC_SEQ:"+cfg.prefix+strconv.Itoa(conv), size)
		if err != nil {
			return err
		}
		r, ok := v.([]interface{})
		if !ok || len(r) == 0 || r[0] != int64(0) {
			return fmt.Errorf("redis: not a cache hit: %v", v)
		}
		return nil
	}
}
