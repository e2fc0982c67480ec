package seqd

import (
	"sync/atomic"
	"testing"
	"time"
)

// A stopped server's kernel still accepts connections, so a connect proves
// nothing: after a stall, the endpoint is avoided for at least a
// CallTimeout (trying it again costs one while it hangs), and its run of
// failures ends only with an answer. The cluster case: the owner is
// SIGSTOPped, the other instance answers STORE_UNAVAILABLE until the
// takeover, and the retries must not wait on the stopped one again.
func TestStalledEndpointAvoidedForACallTimeout(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	hung := startFake(t, func(op byte, p []byte) (Code, []byte) {
		<-release
		return CodeStoreUnavailable, nil
	})
	var n atomic.Int32
	live := startFake(t, func(op byte, p []byte) (Code, []byte) {
		if n.Add(1) <= 4 {
			return CodeStoreUnavailable, nil
		}
		return CodeOK, oneRangeAnswer(1, 1)
	})
	c := newClient(t, Options{Endpoints: []string{hung.addr(), live.addr()},
		CallTimeout: 500 * time.Millisecond, MaxAttempts: 20, ConnsPerEndpoint: 1,
		BackoffInitial: 5 * time.Millisecond, BackoffMax: 10 * time.Millisecond})
	c.current.Store(0)
	ctx := ctxT(t, 10*time.Second)
	start := time.Now()
	if _, err := c.NextID(ctx, "n_a"); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if got := len(hung.requests()); got != 1 {
		t.Fatalf("the hung endpoint got %d requests, want 1 (retries went back to it)", got)
	}
	if took >= time.Second { // one stall, not two
		t.Fatalf("the call took %v: it waited on the hung endpoint again", took)
	}
	if c.eps[0].failures != 1 || !c.eps[0].isDown() {
		t.Fatalf("hung endpoint: %d failures, down %v; want 1 and down", c.eps[0].failures, c.eps[0].isDown())
	}
	if c.eps[1].failures != 0 {
		t.Fatalf("the answering endpoint has %d failures, want 0", c.eps[1].failures)
	}
}
