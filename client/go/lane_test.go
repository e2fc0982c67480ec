package seqd

import (
	"context"
	"sync"
	"testing"
	"time"

	"seqd.dev/go/internal/testseqd"
)

// laneChains runs chains of perChain NextIDsFunc calls on lanes[i %
// len(lanes)] and returns every ID they got (failing on an error, a
// duplicate or a chain that does not finish). Each callback records the
// connection its lane held when it ran.
func laneChains(t *testing.T, lanes []*Lane, chains, perChain int, onCall func(lane *Lane, n int)) map[int64]bool {
	t.Helper()
	var mu sync.Mutex
	seen := map[int64]bool{}
	var failure error
	var wg sync.WaitGroup
	for i := 0; i < chains; i++ {
		lane := lanes[i%len(lanes)]
		wg.Add(1)
		n := 0
		var next func([]Range, error)
		next = func(rs []Range, err error) {
			mu.Lock()
			if err != nil && failure == nil {
				failure = err
			}
			for _, r := range rs {
				for v := r.First; v <= r.Last; v++ {
					if seen[v] && failure == nil {
						failure = errorf(CodeProtocol, "ID %d handed out twice", v)
					}
					seen[v] = true
				}
			}
			mu.Unlock()
			n++
			if onCall != nil {
				onCall(lane, n)
			}
			if n == perChain || err != nil {
				wg.Done()
				return
			}
			lane.NextIDsFunc(context.Background(), "n_lane", 1, next)
		}
		lane.NextIDsFunc(context.Background(), "n_lane", 1, next)
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(20 * time.Second):
		t.Fatal("lane chains unfinished after 20 s")
	}
	if failure != nil {
		t.Fatal(failure)
	}
	if len(seen) != chains*perChain {
		t.Fatalf("%d IDs for %d calls", len(seen), chains*perChain)
	}
	return seen
}

// Each lane keeps its calls on one pooled connection, and lanes made one
// after another take different ones: the pool's four connections carry
// four lanes' chains.
func TestLanesKeepTheirCallsOnTheirConnection(t *testing.T) {
	s := testseqd.Start(t)
	c := newClient(t, Options{Endpoints: []string{s.Addr()}, ConnsPerEndpoint: 4})
	for i := 0; i < 4; i++ { // every pooled connection open (each call dials the next slot)
		if _, err := c.pooled(ctxT(t, 5*time.Second), c.listed[0]); err != nil {
			t.Fatal(err)
		}
	}
	lanes := []*Lane{c.Lane(), c.Lane(), c.Lane(), c.Lane()}
	var mu sync.Mutex
	held := map[*Lane]map[*conn]bool{}
	laneChains(t, lanes, 32, 100, func(lane *Lane, _ int) {
		mu.Lock()
		defer mu.Unlock()
		if held[lane] == nil {
			held[lane] = map[*conn]bool{}
		}
		held[lane][lane.cn.Load()] = true
	})
	used := map[*conn]bool{}
	for _, lane := range lanes {
		if len(held[lane]) != 1 {
			t.Fatalf("a lane's calls went over %d connections", len(held[lane]))
		}
		for cn := range held[lane] {
			used[cn] = true
		}
	}
	if len(used) != 4 {
		t.Fatalf("4 lanes used %d connections", len(used))
	}
	if n := pendingCalls(c); n != 0 {
		t.Fatalf("%d calls still pending", n)
	}
}

// A lane whose connection closes under its chains moves to another: every
// call completes (the ones in flight retried), no ID twice.
func TestLaneMovesWhenItsConnectionCloses(t *testing.T) {
	s := testseqd.Start(t)
	c := newClient(t, Options{Endpoints: []string{s.Addr()}, ConnsPerEndpoint: 2})
	if err := c.Ping(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	lane := c.Lane()
	var once sync.Once
	var closed *conn
	laneChains(t, []*Lane{lane}, 16, 200, func(l *Lane, n int) {
		if n == 50 {
			once.Do(func() {
				closed = l.cn.Load()
				go closed.fail(errorf(CodeUnavailable, "closed by the test"), false)
			})
		}
	})
	if closed == nil || lane.cn.Load() == closed {
		t.Fatal("the lane still holds the connection that closed")
	}
}
