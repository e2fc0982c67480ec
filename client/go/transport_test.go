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
