//go:build linux

// Command seqd-chaosdriver is the Go client as an application drives it, for
// tests/e2e/test_client_chaos.py (the counterpart of the C++
// tests/e2e/client_chaos_driver.cc, with the same output). N goroutines
// share one seqd.Client and call NextIDs(ctx, key, count) in a loop, each
// call with its own context deadline (--deadline-ms), a random key of
// --keys and a random count 1..--max-count, until stdin reaches end of file
// (the test closes the pipe); the calls in flight then finish and it exits 0.
// With --async, each goroutine makes its calls with GoNextIDs instead (one
// call in flight per goroutine, collected from its done channel).
//
// Every call is one line on stdout (or --out), written whole under a lock:
//
//	T KEY COUNT SEND_NS RECV_NS ok FIRST-LAST[,FIRST-LAST...]
//	T KEY COUNT SEND_NS RECV_NS err CODE MESSAGE...
//
// SEND_NS and RECV_NS are CLOCK_MONOTONIC nanoseconds read with
// clock_gettime(2) (Go's time package keeps its monotonic reading private),
// so they compare with other processes' monotonic times.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	seqd "seqd.dev/go"
)

// monotonicNs is CLOCK_MONOTONIC in nanoseconds.
func monotonicNs() int64 {
	var ts syscall.Timespec
	const clockMonotonic = 1
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic,
		uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		panic("clock_gettime: " + errno.Error())
	}
	return ts.Nano()
}

// appendCallLine appends one call's line (the package comment's format) to
// line: goroutine t asked for count IDs of key, sent at send and answered at
// recv (monotonic ns), with ranges or err.
func appendCallLine(line []byte, t int, key string, count int, send, recv int64,
	ranges []seqd.Range, err error) []byte {
	line = append(line, strconv.Itoa(t)...)
	line = append(line, ' ')
	line = append(line, key...)
	line = append(line, ' ')
	line = strconv.AppendInt(line, int64(count), 10)
	line = append(line, ' ')
	line = strconv.AppendInt(line, send, 10)
	line = append(line, ' ')
	line = strconv.AppendInt(line, recv, 10)
	if err == nil {
		line = append(line, " ok "...)
		for i, r := range ranges {
			if i > 0 {
				line = append(line, ',')
			}
			line = strconv.AppendInt(line, r.First, 10)
			line = append(line, '-')
			line = strconv.AppendInt(line, r.Last, 10)
		}
	} else {
		msg := strings.NewReplacer("\n", " ", "\r", " ").Replace(err.Error())
		line = append(line, " err "...)
		line = append(line, seqd.CodeOf(err).String()...)
		line = append(line, ' ')
		line = append(line, msg...)
	}
	return append(line, '\n')
}

// caller is what each goroutine calls with: the client, the keys and
// counts to draw from, each call's deadline, NextIDs or GoNextIDs, the pause
// between calls and the dice's seed.
type caller struct {
	c        *seqd.Client
	keys     []string
	maxCount int
	deadline time.Duration
	async    bool
	pause    time.Duration
	seed     int64
}

// run is goroutine t's loop until stop: a random key and count, one call,
// its line to emit, the pause.
func (k *caller) run(t int, stop *atomic.Bool, emit func(line []byte)) {
	rng := rand.New(rand.NewSource(k.seed*1000003 + int64(t)))
	done := make(chan *seqd.IDsCall, 1)
	var line []byte
	for !stop.Load() {
		key := k.keys[rng.Intn(len(k.keys))]
		count := 1 + rng.Intn(k.maxCount)
		ctx, cancel := context.WithTimeout(context.Background(), k.deadline)
		send := monotonicNs()
		var ranges []seqd.Range
		var err error
		if k.async {
			call := <-k.c.GoNextIDs(ctx, key, count, done).Done
			ranges, err = call.Ranges, call.Err
		} else {
			ranges, err = k.c.NextIDs(ctx, key, count)
		}
		recv := monotonicNs()
		cancel()
		line = appendCallLine(line[:0], t, key, count, send, recv, ranges, err)
		emit(line)
		if k.pause > 0 {
			time.Sleep(k.pause)
		}
	}
}

// openOut is where the lines go: stdout, or the file at path ("" for
// stdout), with what closes it. It exits 2 if the file cannot be made.
func openOut(path string) (io.Writer, func()) {
	if path == "" {
		return os.Stdout, func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "seqd-chaosdriver:", err)
		os.Exit(2)
	}
	return f, func() { f.Close() }
}

func main() {
	var (
		endpoints    = flag.String("endpoints", "", "H:P,H:P,... (required)")
		keys         = flag.String("keys", "", "K1,K2,... (required)")
		threads      = flag.Int("threads", 4, "goroutines making calls")
		maxCount     = flag.Int("max-count", 10, "counts asked for are 1..N")
		deadlineMs   = flag.Int("deadline-ms", 5000, "each call's context deadline")
		callTimeout  = flag.Int("call-timeout", 1500, "Options.CallTimeout, ms")
		maxAttempts  = flag.Int("max-attempts", 1000, "Options.MaxAttempts")
		backoffInit  = flag.Int("backoff-initial", 20, "Options.BackoffInitial, ms")
		backoffMax   = flag.Int("backoff-max", 250, "Options.BackoffMax, ms")
		routeByShard = flag.Bool("route-by-shard", false, "Options.RouteByShard")
		async        = flag.Bool("async", false, "GoNextIDs instead of NextIDs")
		seed         = flag.Int64("seed", 1, "dice of keys and counts")
		pauseUs      = flag.Int("pause-us", 0, "a goroutine's pause between calls, microseconds")
		outPath      = flag.String("out", "", "write the lines here, not to stdout")
	)
	flag.Parse()
	keyList := strings.Split(*keys, ",")
	if *endpoints == "" || *keys == "" || *threads < 1 || *maxCount < 1 {
		fmt.Fprintln(os.Stderr, "seqd-chaosdriver: --endpoints and --keys are required")
		flag.Usage()
		os.Exit(2)
	}
	c, err := seqd.New(seqd.Options{
		Endpoints:      strings.Split(*endpoints, ","),
		CallTimeout:    time.Duration(*callTimeout) * time.Millisecond,
		MaxAttempts:    *maxAttempts,
		BackoffInitial: time.Duration(*backoffInit) * time.Millisecond,
		BackoffMax:     time.Duration(*backoffMax) * time.Millisecond,
		RouteByShard:   *routeByShard,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "seqd-chaosdriver:", err)
		os.Exit(2)
	}
	defer c.Close()
	out, closeOut := openOut(*outPath)
	defer closeOut()
	w := bufio.NewWriterSize(out, 1<<16)
	var outMu sync.Mutex
	var stop atomic.Bool
	var wg sync.WaitGroup
	k := caller{c: c, keys: keyList, maxCount: *maxCount, async: *async, seed: *seed,
		deadline: time.Duration(*deadlineMs) * time.Millisecond,
		pause:    time.Duration(*pauseUs) * time.Microsecond}
	emit := func(line []byte) {
		outMu.Lock()
		w.Write(line)
		outMu.Unlock()
	}
	for t := 0; t < *threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			k.run(t, &stop, emit)
		}(t)
	}
	io.Copy(io.Discard, os.Stdin) // until the test closes our stdin
	stop.Store(true)
	wg.Wait()
	outMu.Lock()
	w.Flush()
	outMu.Unlock()
}
