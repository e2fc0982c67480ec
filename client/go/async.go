package seqd

// Asynchronous calls: NextIDsFunc (a callback, as the C++ client's
// AsyncClient::NextIds) and GoNextIDs (a channel, as net/rpc's Client.Go).
// One goroutine keeps many calls in flight with no goroutine parked per
// call. The first attempt of such a call is sent from the calling
// goroutine and answered on the connection's reader; only a call that
// must wait (a dial, a retry, a cancelable context, the prefetch cache)
// continues on a goroutine of its own, as the blocking call would.
//
// The cheap path: the first attempt's frame is written straight
// into the connection's write buffer, its state rides in the pooled
// pendingCall (no closure, no payload buffer), and its answer is decoded
// from the reader's buffer without a copy. A callback that starts the next
// call puts its frame in the same write as the rest of the batch it was
// answered in: the reader writes once per batch it reads, as seqbench does.

import (
	"context"
	"sync/atomic"
)

// IDsCall is one NEXT_IDS started by GoNextIDs. Its fields are set before
// it is sent on Done; read them after receiving it.
type IDsCall struct {
	Key    string
	Count  int
	Ranges []Range // the IDs, as NextIDs returns them; nil on error
	Err    error
	Done   chan *IDsCall // receives this call when it completes
}

// NextIDsFunc starts NextIDs(ctx, key, count) and returns at once; done
// runs exactly once with the results NextIDs would return (same retries,
// same errors).
//
// done runs on the connection's reader goroutine when the first attempt
// is answered, or on a goroutine of its own otherwise (a dial, a retry, a
// context that can end before its answer, a prefetched single ID). It must
// not block: the reader hands out the other answers of its batch after it.
// It may start further calls (NextIDsFunc, GoNextIDs): their frames leave
// in one write with the rest of the batch. The ranges are the caller's.
func (c *Client) NextIDsFunc(ctx context.Context, key string, count int, done func([]Range, error)) {
	if ctx == nil {
		go done(nil, errNilContext("NextIDsFunc"))
		return
	}
	if ctx.Done() != nil || (count == 1 && c.opts.Prefetch > 0) || !c.startNextIDs(nil, key, count, done, false) {
		go func() { done(c.NextIDs(ctx, key, count)) }()
	}
}

// Lane keeps the asynchronous calls made through it on one pooled
// connection of each endpoint (while it stays open), as seqbench keeps
// each of its pipelines on one connection. A chain of NextIDsFunc
// callbacks on a lane then reads and writes its batches on its own
// connection; without lanes, the calls callbacks start go to the
// connection that delivered last while it has room (endpoint.hotConn), so
// chains gather on one connection (larger batches, fewer writes: the
// cheaper choice while one connection, one server I/O thread, suffices).
// Lanes are cheap (one pointer); use as many as the pool has connections
// (Options.ConnsPerEndpoint) for an even spread. Safe for concurrent use.
type Lane struct {
	c  *Client
	cn atomic.Pointer[conn]
}

// Lane returns a new lane; its first call picks the next pooled
// connection in turn.
func (c *Client) Lane() *Lane { return &Lane{c: c} }

// NextIDsFunc is Client.NextIDsFunc on the lane's connection.
func (l *Lane) NextIDsFunc(ctx context.Context, key string, count int, done func([]Range, error)) {
	c := l.c
	if ctx == nil {
		go done(nil, errNilContext("NextIDsFunc"))
		return
	}
	if ctx.Done() != nil || (count == 1 && c.opts.Prefetch > 0) || !c.startNextIDs(l, key, count, done, false) {
		go func() { done(c.NextIDs(ctx, key, count)) }()
	}
}

// GoNextIDs starts NextIDs(ctx, key, count) and returns at once; the call
// is sent on done when it completes (with the same results, retries and
// errors as NextIDs). done may be shared by many calls and must have
// room for every call in flight on it (a full done is never dropped: the
// send then waits on a goroutine of its own); nil makes a new channel of
// one. An unbuffered done panics, as net/rpc's does.
//
// Contexts that can end before their answer (ctx.Done() != nil) and
// prefetched single IDs take the blocking path on a goroutine per call;
// a context.Background() call costs no goroutine.
func (c *Client) GoNextIDs(ctx context.Context, key string, count int, done chan *IDsCall) *IDsCall {
	if done == nil {
		done = make(chan *IDsCall, 1)
	} else if cap(done) == 0 {
		panic("seqd: GoNextIDs: done channel is unbuffered")
	}
	call := &IDsCall{Key: key, Count: count, Done: done}
	if ctx == nil {
		call.finish(nil, errNilContext("GoNextIDs"))
		return call
	}
	if ctx.Done() != nil || (count == 1 && c.opts.Prefetch > 0) || !c.startNextIDs(nil, key, count, call.finish, true) {
		go func() { call.finish(c.NextIDs(ctx, key, count)) }()
	}
	return call
}

// asyncIDs is an asynchronous NEXT_IDS's first attempt, carried in its
// pendingCall (so it costs no allocation of its own).
type asyncIDs struct {
	c      *Client
	key    string
	count  int
	ep     *endpoint
	routed bool // sent where the shard map said
	done   func([]Range, error)
	// wakes: done wakes another goroutine, which may then call again
	// (GoNextIDs' channel): the reader waits for that call's frame before
	// writing its batch (endBatch). A callback's next frame is queued
	// before done returns.
	wakes bool
	// start: the monoNow time the attempt was entered (for the call's
	// retry budget); set on delivery.
	start int64
}

// firstTarget is where the first attempt of a call on key goes without
// waiting: an open connection (lane's, when lane is set; else the one
// that delivered last while it has room, ep.hotConn; else the pool's
// next), its endpoint, the
// frame's flags and whether the router chose it. cn nil: none is open.
func (c *Client) firstTarget(lane *Lane, key string) (cn *conn, ep *endpoint, flags uint16, routed bool) {
	if c.router != nil && key != "" {
		if addr, noForward, ok := c.router.route(key); ok {
			ep, routed = c.endpointFor(addr), true
			if noForward {
				flags |= flagNoForward
			}
		}
	}
	if ep == nil {
		ep = c.pickEndpoint(int(c.current.Load()))
	}
	if lane != nil {
		if cn = lane.cn.Load(); cn == nil || cn.ep != ep || !cn.usable() {
			if cn, _ = c.pooledFast(ep); cn != nil {
				lane.cn.Store(cn)
			}
		}
	} else if cn = ep.hotConn(); cn == nil {
		cn, _ = c.pooledFast(ep)
	}
	if cn != nil && c.router != nil && key != "" {
		c.router.sent(routed)
	}
	return cn, ep, flags, routed
}

// startNextIDs sends the first attempt of NEXT_IDS(key, count) on an open
// connection (firstTarget) and arranges for its answer to reach done
// (asyncIDs.complete); false when that cannot be done without waiting (no
// open connection, client closed, a bad count or key), and nothing was
// sent.
func (c *Client) startNextIDs(lane *Lane, key string, count int, done func([]Range, error), wakes bool) bool {
	if count < 1 || count > 0xFFFFFFFF || len(key) > 0xFFFF || c.isClosed() {
		return false
	}
	cn, ep, flags, routed := c.firstTarget(lane, key)
	if cn == nil {
		return false
	}
	pc := pendingPool.Get().(*pendingCall)
	pc.op, pc.ctx, pc.timeout, pc.deadline = opNextIDs, context.Background(), c.opts.CallTimeout, 0
	pc.async = asyncIDs{c: c, key: key, count: count, ep: ep, routed: routed, done: done, wakes: wakes}
	if _, err := cn.enqueueKeyCount(pc, flags, key, uint32(count)); err != nil {
		pc.async, pc.ctx = asyncIDs{}, nil
		pendingPool.Put(pc)
		return false
	}
	c.counters.calls.Add(1)
	return true
}

// complete takes the answer to the first attempt (payload: the OK result,
// valid only during the call; or err): done, or continued as NextIDs
// continues a failed attempt (the retry rules, on a goroutine). Runs on
// the delivering goroutine: never blocks.
func (a *asyncIDs) complete(payload []byte, err error) {
	c := a.c
	if err == nil {
		if !a.routed && a.ep.index < len(c.opts.Endpoints) {
			c.current.Store(int32(a.ep.index))
		}
		a.done(decodeNextIDs(payload, a.count))
		return
	}
	prior := c.afterFirst(&failedAttempt{ep: a.ep, routed: a.routed, err: err, start: a.start})
	if prior == nil {
		a.done(nil, c.counters.failed(err))
		return
	}
	key, count, done := a.key, a.count, a.done
	go func() { done(c.nextIDsAfter(context.Background(), key, count, prior)) }()
}

// afterFirst: a first attempt made outside invoke (f) failed. It tells
// the router, and returns f when the call goes on (a retryable error, or
// a routed WRONG_OWNER, with attempts left and the client open), nil when
// f.err is the call's error.
func (c *Client) afterFirst(f *failedAttempt) *failedAttempt {
	code := CodeOf(f.err)
	if f.routed {
		switch code {
		case CodeWrongOwner, CodeUnavailable, CodeTimeout, CodeShuttingDown:
			c.router.onWrongOwner()
		}
	}
	if c.opts.MaxAttempts > 1 && (code.Retryable() || (f.routed && code == CodeWrongOwner)) && !c.isClosed() {
		return f
	}
	return nil
}

// finish sets call's results and sends it on Done (from a goroutine of its
// own if Done is full, so a deliverer never blocks).
func (call *IDsCall) finish(ranges []Range, err error) {
	call.Ranges, call.Err = ranges, err
	select {
	case call.Done <- call:
	default:
		go func() { call.Done <- call }()
	}
}
