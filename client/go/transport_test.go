package seqd

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seqd.dev/go/internal/testseqd"
)

// Pool calls follow the connection delivering a batch (endpoint.hot), but
// never a dedicated one (openConn: subscriptions), however busy it is.
func TestHotConnectionIsAlwaysPooled(t *testing.T) {
	s := testseqd.Start(t)
	ctx := ctxT(t, 20*time.Second)
	c := newClient(t, Options{Endpoints: []string{s.Addr()}, ConnsPerEndpoint: 2})
	dcn, err := c.openConn(ctx, s.Addr(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dcn.close()
	ep := c.endpointFor(s.Addr())
	var stop atomic.Bool
	var wrong, pooledHot atomic.Int64
	var wg sync.WaitGroup
	run := func(f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if err := f(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := 0; i < 16; i++ {
		run(func() error { _, err := dcn.call(ctx, opPing, 0, []byte("p")); return err })
		run(func() error { _, err := c.NextID(ctx, "n_hot"); return err })
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			switch h := ep.hot.Load(); {
			case h == dcn:
				wrong.Add(1)
			case h != nil:
				pooledHot.Add(1)
			}
		}
	}()
	time.Sleep(time.Second)
	stop.Store(true)
	wg.Wait()
	if wrong.Load() != 0 {
		t.Fatalf("the dedicated connection was the hot one %d times", wrong.Load())
	}
	if pooledHot.Load() == 0 {
		t.Fatal("no pooled connection was ever seen delivering a batch")
	}
}

// fillPool opens every connection of c's pool to addr (one Ping per slot,
// in turn) and returns them with their endpoint.
func fillPool(t *testing.T, c *Client, addr string) (*endpoint, []*conn) {
	t.Helper()
	ep := c.endpointFor(addr)
	for range ep.slots {
		if err := c.Ping(ctxT(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	var conns []*conn
	for _, s := range ep.slots {
		if s.cn == nil {
			t.Fatal("a pool slot is still empty")
		}
		conns = append(conns, s.cn)
	}
	if !ep.full.Load() {
		t.Fatal("the pool is open but not marked full")
	}
	return ep, conns
}

// Blocking calls in a closed loop gather on the connection that delivered
// last (one batch, one write per round trip), not one batch per pooled
// connection.
func TestBlockingCallsGatherOnOneConnection(t *testing.T) {
	s := testseqd.Start(t)
	c := newClient(t, Options{Endpoints: []string{s.Addr()}, ConnsPerEndpoint: 4})
	_, conns := fillPool(t, c, s.Addr())
	before := make([]uint64, len(conns))
	for i, cn := range conns {
		before[i] = cn.reads.Load()
	}
	ctx := ctxT(t, 20*time.Second)
	parallel(16, func(int) {
		for i := 0; i < 300; i++ {
			if _, err := c.NextID(ctx, "n_gather"); err != nil {
				t.Error(err)
				return
			}
		}
	})
	var total, busiest uint64
	for i, cn := range conns {
		n := cn.reads.Load() - before[i]
		total += n
		if n > busiest {
			busiest = n
		}
	}
	if total != 16*300 || busiest < total*8/10 {
		t.Fatalf("answers per connection: busiest %d of %d (want all %d, 80%% on one)", busiest, total, 16*300)
	}
}

// Beyond hotMaxInFlight calls in flight on the hot connection, new calls
// spread over the pool; every call still completes, no ID twice.
func TestCallsSpreadWhenHotConnectionIsFull(t *testing.T) {
	s := testseqd.Start(t)
	c := newClient(t, Options{Endpoints: []string{s.Addr()}, ConnsPerEndpoint: 4, CallTimeout: 10 * time.Second})
	_, conns := fillPool(t, c, s.Addr())
	if _, err := c.NextID(ctxT(t, 5*time.Second), "n_spread"); err != nil {
		t.Fatal(err)
	}
	s.Pause()
	n := 2 * hotMaxInFlight
	ids := make([]int64, n)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		ctx := ctxT(t, 20*time.Second)
		parallel(n, func(g int) {
			var err error
			if ids[g], err = c.NextID(ctx, "n_spread"); err != nil {
				t.Error(err)
			}
		})
	}()
	inFlight := func() (sum, used int) {
		for _, cn := range conns {
			if k := int(cn.inFlight.Load()); k > 0 {
				sum, used = sum+k, used+1
			}
		}
		return sum, used
	}
	deadline := time.Now().Add(10 * time.Second)
	for sum, _ := inFlight(); sum < n && time.Now().Before(deadline); sum, _ = inFlight() {
		time.Sleep(5 * time.Millisecond)
	}
	sum, used := inFlight()
	s.Resume()
	<-finished
	if sum != n || used < 2 {
		t.Fatalf("%d calls in flight over %d connections, want %d over at least 2", sum, used, n)
	}
	seen := map[int64]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("ID %d handed out twice", id)
		}
		seen[id] = true
	}
}
