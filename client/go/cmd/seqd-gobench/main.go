// Command seqd-gobench is the Go client's load generator, the counterpart
// of the C++ seqbench (bench/seqbench/seqbench.cc) for comparing the two
// clients on one seqd: N connections (one seqd.Client with
// ConnsPerEndpoint = N) and D calls in flight per connection (N x D
// goroutines, each making one call at a time, closed loop), each asking
// NEXT_IDS for C IDs of one key (--key) or of a fresh key per request
// (--new-keys PREFIX: PREFIX, the goroutine's connection number, "_", that
// connection number's counter; as seqbench names them). Prints IDs/s and the latency
// quantiles, as text or as JSON with seqbench's field names.
//
//	seqd-gobench --tcp 127.0.0.1:7070 --key n_bench --connections 4 --pipeline 16 --duration 10
//
// The client runs as an application would: retries on, no prefetch.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	seqd "seqd.dev/go"
)

type config struct {
	addr        string
	key         string
	newKeys     string
	connections int
	pipeline    int
	count       int
	duration    time.Duration
	warmup      time.Duration
	token       string
	json        bool
	cpuProfile  string
	async       bool
	callback    bool
	raw         bool
}

// worker is one goroutine's tally.
type worker struct {
	lat    []time.Duration // of the requests after the warmup
	ids    int64
	errs   map[string]int64
	warmup int64
}

func main() {
	var cfg config
	var dur, warm float64
	flag.StringVar(&cfg.addr, "tcp", "", "seqd's binary endpoint HOST:PORT (required)")
	flag.StringVar(&cfg.key, "key", "", "the key to ask IDs of")
	flag.StringVar(&cfg.newKeys, "new-keys", "", "a fresh key per request: PREFIX<conn>_<n>")
	flag.IntVar(&cfg.connections, "connections", 4, "connections")
	flag.IntVar(&cfg.pipeline, "pipeline", 16, "calls in flight per connection")
	flag.IntVar(&cfg.count, "count", 1, "IDs per request")
	flag.Float64Var(&dur, "duration", 10, "seconds to run")
	flag.Float64Var(&warm, "warmup", 0, "seconds at the start left out of the latency figures")
	flag.StringVar(&cfg.token, "token", os.Getenv("SEQD_TOKEN"), "token secret (default $SEQD_TOKEN)")
	flag.BoolVar(&cfg.json, "json", false, "print the report as JSON")
	flag.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
	flag.BoolVar(&cfg.async, "async", false,
		"one goroutine per connection keeps --pipeline GoNextIDs calls in flight (default: a goroutine per call)")
	flag.BoolVar(&cfg.callback, "callback", false,
		"connections x pipeline chains of NextIDsFunc calls, each callback starting the next (no goroutine per call)")
	flag.BoolVar(&cfg.raw, "raw", false,
		"no client: one goroutine per connection speaks the protocol itself, as seqbench does (the Go ceiling)")
	flag.Parse()
	cfg.duration = time.Duration(dur * float64(time.Second))
	cfg.warmup = time.Duration(warm * float64(time.Second))
	if cfg.addr == "" || (cfg.key == "") == (cfg.newKeys == "") || cfg.connections < 1 ||
		cfg.pipeline < 1 || cfg.count < 1 || cfg.duration <= 0 || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: seqd-gobench --tcp HOST:PORT (--key KEY | --new-keys PREFIX) "+
			"[--connections N] [--pipeline D] [--count C] [--duration S] [--warmup S] [--async | --callback | --raw] [--json]")
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "seqd-gobench:", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	c, err := seqd.New(seqd.Options{Endpoints: []string{cfg.addr}, ConnsPerEndpoint: cfg.connections,
		Token: cfg.token})
	if err != nil {
		return err
	}
	defer c.Close()
	// Connect every pooled connection before the clock starts.
	warm, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < cfg.connections*2; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); _ = c.Ping(warm) }()
	}
	wg.Wait()

	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	// Blocking calls: connections x pipeline goroutines, one call each at a
	// time. --async: one goroutine per connection keeping pipeline calls in
	// flight with GoNextIDs (seqbench's shape: one loop, many calls).
	n := cfg.connections * cfg.pipeline
	if cfg.async || cfg.raw {
		n = cfg.connections
	}
	workers := make([]*worker, n)
	var stop atomic.Bool
	start := time.Now()
	warmEnd := start.Add(cfg.warmup)
	// One key counter per connection number, shared by its goroutines, so
	// --new-keys makes the keys seqbench makes (PREFIX<conn>_<n>): the store
	// sees the same number of insert streams from either client.
	keyCounters := make([]atomic.Int64, cfg.connections)
	// --callback: one lane per connection, chains spread over them (nil
	// lanes with LANES=0 in the environment: calls go to the delivering
	// connection).
	lanes := make([]*seqd.Lane, cfg.connections)
	if os.Getenv("LANES") != "0" {
		for i := range lanes {
			lanes[i] = c.Lane()
		}
	}
	for g := 0; g < n; g++ {
		w := &worker{errs: map[string]int64{}, lat: make([]time.Duration, 0, 1<<16)}
		workers[g] = w
		prefix := cfg.newKeys + strconv.Itoa(g%cfg.connections) + "_"
		counter := &keyCounters[g%cfg.connections]
		nextKey := func() string {
			if cfg.newKeys == "" {
				return cfg.key
			}
			return prefix + strconv.FormatInt(counter.Add(1), 10)
		}
		conn := g % cfg.connections
		wg.Add(1)
		go func() {
			defer wg.Done()
			if cfg.raw {
				if err := w.runRaw(cfg, conn, &stop, warmEnd); err != nil {
					w.errs[err.Error()]++
				}
			} else if cfg.callback {
				w.runCallback(c, lanes[conn], cfg, nextKey, &stop, warmEnd)
			} else if cfg.async {
				w.runAsync(c, cfg, nextKey, &stop, warmEnd)
			} else {
				w.runBlocking(c, cfg, nextKey, &stop, warmEnd)
			}
		}()
	}
	time.Sleep(cfg.duration)
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	report(cfg, elapsed, workers)
	return nil
}

// runBlocking makes one NextIDs call at a time until stop.
func (w *worker) runBlocking(c *seqd.Client, cfg config, nextKey func() string, stop *atomic.Bool, warmEnd time.Time) {
	ctx := context.Background()
	for !stop.Load() {
		t0 := time.Now()
		rs, err := c.NextIDs(ctx, nextKey(), cfg.count)
		w.tally(t0, rs, err, warmEnd)
	}
}

// runAsync keeps cfg.pipeline GoNextIDs calls in flight until stop, then
// collects the ones still out.
func (w *worker) runAsync(c *seqd.Client, cfg config, nextKey func() string, stop *atomic.Bool, warmEnd time.Time) {
	ctx := context.Background()
	done := make(chan *seqd.IDsCall, cfg.pipeline)
	started := make(map[*seqd.IDsCall]time.Time, cfg.pipeline)
	for i := 0; i < cfg.pipeline; i++ {
		started[c.GoNextIDs(ctx, nextKey(), cfg.count, done)] = time.Now()
	}
	for len(started) > 0 {
		call := <-done
		t0 := started[call]
		delete(started, call)
		w.tally(t0, call.Ranges, call.Err, warmEnd)
		if !stop.Load() {
			started[c.GoNextIDs(ctx, nextKey(), cfg.count, done)] = time.Now()
		}
	}
}

// runCallback is one chain of NextIDsFunc calls until stop: each callback
// (on the connection's reader) tallies its call and starts the next.
func (w *worker) runCallback(c *seqd.Client, lane *seqd.Lane, cfg config, nextKey func() string, stop *atomic.Bool, warmEnd time.Time) {
	ctx := context.Background()
	ended := make(chan struct{})
	var t0 time.Time
	call := c.NextIDsFunc
	if lane != nil {
		call = lane.NextIDsFunc
	}
	var next func(rs []seqd.Range, err error)
	next = func(rs []seqd.Range, err error) {
		w.tally(t0, rs, err, warmEnd)
		if stop.Load() {
			close(ended)
			return
		}
		t0 = time.Now()
		call(ctx, nextKey(), cfg.count, next)
	}
	t0 = time.Now()
	call(ctx, nextKey(), cfg.count, next)
	<-ended
}

// tally records one call sent at t0.
func (w *worker) tally(t0 time.Time, rs []seqd.Range, err error, warmEnd time.Time) {
	d := time.Since(t0)
	if err != nil {
		w.errs[seqd.CodeOf(err).String()]++
		return
	}
	for _, r := range rs {
		w.ids += r.Len()
	}
	if t0.Before(warmEnd) {
		w.warmup++
	} else {
		w.lat = append(w.lat, d)
	}
}

func report(cfg config, elapsed float64, workers []*worker) {
	var lat []time.Duration
	var ids, errs, warm int64
	kinds := map[string]int64{}
	for _, w := range workers {
		lat = append(lat, w.lat...)
		ids += w.ids
		warm += w.warmup
		for k, v := range w.errs {
			kinds[k] += v
			errs += v
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		i := int(p * float64(len(lat)))
		if i >= len(lat) {
			i = len(lat) - 1
		}
		return float64(lat[i].Nanoseconds()) / 1000
	}
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	mean := 0.0
	if len(lat) > 0 {
		mean = float64(sum.Nanoseconds()) / 1000 / float64(len(lat))
	}
	requests := int64(len(lat)) + warm + errs
	mode, key := "key", cfg.key
	if cfg.newKeys != "" {
		mode, key = "new_keys", cfg.newKeys+"*"
	}
	if cfg.json {
		out := map[string]interface{}{
			"client": "go", "async": cfg.async, "callback": cfg.callback, "raw": cfg.raw, "protocol": "tcp", "endpoint": cfg.addr, "mode": mode, "key": key,
			"connections": cfg.connections, "pipeline": cfg.pipeline, "count": cfg.count,
			"warmup_s": cfg.warmup.Seconds(), "warmup_requests": warm, "duration_s": elapsed,
			"requests": requests, "requests_per_s": float64(requests) / elapsed,
			"ids": ids, "ids_per_s": float64(ids) / elapsed, "errors": errs, "error_kinds": kinds,
			"latency_us": map[string]float64{"p50": q(0.5), "p99": q(0.99), "p999": q(0.999),
				"max": q(1), "mean": mean},
		}
		b, _ := json.Marshal(out)
		fmt.Println(string(b))
		return
	}
	fmt.Printf("go tcp %s %s=%s connections=%d pipeline=%d count=%d async=%v duration=%.2fs\n", cfg.addr, mode,
		key, cfg.connections, cfg.pipeline, cfg.count, cfg.async, elapsed)
	fmt.Printf("requests  %d  (%.0f/s)\n", requests, float64(requests)/elapsed)
	fmt.Printf("ids       %d  (%.0f/s)\n", ids, float64(ids)/elapsed)
	fmt.Printf("errors    %d\n", errs)
	for k, v := range kinds {
		fmt.Printf("  %-40s %d\n", k, v)
	}
	fmt.Printf("latency   p50 %.1f us  p99 %.1f us  p999 %.1f us  max %.1f us  mean %.1f us\n",
		q(0.5), q(0.99), q(0.999), q(1), mean)
}
