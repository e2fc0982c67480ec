package seqd

// Asynchronous calls, as net/rpc's Client.Go: one goroutine keeps many
// calls in flight and collects their answers on a channel, with no
// goroutine parked per call. The first attempt of such a call is sent
// from the calling goroutine and answered on the connection's reader; only
// a call that must wait (a dial, a retry, a cancelable context, the
// prefetch cache) continues on a goroutine of its own, as the blocking
// call would.

import "context"

// IDsCall is one NEXT_IDS started by GoNextIDs. Its fields are set before
// it is sent on Done; read them after receiving it.
type IDsCall struct {
	Key    string
	Count  int
	Ranges []Range // the IDs, as NextIDs returns them; nil on error
	Err    error
	Done   chan *IDsCall // receives this call when it completes
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
	if ctx.Done() != nil || (count == 1 && c.opts.Prefetch > 0) || !c.startNextIDs(call) {
		go func() { call.finish(c.NextIDs(ctx, key, count)) }()
	}
	return call
}

// startNextIDs sends call's first attempt on an open connection and
// arranges for its answer to complete it; false when that cannot be done
// without waiting (no open connection, client closed, a bad count), and
// nothing was sent.
func (c *Client) startNextIDs(call *IDsCall) bool {
	if call.Count < 1 || call.Count > 0xFFFFFFFF || c.isClosed() {
		return false
	}
	var e enc
	e.str(call.Key)
	e.u32(uint32(call.Count))
	payload, err := e.payload()
	if err != nil {
		return false
	}
	var ep *endpoint
	var flags uint16
	routed := false
	if c.router != nil && call.Key != "" {
		if addr, noForward, ok := c.router.route(call.Key); ok {
			ep, routed = c.endpointFor(addr), true
			if noForward {
				flags |= flagNoForward
			}
		}
	}
	if ep == nil {
		ep = c.pickEndpoint(int(c.current.Load()))
	}
	cn := ep.hot.Load()
	if cn == nil || !cn.usable() {
		if cn, _ = c.pooledFast(ep); cn == nil {
			return false
		}
	}
	pc := pendingPool.Get().(*pendingCall)
	pc.op, pc.ctx, pc.timeout, pc.deadline = opNextIDs, context.Background(), c.opts.CallTimeout, 0
	pc.onDone = func(r callResult) { c.completeNextIDs(call, ep, routed, r) }
	if _, err := cn.enqueue(pc, flags, payload); err != nil {
		pc.onDone, pc.ctx = nil, nil
		pendingPool.Put(pc)
		return false
	}
	return true
}

// completeNextIDs takes the answer to call's first attempt (on ep, routed
// by the shard map or not): done, or continued as NextIDs continues a
// failed attempt (the router told, then the retry rules on a goroutine).
// Runs on the delivering goroutine: never blocks.
func (c *Client) completeNextIDs(call *IDsCall, ep *endpoint, routed bool, r callResult) {
	if r.err == nil {
		if !routed && ep.index < len(c.opts.Endpoints) {
			c.current.Store(int32(ep.index))
		}
		call.finish(decodeNextIDs(r.payload, call.Count))
		return
	}
	code := CodeOf(r.err)
	if routed {
		switch code {
		case CodeWrongOwner, CodeUnavailable, CodeTimeout, CodeShuttingDown:
			c.router.onWrongOwner()
		}
	}
	if c.opts.MaxAttempts > 1 && (code.Retryable() || (routed && code == CodeWrongOwner)) && !c.isClosed() {
		go func() { call.finish(c.NextIDs(context.Background(), call.Key, call.Count)) }()
		return
	}
	call.finish(nil, r.err)
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
