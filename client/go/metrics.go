package seqd

// Client.Metrics: monotonic counters of what a Client did, for an
// exporter (Prometheus, expvar) to read. Thread safety: the counters are
// atomics or guarded by their own mutex; Metrics may be called from any
// goroutine at any time.

import (
	"sync"
	"sync/atomic"
)

// Metrics is a snapshot of a Client's counters. Every field only grows
// over the client's life (a Prometheus counter each; Errors one counter
// with a "code" label). Two snapshots subtract to what happened between
// them.
type Metrics struct {
	// Calls: calls sent to the servers, each counted once however many
	// attempts it took. NextID answered from the prefetch cache is no
	// call; its refills are.
	Calls uint64
	// Retries: attempts after a call's first (Options.OnRetry's events).
	Retries uint64
	// Failovers: retries that went to another endpoint than the failed
	// attempt (Options.OnFailover's events).
	Failovers uint64
	// Connects: connections made (connected, TLS handshaken, authenticated).
	Connects uint64
	// Reconnects: the Connects that replaced a connection of the pool.
	Reconnects uint64
	// ConnectionsLost: connections that ended by an error (the server
	// closed them, a read or write failed, a stall), not by the client.
	ConnectionsLost uint64
	// Errors: calls that returned an error, by the error's code
	// (CodeOf(err)); absent codes are 0. Includes the caller's own
	// cancellations (CodeCancelled) and deadlines (CodeTimeout).
	Errors map[Code]uint64
}

// counters are a Client's Metrics as they grow.
type counters struct {
	calls, retries, failovers atomic.Uint64
	connects, reconnects      atomic.Uint64
	connsLost                 atomic.Uint64
	errMu                     sync.Mutex
	errs                      map[Code]uint64 // guarded by errMu
}

// failed counts a call that returned err and returns err.
func (k *counters) failed(err error) error {
	code := CodeOf(err)
	k.errMu.Lock()
	if k.errs == nil {
		k.errs = map[Code]uint64{}
	}
	k.errs[code]++
	k.errMu.Unlock()
	return err
}

// Metrics returns a snapshot of the client's counters (see Metrics).
// Cheap enough to call per scrape; the calls themselves pay one atomic
// add each.
func (c *Client) Metrics() Metrics {
	k := &c.counters
	m := Metrics{Calls: k.calls.Load(), Retries: k.retries.Load(), Failovers: k.failovers.Load(),
		Connects: k.connects.Load(), Reconnects: k.reconnects.Load(),
		ConnectionsLost: k.connsLost.Load(), Errors: map[Code]uint64{}}
	k.errMu.Lock()
	for code, n := range k.errs {
		m.Errors[code] = n
	}
	k.errMu.Unlock()
	return m
}
