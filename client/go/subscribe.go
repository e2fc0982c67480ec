package seqd

// Subscriptions that survive connection loss, PUSH_DROPPED and server
// restarts: the contract of the C++ client's subscription keeper
// (client/src/subscription_keeper.h), on a connection of their own.
//
// How: a receiveQueue holds each conversation's last delivered seq.
// Pushes are offered to it; a gap is pulled (PULL_RANGE, through the
// client's pool and retry rules). After every (re)subscribe answer a
// MAX_SEQS tells the queue what exists, so messages sent while no
// subscription was live are pulled even if no push follows. A lost
// connection (or PUSH_DROPPED, or a backlog the handler does not keep up
// with) is re-subscribed on a new connection after a jittered backoff
// (doubling per consecutive failure, at most Options.BackoffMax), without
// end. Seqs the server no longer has (below a conversation's min seq) are
// skipped once three pulls of the range, at least a second apart, came
// back without them (as the C++ keeper does).
//
// Everything runs on one goroutine per Subscription (the loop); the
// connection's reader only appends to its inbox and never blocks.

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

const (
	subTick          = 100 * time.Millisecond
	subPullRetry     = time.Second
	subPullLimit     = 1000
	subMaxHeld       = 1000
	subMissesToSkip  = 3
	subMaxInboxBytes = 64 << 20 // pushes waiting for the loop; past it: re-sync
)

// subPingEvery: how often a live subscription's connection is pinged, in
// nanoseconds (a variable for tests).
var subPingEvery atomic.Int64

// subResyncEvery: how often a live subscription asks MAX_SEQS again, in
// nanoseconds (a variable for tests). In cluster mode a push committed while
// a conversation's owner moves can be lost with no later push to show the
// gap (docs/cluster.md, "Push"); this delivers it within one period.
var subResyncEvery atomic.Int64

func init() {
	subPingEvery.Store(int64(5 * time.Second))
	subResyncEvery.Store(int64(3 * time.Second))
}

// SubscriptionStats count what a Subscription did (Subscription.Stats).
type SubscriptionStats struct {
	Delivered    uint64 // messages passed to the handler
	Resubscribes uint64 // SUBSCRIBEs after the first one that the server accepted
	Lost         uint64 // times pushes stopped (connection lost, PUSH_DROPPED, backlog)
	Pulls        uint64 // PULL_RANGE calls made to fill gaps
}

// Subscription is a live subscription made by Client.Subscribe. Its
// methods are safe for concurrent use.
type Subscription struct {
	c       *Client
	handler func(Message)
	convs   []string
	ctx     context.Context // ended by Close
	cancel  context.CancelFunc

	inboxMu    sync.Mutex
	inbox      []subEvent
	inboxBytes int
	overflow   bool
	maxInbox   int  // subMaxInboxBytes (tests lower it)
	exited     bool // the loop ended: nothing more is handled
	wake       chan struct{}

	done     chan struct{}
	doneOnce sync.Once
	err      error // set before done closes
	closed   atomic.Bool

	delivered, resubscribes, lost, pulls atomic.Uint64

	// Loop state: touched only by the loop goroutine.
	q            *receiveQueue
	cn           *conn
	gen          int // generation of cn: events of older connections are stale
	live         bool
	subscribing  bool
	failures     int
	resubAt      time.Time
	maxDue       bool // live, MAX_SEQS not answered since the (re)subscribe
	maxInFlight  bool
	resyncedAt   time.Time // when MAX_SEQS last answered for the live connection
	pingedAt     time.Time
	pingInFlight bool
	misses       map[string]*subMiss
	next         int // the endpoint to (re)subscribe on next
}

type subMiss struct {
	from int64
	n    int
}

// subEvent is one thing for the loop to handle.
type subEvent struct {
	kind  int
	gen   int
	msg   Message
	err   error
	conv  string
	from  int64
	to    int64
	page  PullPage
	convs []string
	maxes []int64
	cn    *conn
}

// genCurrent in an event: whatever connection is current (tests use it to
// drop a subscription's connection under it).
const genCurrent = -1

const (
	evPush = iota
	evDropped
	evClosed
	evSubscribed
	evMaxSeqs
	evPulled
	evPinged
)

// Subscribe delivers every committed message of convs to handler, once
// each, in seq order per conversation, through lost connections, server
// restarts and PUSH_DROPPED (the C++ client's resubscribe contract).
//
// from[conv] is the last seq the caller already has of conv: delivery
// starts at from[conv]+1 (what exists already is pulled first). A
// conversation not in from starts after its max seq at the time of the
// call (MAX_SEQS), as the C++ client's Subscribe does. A conversation must
// be listed once.
//
// handler runs on one goroutine of the Subscription, one message at a
// time, never concurrently; a slow handler delays the next messages (they
// wait in memory, up to 64 MiB, past which the subscription re-syncs by
// pulling). After Close returns, handler is not called again (a call
// already under way finishes).
//
// Subscribe returns once the server accepted the first SUBSCRIBE (tried
// on the endpoints by the retry rules, within ctx), or with that error.
// Later failures are retried without end, except a re-subscription the
// server refuses for a reason that is not transient (e.g.
// PERMISSION_DENIED): the subscription then ends, Done closes and Err
// says why. In cluster mode any instance serves a subscription (it relays
// the other instances' messages), so subscriptions are not routed.
func (c *Client) Subscribe(ctx context.Context, convs []string, from map[string]int64, handler func(Message)) (*Subscription, error) {
	if handler == nil || len(convs) == 0 {
		return nil, errorf(CodeInvalidArgument, "Subscribe needs conversations and a handler")
	}
	seen := map[string]bool{}
	var unknown []string
	for _, cv := range convs {
		if cv == "" || seen[cv] {
			return nil, errorf(CodeInvalidArgument, "conversation %q empty or listed twice", cv)
		}
		seen[cv] = true
		if f, ok := from[cv]; ok && f < 0 {
			return nil, errorf(CodeInvalidArgument, "from[%q] is negative", cv)
		} else if !ok {
			unknown = append(unknown, cv)
		}
	}
	sctx, cancel := context.WithCancel(context.Background())
	s := &Subscription{c: c, handler: handler, convs: append([]string(nil), convs...), ctx: sctx,
		cancel: cancel, wake: make(chan struct{}, 1), done: make(chan struct{}),
		misses: map[string]*subMiss{}, next: int(c.current.Load()), maxInbox: subMaxInboxBytes}
	s.q = newReceiveQueue(s.deliver, s.requestPull, subPullRetry, subMaxHeld, nil)
	for cv, f := range from {
		if seen[cv] {
			s.q.setLocalSeq(cv, f)
		}
	}
	// The starting point first: every seq above today's max is delivered,
	// whether it comes pushed or pulled.
	if len(unknown) > 0 {
		maxes, err := s.maxSeqs(ctx, unknown)
		if err != nil {
			cancel()
			return nil, err
		}
		for i, cv := range unknown {
			s.q.setLocalSeq(cv, maxes[i])
		}
	}
	var err error
	for attempt := 1; ; attempt++ {
		err = s.subscribeOnce(ctx)
		if err == nil {
			break
		}
		if !CodeOf(err).Retryable() || attempt >= c.opts.MaxAttempts || ctx.Err() != nil {
			cancel()
			if ctx.Err() != nil {
				return nil, ctxError(ctx, "SUBSCRIBE")
			}
			return nil, err
		}
		select {
		case <-time.After(c.jittered(attempt)):
		case <-ctx.Done():
		}
	}
	s.live, s.maxDue = true, true
	go s.run()
	return s, nil
}

// Close ends the subscription and its connection. Safe to call more than
// once, from any goroutine, also from the handler.
func (s *Subscription) Close() error {
	s.closed.Store(true)
	s.finish(nil)
	return nil
}

// Done is closed when the subscription ended: Close, the client's Close,
// or a re-subscription the server refused (see Err).
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Err is why the subscription ended: nil while it runs and after Close, a
// CANCELLED error after the client closed, the server's refusal otherwise.
func (s *Subscription) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Stats are the subscription's counters so far.
func (s *Subscription) Stats() SubscriptionStats {
	return SubscriptionStats{Delivered: s.delivered.Load(), Resubscribes: s.resubscribes.Load(),
		Lost: s.lost.Load(), Pulls: s.pulls.Load()}
}

func (s *Subscription) finish(err error) {
	s.doneOnce.Do(func() {
		s.err = err
		s.closed.Store(true)
		s.cancel()
		close(s.done)
		s.poke()
	})
}

// ------------------------------------------------------------- the inbox

func (s *Subscription) post(ev subEvent) {
	s.inboxMu.Lock()
	if s.exited {
		s.inboxMu.Unlock()
		if ev.cn != nil {
			ev.cn.close()
		}
		return
	}
	s.inbox = append(s.inbox, ev)
	s.inboxMu.Unlock()
	s.poke()
}

func (s *Subscription) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// onPush is the dedicated connection's push handler (its reader
// goroutine): decode and queue, never block. Past subMaxInboxBytes the
// pushes are dropped and the loop re-syncs, as after PUSH_DROPPED.
func (s *Subscription) onPush(gen int) func(op byte, payload []byte) {
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
				s.post(subEvent{kind: evDropped, gen: gen, err: errorf(CodeProtocol, "malformed push")})
				return
			}
			s.inboxMu.Lock()
			if s.overflow || s.inboxBytes+len(payload) > s.maxInbox {
				over := !s.overflow
				s.overflow = true
				s.inboxMu.Unlock()
				if over {
					s.post(subEvent{kind: evDropped, gen: gen,
						err: errorf(CodeResourceExhausted, "handler behind: push backlog full, re-syncing")})
				}
				return
			}
			s.inboxBytes += len(payload)
			s.inbox = append(s.inbox, subEvent{kind: evPush, gen: gen, msg: m})
			s.inboxMu.Unlock()
			s.poke()
		case opPushDropped:
			_, err := parseResponse(payload)
			if err == nil {
				err = errorf(CodeTooLarge, "push dropped")
			}
			s.post(subEvent{kind: evDropped, gen: gen, err: err})
		}
	}
}

// ------------------------------------------------------------- the calls

// subscribeOnce opens a connection on the next endpoint and sends
// SUBSCRIBE for every conversation (at most 1000 per frame). On success
// the connection is the subscription's (the loop is not running yet, or
// this runs on it).
func (s *Subscription) subscribeOnce(ctx context.Context) error {
	ep := s.nextEndpoint()
	s.gen++
	cn, err := s.connectAndSubscribe(ctx, ep, s.gen)
	if err != nil {
		return err
	}
	s.cn = cn
	return nil
}

// nextEndpoint: where the next (re)subscription goes, in the failover
// order (an endpoint marked down is skipped while another is not).
// Loop state: call only from Subscribe or the loop.
func (s *Subscription) nextEndpoint() *endpoint {
	ep := s.c.pickEndpoint(s.next)
	s.next = ep.index + 1
	return ep
}

// connectAndSubscribe opens a dedicated connection to ep whose events
// carry gen, and subscribes every conversation on it. Any goroutine.
func (s *Subscription) connectAndSubscribe(ctx context.Context, ep *endpoint, gen int) (*conn, error) {
	cctx, cancel := context.WithTimeout(ctx, s.c.opts.ConnectTimeout)
	cn, err := s.c.openConn(cctx, ep.addr, s.onPush(gen), func(err error) {
		if err == nil {
			err = errorf(CodeUnavailable, "connection closed")
		}
		s.post(subEvent{kind: evClosed, gen: gen, err: err})
	})
	cancel()
	if err != nil {
		return nil, err
	}
	if err := s.sendSubscribe(ctx, cn); err != nil {
		cn.close()
		return nil, err
	}
	return cn, nil
}

func (s *Subscription) sendSubscribe(ctx context.Context, cn *conn) error {
	for i := 0; i < len(s.convs); i += maxListItems {
		j := i + maxListItems
		if j > len(s.convs) {
			j = len(s.convs)
		}
		var e enc
		e.strList(s.convs[i:j])
		p, err := e.payload()
		if err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, s.c.opts.CallTimeout)
		_, err = cn.call(cctx, opSubscribe, 0, p)
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// maxSeqs is MAX_SEQS of convs, 1000 per call.
func (s *Subscription) maxSeqs(ctx context.Context, convs []string) ([]int64, error) {
	out := make([]int64, 0, len(convs))
	for i := 0; i < len(convs); i += maxListItems {
		j := i + maxListItems
		if j > len(convs) {
			j = len(convs)
		}
		m, err := s.c.MaxSeqs(ctx, convs[i:j])
		if err != nil {
			return nil, err
		}
		if len(m) != j-i {
			return nil, errorf(CodeProtocol, "malformed MAX_SEQS result")
		}
		out = append(out, m...)
	}
	return out, nil
}

// transientSub: a re-subscription failing so is tried again later (the
// C++ keeper's Transient, plus a closed or refused connection).
func transientSub(err error) bool {
	switch CodeOf(err) {
	case CodeTimeout, CodeUnavailable, CodeStoreUnavailable, CodeShuttingDown, CodeWrongOwner,
		CodeInternal, CodeNotServing, CodeCancelled, CodeResourceExhausted, CodeProtocol:
		return true
	}
	return false
}
