package seqd

import (
	"context"
	"runtime"
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
