package seqd

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"seqd.dev/go/internal/testseqd"
)

// collect receives n calls from done (within limit) and checks each one's
// IDs: the count asked, never an ID twice across all of them.
func collect(t *testing.T, done chan *IDsCall, n int, seen map[int64]bool, limit time.Duration) []*IDsCall {
	t.Helper()
	var calls []*IDsCall
	timeout := time.After(limit)
	for len(calls) < n {
		select {
		case call := <-done:
			calls = append(calls, call)
			if call.Err != nil {
				continue
			}
			markUnique(t, call.Key+": ", call.Ranges, call.Count, seen)
		case <-timeout:
			t.Fatalf("%d of %d calls completed within %v", len(calls), n, limit)
		}
	}
	return calls
}

// markUnique checks that ranges hold count IDs in all and none already in
// seen, then adds them to seen; what prefixes the message of a wrong count.
func markUnique(t *testing.T, what string, ranges []Range, count int, seen map[int64]bool) {
	t.Helper()
	var total int64
	for _, r := range ranges {
		total += r.Len()
		for v := r.First; v <= r.Last; v++ {
			if seen[v] {
				t.Fatalf("ID %d handed out twice", v)
			}
			seen[v] = true
		}
	}
	if total != int64(count) {
		t.Fatalf("%s%d IDs for a count of %d", what, total, count)
	}
}

func TestGoNextIDsKeepsManyCallsInFlight(t *testing.T) {
	_, c := startClient(t)
	ctx := context.Background()
	if _, err := c.NextID(ctxT(t, 5*time.Second), "n_async"); err != nil {
		t.Fatal(err)
	}
	done := make(chan *IDsCall, 64)
	seen := map[int64]bool{}
	for i := 0; i < 64; i++ {
		c.GoNextIDs(ctx, "n_async", 1+i%3, done)
	}
	calls := 64
	for i := 0; i < 2000; i++ {
		call := collect(t, done, 1, seen, 10*time.Second)[0]
		if call.Err != nil {
			t.Fatalf("call %d: %v", i, call.Err)
		}
		c.GoNextIDs(ctx, "n_async", call.Count, done)
		calls++
	}
	for _, call := range collect(t, done, 64, seen, 10*time.Second) {
		if call.Err != nil {
			t.Fatal(call.Err)
		}
	}
	checkAllBelowALaterCall(t, c, "n_async", seen)
}

// checkAllBelowALaterCall: a blocking call of key made after all the
// calls that got `seen` gets a greater ID than any of them, and no call is
// left pending on c.
func checkAllBelowALaterCall(t *testing.T, c *Client, key string, seen map[int64]bool) {
	t.Helper()
	id, err := c.NextID(ctxT(t, 5*time.Second), key)
	if err != nil {
		t.Fatal(err)
	}
	for v := range seen {
		if v >= id {
			t.Fatalf("ID %d from an earlier call is not below the later %d", v, id)
		}
	}
	if n := pendingCalls(c); n != 0 {
		t.Fatalf("%d calls still pending", n)
	}
}

func TestGoNextIDsErrorsAndDoneChannels(t *testing.T) {
	_, c := startClient(t)
	ctx := context.Background()
	// A bad count and a bad key: the error arrives on done, not retried.
	call := <-c.GoNextIDs(ctx, "n_async_err", 0, nil).Done
	if !errors.Is(call.Err, ErrInvalidArgument) || call.Ranges != nil {
		t.Fatalf("count 0: %v %v", call.Ranges, call.Err)
	}
	call = <-c.GoNextIDs(ctx, strings.Repeat("k", 300), 1, nil).Done
	if !errors.Is(call.Err, ErrInvalidArgument) {
		t.Fatalf("a 300-byte key: %v", call.Err)
	}
	// A done channel with room for one, twenty calls: none is lost and the
	// connection's reader is never held up by the full channel.
	done := make(chan *IDsCall, 1)
	for i := 0; i < 20; i++ {
		c.GoNextIDs(ctx, "n_async_err", 1, done)
	}
	time.Sleep(200 * time.Millisecond) // every answer came while done was full
	if _, err := c.NextID(ctxT(t, 2*time.Second), "n_async_err"); err != nil {
		t.Fatalf("a blocking call beside the full channel: %v", err)
	}
	for _, call := range collect(t, done, 20, map[int64]bool{}, 5*time.Second) {
		if call.Err != nil {
			t.Fatal(call.Err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("an unbuffered done channel did not panic")
		}
	}()
	c.GoNextIDs(ctx, "n_async_err", 1, make(chan *IDsCall))
}

// A first attempt that times out on a paused server continues by the retry
// rules: every call completes with fresh IDs once the server resumes.
func TestGoNextIDsRetriesThroughAPause(t *testing.T) {
	base := runtime.NumGoroutine()
	s := testseqd.Start(t)
	c := newClient(t, Options{Endpoints: []string{s.Addr()}, CallTimeout: 300 * time.Millisecond,
		MaxAttempts: 10, BackoffInitial: 50 * time.Millisecond, BackoffMax: 200 * time.Millisecond})
	if _, err := c.NextID(ctxT(t, 5*time.Second), "n_async_pause"); err != nil {
		t.Fatal(err)
	}
	s.Pause()
	done := make(chan *IDsCall, 50)
	for i := 0; i < 50; i++ {
		c.GoNextIDs(context.Background(), "n_async_pause", 2, done)
	}
	time.Sleep(700 * time.Millisecond) // past the first attempts' timeout
	s.Resume()
	for _, call := range collect(t, done, 50, map[int64]bool{}, 15*time.Second) {
		if call.Err != nil {
			t.Fatalf("a call failed across a pause it could retry past: %v", call.Err)
		}
	}
	c.Close()
	waitGoroutines(t, base+2, 5*time.Second)
}

// A cancelable context ends its calls at the cancel; Close ends the rest:
// each completes with CANCELLED.
func TestGoNextIDsEndedByCancelAndClose(t *testing.T) {
	s := testseqd.Start(t)
	c := newClient(t, Options{Endpoints: []string{s.Addr()}, CallTimeout: 30 * time.Second})
	if _, err := c.NextID(ctxT(t, 5*time.Second), "n_async_close"); err != nil {
		t.Fatal(err)
	}
	s.Pause()
	defer s.Resume()
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan *IDsCall, 5)
	for i := 0; i < 5; i++ {
		c.GoNextIDs(ctx, "n_async_close", 1, cancelled)
	}
	time.Sleep(100 * time.Millisecond)
	cancel()
	for _, call := range collect(t, cancelled, 5, map[int64]bool{}, time.Second) {
		if !errors.Is(call.Err, ErrCancelled) || !errors.Is(call.Err, context.Canceled) {
			t.Fatalf("after cancel: %v, want CANCELLED", call.Err)
		}
	}
	done := make(chan *IDsCall, 10)
	for i := 0; i < 10; i++ {
		c.GoNextIDs(context.Background(), "n_async_close", 1, done)
	}
	time.Sleep(100 * time.Millisecond)
	c.Close()
	for _, call := range collect(t, done, 10, map[int64]bool{}, 5*time.Second) {
		if !errors.Is(call.Err, ErrCancelled) {
			t.Fatalf("after Close: %v, want CANCELLED", call.Err)
		}
	}
}

// Chains of NextIDsFunc calls, each callback starting the next (seqbench's
// shape): every ID unique, the count asked, every callback on time, and a
// blocking call after them all above every ID they got.
func TestNextIDsFuncChainsCallsFromCallbacks(t *testing.T) {
	_, c := startClient(t)
	ctx := context.Background()
	const chains, perChain = 32, 200
	type result struct {
		ranges []Range
		count  int
		err    error
	}
	results := make(chan result, chains*perChain)
	var wg sync.WaitGroup
	for i := 0; i < chains; i++ {
		wg.Add(1)
		left, count := perChain, 1+i%3
		var next func([]Range, error)
		next = func(rs []Range, err error) {
			results <- result{rs, count, err}
			if left--; left == 0 || err != nil {
				wg.Done()
				return
			}
			c.NextIDsFunc(ctx, "n_func", count, next)
		}
		c.NextIDsFunc(ctx, "n_func", count, next)
	}
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(20 * time.Second):
		t.Fatalf("chains unfinished after 20 s (%d results)", len(results))
	}
	close(results)
	seen := map[int64]bool{}
	n := 0
	for r := range results {
		n++
		if r.err != nil {
			t.Fatalf("call %d: %v", n, r.err)
		}
		markUnique(t, "", r.ranges, r.count, seen)
	}
	if n != chains*perChain {
		t.Fatalf("%d callbacks ran, want %d", n, chains*perChain)
	}
	checkAllBelowALaterCall(t, c, "n_func", seen)
}

// NextIDsFunc's errors reach the callback once; a paused server's first
// attempts time out and are retried; Close ends what is left, CANCELLED.
func TestNextIDsFuncErrorsRetriesAndClose(t *testing.T) {
	s := testseqd.Start(t)
	c := newClient(t, Options{Endpoints: []string{s.Addr()}, CallTimeout: 300 * time.Millisecond,
		MaxAttempts: 10, BackoffInitial: 50 * time.Millisecond, BackoffMax: 200 * time.Millisecond})
	ctx := context.Background()
	if _, err := c.NextID(ctxT(t, 5*time.Second), "n_func_pause"); err != nil {
		t.Fatal(err)
	}
	type result struct {
		ranges []Range
		err    error
	}
	got := make(chan result, 100)
	record := func(rs []Range, err error) { got <- result{rs, err} }
	c.NextIDsFunc(ctx, "n_func_pause", 0, record)
	c.NextIDsFunc(ctx, strings.Repeat("k", 300), 1, record)
	for i := 0; i < 2; i++ {
		if r := <-got; !errors.Is(r.err, ErrInvalidArgument) || r.ranges != nil {
			t.Fatalf("a bad count or key: %v %v", r.ranges, r.err)
		}
	}
	s.Pause()
	for i := 0; i < 40; i++ {
		c.NextIDsFunc(ctx, "n_func_pause", 2, record)
	}
	time.Sleep(700 * time.Millisecond) // past the first attempts' timeout
	s.Resume()
	seen := map[int64]bool{}
	for i := 0; i < 40; i++ {
		select {
		case r := <-got:
			if r.err != nil {
				t.Fatalf("a call failed across a pause it could retry past: %v", r.err)
			}
			for _, rg := range r.ranges {
				for v := rg.First; v <= rg.Last; v++ {
					if seen[v] {
						t.Fatalf("ID %d handed out twice", v)
					}
					seen[v] = true
				}
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("%d of 40 calls completed", i)
		}
	}
	if len(seen) != 80 {
		t.Fatalf("%d IDs for 40 calls of 2", len(seen))
	}
	s.Pause()
	defer s.Resume()
	for i := 0; i < 10; i++ {
		c.NextIDsFunc(ctx, "n_func_pause", 1, record)
	}
	time.Sleep(100 * time.Millisecond)
	c.Close()
	for i := 0; i < 10; i++ {
		select {
		case r := <-got:
			if !errors.Is(r.err, ErrCancelled) {
				t.Fatalf("after Close: %v, want CANCELLED", r.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of 10 callbacks ran after Close", i)
		}
	}
	select {
	case r := <-got:
		t.Fatalf("a callback ran twice: %v %v", r.ranges, r.err)
	case <-time.After(200 * time.Millisecond):
	}
}
