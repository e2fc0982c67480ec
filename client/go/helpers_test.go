package seqd

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"seqd.dev/go/internal/testseqd"
)

// newClient is a client of the given endpoints, closed at t's end.
func newClient(t *testing.T, opts Options) *Client {
	t.Helper()
	c, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// startClient starts a seqd (extra flags) and a client of it.
func startClient(t *testing.T, args ...string) (*testseqd.Server, *Client) {
	t.Helper()
	s := testseqd.Start(t, args...)
	return s, newClient(t, Options{Endpoints: []string{s.Addr()}})
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitGoroutines waits until at most n goroutines run, else fails.
func waitGoroutines(t *testing.T, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, want at most %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// parallel runs body(0) .. body(n-1), each on a goroutine of its own, and
// returns once all have returned.
func parallel(n int, body func(g int)) {
	var wg sync.WaitGroup
	wg.Add(n)
	for g := 0; g < n; g++ {
		go func(g int) {
			defer wg.Done()
			body(g)
		}(g)
	}
	wg.Wait()
}
