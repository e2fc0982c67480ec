package seqd

// pushConn: the push connection a Client's subscriptions share
// (subscribe.go). One dedicated connection at a time, outside the pool,
// on the endpoint the failover order gives, carries the SUBSCRIBE of every
// conversation any of the client's subscriptions holds; each push goes to
// every subscription that holds its conversation.
//
// The server's set follows a count per conversation: the first
// subscription to take a conversation subscribes it, the last to let it
// go unsubscribes it. SUBSCRIBE and UNSUBSCRIBE frames leave in the order
// those decisions were taken (one queue, sent one frame at a time by the
// worker), so the server's set is the union of the subscriptions' sets
// whenever the queue is empty.
//
// A lost connection (closed, PUSH_DROPPED, a PING or a frame of the queue
// failing on the transport) is replaced after a jittered backoff
// (BackoffInitial doubled per consecutive failure, at most BackoffMax),
// on the next endpoint. The new connection subscribes everything again
// before the queue goes on: one frame per subscription (and per Add not
// yet answered), so a refusal ends only what it concerns. Every
// subscription is told (evLost, then evSubscribed), so it pulls the gap.
//
// Thread safety: every method may be called from any goroutine; mu guards
// the state. One worker goroutine (run) connects and sends the frames; it
// runs while a subscription is attached.

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// hubMaxParallel: frames of a full re-subscription in flight at once.
const hubMaxParallel = 16

type pushConnKey struct{}

type pushConn struct {
	c    *Client
	wake chan struct{}
	// opened counts the connections opened (tests).
	opened atomic.Uint64

	mu   sync.Mutex
	subs map[*Subscription]*hubSub
	// refs: conversation -> the subscriptions holding it (held: subscribed,
	// or its Add under way). Its keys are what the server must push.
	refs     map[string]map[*Subscription]struct{}
	queue    []*hubOp // frames for cn, in decision order
	cn       *conn    // nil while there is no connection
	gen      int      // generation of cn: events of older ones are stale
	live     bool     // cn subscribed everything held when it opened
	running  bool     // the worker runs
	failures int      // consecutive failed connections
	next     int      // the endpoint to connect to next
	resubAt  time.Time
	pingedAt time.Time
}

// hubSub is one attached subscription's part of the shared state.
type hubSub struct {
	held    map[string]bool // conversations it holds in refs
	acked   map[string]bool // of those, the ones a SUBSCRIBE answered for
	pending []*hubOp        // its SUBSCRIBEs not answered yet (Add under way)
}

// hubOp is one SUBSCRIBE (of an Add) or UNSUBSCRIBE.
type hubOp struct {
	s        *Subscription
	unsub    bool
	convs    []string
	done     chan error // the outcome, sent once by finishLocked
	finished bool
	// connFailures: connections that failed while this SUBSCRIBE waited;
	// past Options.MaxAttempts it fails with the last error.
	connFailures int
}

// pushConn is the client's shared push connection state, made at first use.
func (c *Client) pushConn() *pushConn {
	if h, ok := c.extras.Load(pushConnKey{}); ok {
		return h.(*pushConn)
	}
	h, _ := c.extras.LoadOrStore(pushConnKey{}, &pushConn{c: c, wake: make(chan struct{}, 1),
		subs: map[*Subscription]*hubSub{}, refs: map[string]map[*Subscription]struct{}{}})
	return h.(*pushConn)
}

func (h *pushConn) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// attach makes s one of the connection's subscriptions (starting the
// worker if need be). CANCELLED once the client is closed.
func (h *pushConn) attach(s *Subscription) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.c.isClosed() {
		return errorf(CodeCancelled, "client closed")
	}
	h.subs[s] = &hubSub{held: map[string]bool{}, acked: map[string]bool{}}
	if !h.running {
		h.running = true
		h.next = int(h.c.current.Load())
		go h.run()
	}
	return nil
}

// detach forgets s (Close, or the subscription ended): its conversations
// are let go, its Adds under way fail with CANCELLED. Idempotent.
func (h *pushConn) detach(s *Subscription) {
	h.mu.Lock()
	hs := h.subs[s]
	if hs == nil {
		h.mu.Unlock()
		return
	}
	for _, op := range append([]*hubOp(nil), hs.pending...) {
		h.finishLocked(op, errorf(CodeCancelled, "subscription closed"))
	}
	held := make([]string, 0, len(hs.held))
	for cv := range hs.held {
		held = append(held, cv)
	}
	h.releaseLocked(s, held)
	delete(h.subs, s)
	h.mu.Unlock()
	h.poke()
}

// subscribe holds convs for s and returns once a SUBSCRIBE of them was
// answered on a live connection, or with its refusal, ctx's end, or the
// last connection error after MaxAttempts failed connections. On an error
// the caller releases convs (release).
func (h *pushConn) subscribe(ctx context.Context, s *Subscription, convs []string) error {
	h.mu.Lock()
	hs := h.subs[s]
	if hs == nil {
		h.mu.Unlock()
		return errorf(CodeCancelled, "subscription closed")
	}
	for _, cv := range convs {
		h.holdLocked(s, hs, cv)
	}
	op := &hubOp{s: s, convs: convs, done: make(chan error, 1)}
	hs.pending = append(hs.pending, op)
	if h.cn != nil {
		h.queue = append(h.queue, op)
	} // else the next connection's full SUBSCRIBE carries it
	h.mu.Unlock()
	h.poke()
	select {
	case err := <-op.done:
		return err
	case <-ctx.Done():
		h.mu.Lock()
		h.finishLocked(op, ctxError(ctx, "SUBSCRIBE"))
		h.mu.Unlock()
		return <-op.done // the first outcome: an answer may have won the race
	}
}

// release lets s's convs go. Conversations no subscription holds any more
// are unsubscribed on the connection, if there is one; with a ctx, release
// waits for that answer (or the connection's loss) until ctx ends.
func (h *pushConn) release(ctx context.Context, s *Subscription, convs []string) error {
	h.mu.Lock()
	op := h.releaseLocked(s, convs)
	h.mu.Unlock()
	h.poke()
	if op == nil || ctx == nil {
		return nil
	}
	select {
	case <-op.done:
		return nil
	case <-ctx.Done():
		return ctxError(ctx, "UNSUBSCRIBE")
	}
}

func (h *pushConn) holdLocked(s *Subscription, hs *hubSub, cv string) {
	hs.held[cv] = true
	set := h.refs[cv]
	if set == nil {
		set = map[*Subscription]struct{}{}
		h.refs[cv] = set
	}
	set[s] = struct{}{}
}

// releaseLocked drops s's hold on convs and queues the UNSUBSCRIBE of those
// no longer held (nil when none is needed).
func (h *pushConn) releaseLocked(s *Subscription, convs []string) *hubOp {
	hs := h.subs[s]
	var gone []string
	for _, cv := range convs {
		if hs != nil {
			delete(hs.held, cv)
			delete(hs.acked, cv)
		}
		set := h.refs[cv]
		if _, ok := set[s]; !ok {
			continue
		}
		delete(set, s)
		if len(set) == 0 {
			delete(h.refs, cv)
			gone = append(gone, cv)
		}
	}
	if len(gone) == 0 || h.cn == nil {
		return nil // without a connection the server holds nothing
	}
	op := &hubOp{unsub: true, convs: gone, done: make(chan error, 1)}
	h.queue = append(h.queue, op)
	return op
}

// finishLocked ends op with err (once). A SUBSCRIBE answered OK marks its
// conversations acknowledged for its subscription.
func (h *pushConn) finishLocked(op *hubOp, err error) {
	if op.finished {
		return
	}
	op.finished = true
	if !op.unsub {
		if hs := h.subs[op.s]; hs != nil {
			for i, p := range hs.pending {
				if p == op {
					hs.pending = append(hs.pending[:i], hs.pending[i+1:]...)
					break
				}
			}
			if err == nil {
				for _, cv := range op.convs {
					if hs.held[cv] {
						hs.acked[cv] = true
					}
				}
			}
		}
	}
	op.done <- err
}

// lose: the connection of generation gen stopped pushing. It is closed,
// its queued UNSUBSCRIBEs are done (the server forgets a closed
// connection's subscriptions), its SUBSCRIBEs wait for the next
// connection, every subscription is told, and a new connection is due
// after a backoff.
func (h *pushConn) lose(gen int, err error) {
	h.mu.Lock()
	h.loseLocked(gen, err)
	h.mu.Unlock()
	h.poke()
}

func (h *pushConn) loseLocked(gen int, err error) {
	if gen != h.gen || h.cn == nil {
		return
	}
	h.cn.close()
	h.cn, h.live = nil, false
	for _, op := range h.queue {
		if op.unsub {
			h.finishLocked(op, nil)
		}
	}
	h.queue = nil
	now := time.Now()
	if !h.resubAt.After(now) {
		h.resubAt = now.Add(h.backoff())
	}
	for s := range h.subs {
		s.post(subEvent{kind: evLost, err: err})
	}
}

// onPush is the connection's push handler (its reader goroutine): decode
// once, hand to every subscription holding the conversation, never block.
func (h *pushConn) onPush(gen int) func(op byte, payload []byte) {
	return func(op byte, payload []byte) {
		switch op {
		case opPushMessage:
			d := dec{b: payload}
			if d.u16() != 0 {
				return
			}
			conv := d.str()
			m := d.message(conv)
			if d.done("PUSH_MESSAGE") != nil {
				h.lose(gen, errorf(CodeProtocol, "malformed push"))
				return
			}
			h.mu.Lock()
			first := true
			for s := range h.refs[conv] {
				if !first {
					m.Payload = append([]byte(nil), m.Payload...) // each handler its own
				}
				first = false
				s.offerPush(m, len(payload))
			}
			h.mu.Unlock()
		case opPushDropped:
			_, err := parseResponse(payload)
			if err == nil {
				err = errorf(CodeTooLarge, "push dropped")
			}
			h.lose(gen, err)
		}
	}
}

// backoff: BackoffInitial doubled per consecutive failure, at most
// BackoffMax, jittered to [1/2, 1]. REQUIRES: mu held.
func (h *pushConn) backoff() time.Duration {
	return jitterHalf(h.c.opts.BackoffInitial, h.c.opts.BackoffMax, h.failures)
}

// heldConvs: the conversations held, sorted (tests).
func (h *pushConn) heldConvs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.refs))
	for cv := range h.refs {
		out = append(out, cv)
	}
	sort.Strings(out)
	return out
}
