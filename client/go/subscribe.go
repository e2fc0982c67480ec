package seqd

// Subscriptions to a changing set of conversations that survive connection
// loss, PUSH_DROPPED and server restarts: the contract of the C++ client's
// subscription keeper (client/src/subscription_keeper.h).
//
// How: the subscriptions of one Client share one push connection
// (push_conn.go), which subscribes the union of their conversations and
// hands each push to every subscription holding its conversation. Each
// subscription has a receiveQueue holding each conversation's last
// delivered seq. Pushes are offered to it; a gap is pulled (PULL_RANGE,
// through the client's pool and retry rules). After every SUBSCRIBE that
// answered for a conversation (an Add, a re-subscription) a MAX_SEQS tells
// the queue what exists, so messages sent while no subscription was live
// are pulled even if no push follows. Seqs the server no longer has (below
// a conversation's min seq) are skipped once three pulls of the range, at
// least a second apart, came back without them (as the C++ keeper does).
//
// Each Subscription runs one goroutine (the loop, keeper.go) that owns its
// queue and calls its handler; the push connection's reader only appends
// to its inbox and never blocks.

import (
	"context"
	"sort"
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

// subPingEvery: how often the live push connection is pinged, in
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
	Resubscribes uint64 // re-subscriptions on a new connection that the server accepted
	Lost         uint64 // times pushes stopped (connection lost, PUSH_DROPPED, backlog)
	Pulls        uint64 // PULL_RANGE calls made to fill gaps
}

// Subscription is a live subscription made by Client.Subscribe. Its
// methods are safe for concurrent use.
type Subscription struct {
	c       *Client
	hub     *pushConn
	handler func(Message)
	ctx     context.Context // ended by Close
	cancel  context.CancelFunc

	opMu sync.Mutex // one Add or Remove at a time

	mu sync.Mutex
	// members: conversation -> the epoch of the Add that took it (a
	// membership). cuts: epoch -> the last seq a removed membership still
	// delivers. A message is handed to the handler only while its
	// membership is a member, or removed with a cut at or above its seq.
	members   map[string]uint64
	cuts      map[uint64]int64
	lastEpoch uint64
	// beginHook, when set (tests), runs under mu as a message of a
	// membership (its epoch) is handed to the handler: the moment Remove and
	// Close are ordered against.
	beginHook func(m Message, epoch uint64)

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
	q *receiveQueue
	// runs: per conversation its memberships in Add order, as evAdd and
	// evRemove said; the first owns the queue's state of the conversation,
	// the next starts once it ended (a removed one, at its cut).
	runs        map[string][]*subRun
	maxDue      map[string]bool // MAX_SEQS needed (a SUBSCRIBE answered since the last)
	maxInFlight bool
	live        bool // the push connection is live
	everLive    bool
	resyncedAt  time.Time // when MAX_SEQS last answered
	misses      map[string]*subMiss
}

type subMiss struct {
	from int64
	n    int
}

// subRun is one membership of a conversation in the loop.
type subRun struct {
	epoch uint64
	start int64 // the last seq not to deliver
	cut   int64 // -1 while a member; else the last seq to deliver
}

// subEvent is one thing for the loop to handle.
type subEvent struct {
	kind   int
	msg    Message
	err    error
	conv   string
	from   int64
	to     int64
	page   PullPage
	convs  []string
	starts []int64  // evAdd: each conversation's last seq not to deliver
	cuts   []int64  // evRemove: each conversation's last seq to deliver
	epochs []uint64 // evRemove: each conversation's membership
	epoch  uint64   // evAdd
	all    bool     // evSubscribed: every conversation (a new connection)
	maxes  []int64
}

const (
	evPush       = iota
	evOverflow   // pushes were dropped past the inbox cap: re-sync
	evLost       // the push connection stopped pushing
	evSubscribed // a SUBSCRIBE answered for convs (all: a new connection)
	evAdd
	evRemove
	evMaxSeqs
	evPulled
)

// Subscribe delivers every committed message of convs to handler, once
// each, in seq order per conversation, through lost connections, server
// restarts and PUSH_DROPPED (the C++ client's resubscribe contract); Add
// and Remove change the conversations later.
//
// from[conv] is the last seq the caller already has of conv: delivery
// starts at from[conv]+1 (what exists already is pulled first). A
// conversation not in from starts after its max seq at the time of the
// call (MAX_SEQS), as the C++ client's Subscribe does. A conversation must
// be listed once. convs may be empty (Add them later).
//
// handler runs on one goroutine of the Subscription, one message at a
// time, never concurrently; a slow handler delays the next messages (they
// wait in memory, up to 64 MiB, past which the subscription re-syncs by
// pulling). After Close returns, handler is not called again (a call
// already under way finishes).
//
// Subscribe returns once the server accepted the SUBSCRIBE of convs (on
// the client's push connection, connected by the retry rules within ctx),
// or with that error. Later failures are retried without end, except a
// re-subscription the server refuses for a reason that is not transient
// (e.g. PERMISSION_DENIED): the subscription then ends, Done closes and
// Err says why. In cluster mode any instance serves a subscription (it
// relays the other instances' messages), so subscriptions are not routed.
func (c *Client) Subscribe(ctx context.Context, convs []string, from map[string]int64, handler func(Message)) (*Subscription, error) {
	if ctx == nil {
		return nil, errNilContext("SUBSCRIBE")
	}
	if handler == nil {
		return nil, errorf(CodeInvalidArgument, "Subscribe needs a handler")
	}
	if err := checkSubConvs(convs, from); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.Background())
	s := &Subscription{c: c, hub: c.pushConn(), handler: handler, ctx: sctx, cancel: cancel,
		members: map[string]uint64{}, cuts: map[uint64]int64{}, wake: make(chan struct{}, 1),
		done: make(chan struct{}), maxInbox: subMaxInboxBytes, runs: map[string][]*subRun{},
		maxDue: map[string]bool{},
		misses: map[string]*subMiss{}}
	s.q = newReceiveQueue(s.deliver, s.requestPull, subPullRetry, subMaxHeld, nil)
	if err := s.hub.attach(s); err != nil {
		cancel()
		return nil, err
	}
	go s.run()
	if len(convs) > 0 {
		if err := s.Add(ctx, convs, from); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Add adds conversations to the subscription, with Subscribe's rules for
// convs and from: each conversation's messages after from[conv] (after its
// max seq at the time of the call when not in from) are delivered, once,
// in seq order. Conversations the subscription already has are left as
// they are (their from is ignored).
//
// Add returns once the server accepted their SUBSCRIBE on the client's
// push connection, or with the error (of MAX_SEQS, the SUBSCRIBE, or ctx);
// on an error none of convs was added (and nothing of them was delivered).
// A conversation removed and added again starts once the removed
// membership delivered through its cut (see Remove). A client's subscriptions together
// hold at most the server's --tcp-max-subscriptions distinct
// conversations (10,000 by default): past it Add fails with TOO_LARGE.
// Add and Remove of one subscription run one at a time.
func (s *Subscription) Add(ctx context.Context, convs []string, from map[string]int64) error {
	if ctx == nil {
		return errNilContext("SUBSCRIBE")
	}
	if err := checkSubConvs(convs, from); err != nil {
		return err
	}
	s.opMu.Lock()
	defer s.opMu.Unlock()
	if s.closed.Load() {
		return errorf(CodeCancelled, "subscription closed")
	}
	fresh := s.notMembers(convs)
	if len(fresh) == 0 {
		return nil
	}
	starts, err := s.startsOf(ctx, fresh, from)
	if err != nil {
		return err
	}
	if err := s.hub.subscribe(ctx, s, fresh); err != nil {
		s.hub.release(nil, s, fresh)
		return err
	}
	s.addMembers(fresh, starts)
	return nil
}

// Remove takes conversations out of the subscription at a cut: each one's
// max seq when Remove asks (MAX_SEQS). Every message up to the cut is
// still delivered, once, in order, with the rest (those queued, and those
// still to pull; some may reach the handler after Remove returned); none
// after it. So every message acknowledged before Remove was called is
// delivered, and none sent after it returned. Conversations the
// subscription does not have are ignored; a removed conversation may be
// added again (it starts afresh, once the removed membership delivered
// through its cut). Remove may be called from the handler.
//
// Remove fails, removing nothing, when MAX_SEQS fails (by the retry rules,
// within ctx). When no other subscription of the client holds a
// conversation, Remove then unsubscribes it and waits for the server's
// answer (or the connection's loss) within ctx; an error there means only
// that ctx ended first: the conversations are removed all the same.
func (s *Subscription) Remove(ctx context.Context, convs ...string) error {
	if ctx == nil {
		return errNilContext("UNSUBSCRIBE")
	}
	s.opMu.Lock()
	defer s.opMu.Unlock()
	present, epochs := s.membersOf(convs)
	if len(present) == 0 {
		return nil
	}
	cuts, err := s.maxSeqs(ctx, present)
	if err != nil {
		return err
	}
	s.cutMembers(present, epochs, cuts)
	return s.hub.release(ctx, s, present)
}

// Conversations are the subscription's conversations, sorted.
func (s *Subscription) Conversations() []string {
	s.mu.Lock()
	out := make([]string, 0, len(s.members))
	for cv := range s.members {
		out = append(out, cv)
	}
	s.mu.Unlock()
	sort.Strings(out)
	return out
}

// Close ends the subscription; the client's push connection closes once
// no subscription of it remains. Safe to call more than once, from any
// goroutine, also from the handler.
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
		s.mu.Lock()
		s.err = err
		s.closed.Store(true)
		s.mu.Unlock()
		s.cancel()
		if s.hub != nil {
			s.hub.detach(s)
		}
		close(s.done)
		s.poke()
	})
}

// checkSubConvs: ids not empty, none listed twice, no negative from.
func checkSubConvs(convs []string, from map[string]int64) error {
	seen := map[string]bool{}
	for _, cv := range convs {
		if cv == "" || seen[cv] {
			return errorf(CodeInvalidArgument, "conversation %q empty or listed twice", cv)
		}
		seen[cv] = true
		if f, ok := from[cv]; ok && f < 0 {
			return errorf(CodeInvalidArgument, "from[%q] is negative", cv)
		}
	}
	return nil
}

// ------------------------------------------------------------- membership

func (s *Subscription) notMembers(convs []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, cv := range convs {
		if _, ok := s.members[cv]; !ok {
			out = append(out, cv)
		}
	}
	return out
}

// startsOf: each conversation's last seq not to deliver: from, else its max
// seq now.
func (s *Subscription) startsOf(ctx context.Context, convs []string, from map[string]int64) ([]int64, error) {
	starts := make([]int64, len(convs))
	var unknown []string
	var at []int
	for i, cv := range convs {
		if f, ok := from[cv]; ok {
			starts[i] = f
		} else {
			unknown = append(unknown, cv)
			at = append(at, i)
		}
	}
	if len(unknown) > 0 {
		maxes, err := s.maxSeqs(ctx, unknown)
		if err != nil {
			return nil, err
		}
		for k, i := range at {
			starts[i] = maxes[k]
		}
	}
	return starts, nil
}

// addMembers makes convs members under a new epoch (their SUBSCRIBE was
// answered) and tells the loop where each starts. Until the loop has it,
// pushes of them are dropped; the MAX_SEQS that follows pulls them.
func (s *Subscription) addMembers(convs []string, starts []int64) {
	s.mu.Lock()
	s.lastEpoch++
	epoch := s.lastEpoch
	for _, cv := range convs {
		s.members[cv] = epoch
	}
	s.mu.Unlock()
	s.post(subEvent{kind: evAdd, convs: convs, starts: starts, epoch: epoch})
}

// membersOf: those of convs that are members, with their epochs.
func (s *Subscription) membersOf(convs []string) ([]string, []uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var present []string
	var epochs []uint64
	seen := map[string]bool{}
	for _, cv := range convs {
		if e, ok := s.members[cv]; ok && !seen[cv] {
			seen[cv] = true
			present = append(present, cv)
			epochs = append(epochs, e)
		}
	}
	return present, epochs
}

// cutMembers ends the memberships (convs with their epochs) at cuts: from
// now on only their messages up to the cut are handed to the handler.
// REQUIRES: opMu held since membersOf returned them.
func (s *Subscription) cutMembers(convs []string, epochs []uint64, cuts []int64) {
	s.mu.Lock()
	for i, cv := range convs {
		delete(s.members, cv)
		s.cuts[epochs[i]] = cuts[i]
	}
	s.mu.Unlock()
	s.post(subEvent{kind: evRemove, convs: convs, epochs: epochs, cuts: cuts})
}

// endCut forgets a removed membership that delivered through its cut.
func (s *Subscription) endCut(epoch uint64) {
	s.mu.Lock()
	delete(s.cuts, epoch)
	s.mu.Unlock()
}

// begin reports whether m, of the membership epoch, may be handed to the
// handler now; Remove and Close order against it.
func (s *Subscription) begin(m Message, epoch uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return false
	}
	if s.members[m.ConvID] != epoch {
		if cut, ok := s.cuts[epoch]; !ok || m.Seq > cut {
			return false
		}
	}
	if s.beginHook != nil {
		s.beginHook(m, epoch)
	}
	return true
}

// ------------------------------------------------------------- the inbox

func (s *Subscription) post(ev subEvent) {
	s.inboxMu.Lock()
	if s.exited {
		s.inboxMu.Unlock()
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

// offerPush queues a pushed message (the push connection's reader: never
// blocks). Past maxInbox bytes the pushes are dropped and the loop
// re-syncs by MAX_SEQS and pulls.
func (s *Subscription) offerPush(m Message, size int) {
	s.inboxMu.Lock()
	if s.exited {
		s.inboxMu.Unlock()
		return
	}
	if s.overflow || s.inboxBytes+size > s.maxInbox {
		first := !s.overflow
		s.overflow = true
		if first {
			s.inbox = append(s.inbox, subEvent{kind: evOverflow,
				err: errorf(CodeResourceExhausted, "handler behind: push backlog full, re-syncing")})
		}
		s.inboxMu.Unlock()
		s.poke()
		return
	}
	s.inboxBytes += size
	s.inbox = append(s.inbox, subEvent{kind: evPush, msg: m})
	s.inboxMu.Unlock()
	s.poke()
}

// maxSeqs is MAX_SEQS of convs, 1000 per call.
func (s *Subscription) maxSeqs(ctx context.Context, convs []string) ([]int64, error) {
	out := make([]int64, 0, len(convs))
	for _, chunk := range chunks(convs) {
		m, err := s.c.MaxSeqs(ctx, chunk)
		if err != nil {
			return nil, err
		}
		if len(m) != len(chunk) {
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
