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
	var out io.Writer = os.Stdout
	if *outPath != "" {
		f, err := os.Create(*outPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "seqd-chaosdriver:", err)
			os.Exit(2)
		}
		defer f.Close()
		out = f
	}
	w := bufio.NewWriterSize(out, 1<<16)
	var outMu sync.Mutex
	var stop atomic.Bool
	var wg sync.WaitGroup
	deadline := time.Duration(*deadlineMs) * time.Millisecond
	for t := 0; t < *threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(*seed*1000003 + int64(t)))
			done := make(chan *seqd.IDsCall, 1)
			var line []byte
			for !stop.Load() {
				key := keyList[rng.Intn(len(keyList))]
				count := 1 + rng.Intn(*maxCount)
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				send := monotonicNs()
				var ranges []seqd.Range
				var err error
				if *async {
					call := <-c.GoNextIDs(ctx, key, count, done).Done
					ranges, err = call.Ranges, call.Err
				} else {
					ranges, err = c.NextIDs(ctx, key, count)
				}
				recv := monotonicNs()
				cancel()
				line = line[:0]
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
				line = append(line, '\n')
				outMu.Lock()
				w.Write(line)
				outMu.Unlock()
				if *pauseUs > 0 {
					time.Sleep(time.Duration(*pauseUs) * time.Microsecond)
				}
			}
		}(t)
	}
	io.Copy(io.Discard, os.Stdin) // until the test closes our stdin
	stop.Store(true)
	wg.Wait()
	outMu.Lock()
	w.Flush()
	outMu.Unlock()
}
