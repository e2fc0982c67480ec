package seqd

// The transport: endpoints and their failover state, a small pool of
// pipelined connections per endpoint (one connection: conn.go), and the
// seams other parts of the package build on.
//
// SEAMS (for cluster routing and the subscription keeper, in this package):
//
//   - c.call(ctx, endpoint, op, flags, payload) (result, err): ONE attempt
//     of a request on a pooled connection to `endpoint` ("host:port"; any
//     address, also one not in Options.Endpoints: it is added to the known
//     endpoints). The result is the OK answer's bytes after the status; a
//     non-OK answer is an *Error with the server's code and message. No
//     retry, no failover; ctx bounds the attempt (connect included).
//
//   - c.callKeyed(ctx, key, op, payload): the full call path for a keyed
//     op: asks c.router (if set) for the key's owner, sends there with
//     NO_FORWARD if the router says so, and on failure falls back to the
//     failover order with retries and backoff (client.go, invoke). An
//     empty key means "not routed" (c.callAny does that).
//
//   - router (below): set c.router before the first call (New does it when
//     Options.RouteByShard and a router constructor is registered in
//     newRouter). route(key) is asked for each attempt of a keyed call until
//     a routed attempt fails;
//     onWrongOwner() is called when a routed attempt failed (WRONG_OWNER,
//     or its endpoint was unreachable / timed out / shutting down): refresh
//     the map (rate-limit inside). The failed attempt is retried unrouted
//     (without NO_FORWARD, so any instance forwards it).
//
//   - c.openConn(ctx, endpoint, onPush, onClose) (*conn, error): a
//     DEDICATED connection outside the pool (connected, TLS handshaken,
//     authenticated), for subscriptions: every PUSH frame it receives goes
//     to onPush(op, payload) (payload starts with the u16 status, as on the
//     wire), called from the connection's reader goroutine, in arrival
//     order, never concurrently; do not block in it. onClose(err) runs once
//     when the connection ends (err says why; nil after cn.close() or
//     Client.Close()), after
//     the last onPush. Make calls on it with cn.call(ctx, op, flags,
//     payload); close it with cn.close().
//
//   - pooled connections may also get pushes (a server never pushes without
//     SUBSCRIBE, so normally none): they go to c.poolPush if set.
//
// Thread safety: every method here may be called from any goroutine.

import (
	"context"
	"math/rand"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// router is cluster routing's seam (see above). Implementations must be
// safe for concurrent use and must not block (answer from what they have).
type router interface {
	// route: the endpoint ("host:port") that owns key, whether to send it
	// with NO_FORWARD, and ok = false when there is no answer (no map yet,
	// no live owner): the call then goes the ordinary way.
	// It counts nothing: see sent.
	route(key string) (endpoint string, noForward bool, ok bool)
	// sent: an attempt of a keyed call went out on route's answer (routed:
	// route said ok), counted once in Stats.
	sent(routed bool)
	// onWrongOwner: a routed call found the map wrong or its owner
	// unreachable; fetch the map again (in the background).
	onWrongOwner()
}

// newRouter, when not nil, makes the router for Options.RouteByShard
// (registered by the routing file's init). Without it RouteByShard is
// accepted and calls go the ordinary way.
var newRouter func(c *Client) router

// endpoint is one server address with its pool and failover state.
type endpoint struct {
	addr  string
	index int // position in c.eps

	mu       sync.Mutex
	slots    []*slot
	failures int    // consecutive connection failures; guarded by mu
	next     uint32 // round-robin over slots; guarded by mu

	// downUntil: avoid ep until this monoNow time (failover backoff); 0:
	// not down. Atomic: read on every call without a lock or a clock read.
	downUntil atomic.Int64

	// hot: the pooled connection whose reader began a batch of answers
	// last, nil if none. New calls go there while it has room (hotConn):
	// the calls its answers woke, in a closed loop, queue their frames
	// while it delivers and leave in the one write at the batch's end, so
	// the calls in flight gather on one connection in batches as large as
	// they are many, instead of one smaller batch (and one write, one read,
	// one wake-up of a thread) per pooled connection.
	hot atomic.Pointer[conn]
	// full: every slot of the pool held an open connection when one was
	// last dialed, and none has closed since. Until then hotConn is
	// nil, so calls go round robin and fill the pool (pooled dials).
	full atomic.Bool
}

// hotMaxInFlight: calls in flight on ep.hot beyond which new calls go
// round robin over the pool instead (pooledFast), so that heavy load
// still spreads over the pool's connections (and the server's threads).
// Batches of this size already amortize a read and a write well.
const hotMaxInFlight = 128

// hotConn is ep.hot if it takes new calls (the pool is full, and it is
// open with fewer than hotMaxInFlight calls in flight), else nil.
// Lock-free.
func (ep *endpoint) hotConn() *conn {
	if !ep.full.Load() {
		return nil
	}
	cn := ep.hot.Load()
	if cn == nil || !cn.usable() || cn.inFlight.Load() >= hotMaxInFlight {
		return nil
	}
	return cn
}

// slot holds one pooled connection, or the dial making it.
type slot struct {
	cn      *conn
	dialing chan struct{} // closed when the dial ends
	err     error         // the last dial's error (read after dialing closes)
	used    bool          // a dial succeeded before (the next one is a reconnect)
}

// conn is one TCP (or TLS) connection with its pipelined calls.
type conn struct {
	c      *Client
	ep     *endpoint
	pooled bool // one of ep's pool (not openConn's)
	nc     net.Conn
	// raw: nc's file descriptor for the reader's non-blocking writes
	// (writeNow); nil for TLS, whose writes go through the writer.
	raw syscall.RawConn

	onPush  func(op byte, payload []byte)
	onClose func(err error)

	mu   sync.Mutex
	wbuf []byte // frames waiting for the writer goroutine
	// kicked: the writer was woken (or is writing) and writes wbuf until
	// it is empty; callers then only append.
	kicked bool
	// delivering: the reader is handing out a batch of answers; the calls
	// they wake append their next frames and the reader wakes the writer
	// once the batch is done (one write per batch read, as the C++ client).
	delivering bool
	batchIn    int           // frames queued while delivering (endBatch waits for them)
	batchAt    int64         // monoNow when the batch being delivered began
	spare      []byte        // the buffer the last write used, for reuse
	kick       chan struct{} // buffered 1: wakes the writer goroutine
	pending    callTable     // the calls in flight
	inFlight   atomic.Int32  // pending.len(), for hotConn without mu
	closed     bool
	closeErr   error
	draining   bool        // SHUTTING_DOWN seen: no new calls
	unusable   atomic.Bool // closed || draining, for usable() without mu

	timer   *time.Timer // deadline timer (expire), made at the first timeout
	timerAt int64       // monoNow time it fires, 0: not armed

	reads atomic.Uint64 // frames read so far (stall detection)
	done  chan struct{}
}

type pendingCall struct {
	op       byte
	ch       chan callResult // buffered 1; exactly one result per use
	reads    uint64          // cn.reads when sent
	ctx      context.Context // the caller's (stall detection)
	timeout  time.Duration   // 0: none
	deadline int64           // monoNow time the call times out, 0: never
	// async, when its done is set: an asynchronous NEXT_IDS's first
	// attempt (async.go), answered through async.complete instead of ch on
	// the goroutine that delivers (the reader, the deadline timer or a
	// closer).
	async asyncIDs
}

// deliver hands pc its one result: to the caller waiting on ch, or to its
// asynchronous completion. payload is valid only during the call for an
// asynchronous pc (it may be the reader's buffer); a waiting caller gets
// its own copy. An asynchronous pc goes back to the pool here (its caller
// never touches it again).
func (pc *pendingCall) deliver(payload []byte, err error) {
	if pc.async.done == nil {
		if payload != nil {
			payload = append(make([]byte, 0, len(payload)), payload...)
		}
		pc.ch <- callResult{payload: payload, err: err}
		return
	}
	a := pc.async
	a.start = pc.deadline - int64(pc.timeout)
	pc.async, pc.ctx = asyncIDs{}, nil
	pendingPool.Put(pc)
	a.complete(payload, err)
}

type callResult struct {
	payload []byte
	err     error
}

// ---------------------------------------------------------------- endpoints

// endpointFor is the known endpoint named addr, added if new.
func (c *Client) endpointFor(addr string) *endpoint {
	c.epMu.RLock()
	ep := c.epByAddr[addr]
	c.epMu.RUnlock()
	if ep != nil {
		return ep
	}
	c.epMu.Lock()
	defer c.epMu.Unlock()
	if ep = c.epByAddr[addr]; ep == nil {
		ep = &endpoint{addr: addr, index: len(c.eps), slots: make([]*slot, c.opts.ConnsPerEndpoint)}
		for i := range ep.slots {
			ep.slots[i] = &slot{}
		}
		c.eps = append(c.eps, ep)
		c.epByAddr[addr] = ep
	}
	return ep
}

// pickEndpoint: the first endpoint at or after start (in the failover
// order) not marked down; if all are, the one whose backoff ends first.
// Only Options.Endpoints take part (not owners the router added).
func (c *Client) pickEndpoint(start int) *endpoint {
	eps := c.listed
	n := len(eps)
	var now int64 // read once, only when some endpoint is down
	best := eps[start%n]
	bestUntil := best.downUntil.Load()
	for i := 0; i < n; i++ {
		ep := eps[(start+i)%n]
		until := ep.downUntil.Load()
		if until == 0 {
			return ep
		}
		if now == 0 {
			now = monoNow()
		}
		if until <= now {
			return ep
		}
		if until < bestUntil {
			best, bestUntil = ep, until
		}
	}
	return best
}

// isDown: ep is in its failover backoff.
func (ep *endpoint) isDown() bool {
	until := ep.downUntil.Load()
	return until != 0 && until > monoNow()
}

// markDown avoids ep for a backoff that doubles per consecutive failure.
func (c *Client) markDown(ep *endpoint) { c.markDownFor(ep, 0) }

// markDownFor is markDown for at least atLeast. Consecutive failures end
// at the first answer on a new connection (readLoop), not at a connect: a
// stopped server's kernel still accepts connections.
func (c *Client) markDownFor(ep *endpoint, atLeast time.Duration) {
	ep.mu.Lock()
	ep.failures++
	d := c.backoff(ep.failures)
	if d < atLeast {
		d = atLeast
	}
	ep.downUntil.Store(monoNow() + int64(d))
	ep.mu.Unlock()
	n := int32(len(c.opts.Endpoints))
	if ep.index < int(n) {
		c.current.CompareAndSwap(int32(ep.index), (int32(ep.index)+1)%n)
	}
}

// backoff after `failures` consecutive failures: BackoffInitial doubled per
// failure, at most BackoffMax.
func (c *Client) backoff(failures int) time.Duration {
	d := c.opts.BackoffInitial
	for i := 1; i < failures && d < c.opts.BackoffMax; i++ {
		d *= 2
	}
	if d > c.opts.BackoffMax {
		d = c.opts.BackoffMax
	}
	return d
}

// jittered: uniform in [b/2, b] for b = backoff(attempt).
func (c *Client) jittered(attempt int) time.Duration {
	b := c.backoff(attempt)
	if b <= 1 {
		return b
	}
	return b/2 + time.Duration(rand.Int63n(int64(b/2)+1))
}

// ---------------------------------------------------------------- the pool

// pooled is an open connection of ep's pool (round robin over its slots),
// dialing one if needed. Concurrent callers wait for one dial per slot.
func (c *Client) pooled(ctx context.Context, ep *endpoint) (*conn, error) {
	ep.mu.Lock()
	s := ep.slots[ep.next%uint32(len(ep.slots))]
	ep.next++
	for {
		if s.cn != nil && s.cn.usable() {
			cn := s.cn
			ep.mu.Unlock()
			return cn, nil
		}
		if s.dialing == nil {
			break
		}
		ch := s.dialing
		ep.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctxError(ctx, "connect to "+ep.addr)
		}
		ep.mu.Lock()
		if s.dialing == nil && (s.cn == nil || !s.cn.usable()) && s.err != nil {
			// The dial we waited for failed. Its own context's end is no
			// answer for us: dial again; any other failure is.
			if code := CodeOf(s.err); code != CodeCancelled && code != CodeTimeout {
				err := s.err
				ep.mu.Unlock()
				return nil, err
			}
			break
		}
	}
	ch := make(chan struct{})
	s.dialing, s.cn, s.err = ch, nil, nil
	ep.mu.Unlock()

	cn, err := c.dial(ctx, ep, true, c.poolPush, nil)

	ep.mu.Lock()
	s.dialing, s.cn, s.err = nil, cn, err
	again := s.used
	s.used = s.used || err == nil
	ep.full.Store(ep.allOpenLocked())
	ep.mu.Unlock()
	close(ch)
	if err == nil {
		c.noteConnected(ep, again)
	}
	return cn, err
}

// allOpenLocked: every slot of ep's pool holds an open connection.
// REQUIRES: ep.mu held.
func (ep *endpoint) allOpenLocked() bool {
	for _, s := range ep.slots {
		if s.cn == nil || !s.cn.usable() {
			return false
		}
	}
	return true
}

// call is ONE attempt of op on a pooled connection to endpoint (see SEAMS).
func (c *Client) call(ctx context.Context, endpoint string, op byte, flags uint16, payload []byte) ([]byte, error) {
	return c.callEP(ctx, c.endpointFor(endpoint), 0, op, flags, payload)
}

// callEP is one attempt on ep's pool: bounded by ctx and, when timeout > 0,
// by timeout (a TIMEOUT error, retryable).
func (c *Client) callEP(ctx context.Context, ep *endpoint, timeout time.Duration, op byte, flags uint16, payload []byte) ([]byte, error) {
	if c.isClosed() {
		return nil, errorf(CodeCancelled, "client closed")
	}
	cn := ep.hotConn()
	var err error
	if cn == nil {
		cn, err = c.pooledFast(ep)
	}
	if cn == nil {
		dctx, cancel := ctx, context.CancelFunc(func() {})
		if timeout > 0 {
			dctx, cancel = context.WithTimeout(ctx, timeout)
		}
		cn, err = c.pooled(dctx, ep)
		cancel()
		if err != nil {
			if ctx.Err() == nil && CodeOf(err) == CodeTimeout {
				err = errorf(CodeTimeout, "connect to %s: no answer within %v", ep.addr, timeout)
			}
			return nil, err
		}
	}
	return cn.callTimeout(ctx, timeout, op, flags, payload)
}

// pooledFast is the open connection of ep's next slot, nil if it has none
// (then pooled dials).
func (c *Client) pooledFast(ep *endpoint) (*conn, error) {
	ep.mu.Lock()
	s := ep.slots[ep.next%uint32(len(ep.slots))]
	cn := s.cn
	if cn != nil && cn.usable() {
		ep.next++
		ep.mu.Unlock()
		return cn, nil
	}
	ep.mu.Unlock()
	return nil, nil
}

// openConn is a dedicated connection for subscriptions (see SEAMS).
func (c *Client) openConn(ctx context.Context, endpoint string, onPush func(op byte, payload []byte), onClose func(err error)) (*conn, error) {
	if c.isClosed() {
		return nil, errorf(CodeCancelled, "client closed")
	}
	ep := c.endpointFor(endpoint)
	cn, err := c.dial(ctx, ep, false, onPush, onClose)
	if err == nil {
		c.noteConnected(ep, false)
	}
	return cn, err
}
