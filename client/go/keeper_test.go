package seqd

import (
	"context"
	"net"
	"reflect"
	"testing"
	"time"
)

// A Subscription driven by synthetic events (no network, no loop
// goroutine): the loop's handling of pushes, conversations added and
// removed, the push connection lost and subscribed again, MAX_SEQS answers
// and pulls.
func newTestSubscription(t *testing.T, convs ...string) (*Subscription, *[]int64, *[][2]int64) {
	c := newClient(t, Options{Endpoints: []string{"127.0.0.1:1"}})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var got []int64
	var asks [][2]int64
	s := &Subscription{c: c, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1),
		done: make(chan struct{}), misses: map[string]*subMiss{}, members: map[string]uint64{},
		cuts: map[uint64]int64{}, runs: map[string][]*subRun{}, maxDue: map[string]bool{},
		maxInbox: subMaxInboxBytes,
		handler:  func(m Message) { got = append(got, m.Seq) }}
	s.q = newReceiveQueue(s.deliver, func(conv string, from, to int64) { asks = append(asks, [2]int64{from, to}) },
		subPullRetry, subMaxHeld, nil)
	for _, cv := range convs {
		s.addMembers([]string{cv}, []int64{0})
	}
	handleInbox(s)
	return s, &got, &asks
}

// handleInbox handles what s's inbox holds (the loop's work, on the test's
// goroutine).
func handleInbox(s *Subscription) {
	s.inboxMu.Lock()
	evs := s.inbox
	s.inbox = nil
	s.inboxMu.Unlock()
	for _, ev := range evs {
		s.handle(ev)
	}
}

func TestKeeperLostConnectionThenMaxSeqsPullsWhatWasMissed(t *testing.T) {
	s, got, asks := newTestSubscription(t, "a")
	s.q.setLocalSeq("a", 10)
	s.handle(subEvent{kind: evSubscribed, convs: []string{"a"}})
	s.maxInFlight = false // its MAX_SEQS went out; its answer is not awaited here
	s.handle(subEvent{kind: evPush, msg: msg("a", 11)})
	s.handle(subEvent{kind: evPush, msg: msg("a", 11)}) // pushed twice
	s.handle(subEvent{kind: evLost, err: errorf(CodeUnavailable, "gone")})
	if s.live || s.Stats().Lost != 1 {
		t.Fatalf("not lost: live %v stats %+v", s.live, s.Stats())
	}
	// Subscribed again on a new connection; meanwhile 12..14 were sent. The
	// MAX_SEQS answer asks for them; a push of 15 is held until they come.
	s.handle(subEvent{kind: evSubscribed, all: true})
	if !s.live || !s.maxInFlight || s.Stats().Resubscribes != 1 {
		t.Fatalf("live %v maxInFlight %v stats %+v", s.live, s.maxInFlight, s.Stats())
	}
	s.handle(subEvent{kind: evPush, msg: msg("a", 15)})
	s.handle(subEvent{kind: evMaxSeqs, convs: []string{"a"}, maxes: []int64{15}})
	if len(s.maxDue) != 0 || s.maxInFlight {
		t.Fatalf("MAX_SEQS left due: %v in flight %v", s.maxDue, s.maxInFlight)
	}
	if len(*asks) != 1 || (*asks)[0] != [2]int64{12, 14} {
		t.Fatalf("asks %v, want 12..14", *asks)
	}
	s.handle(subEvent{kind: evPulled, conv: "a", from: 12, to: 14,
		page: PullPage{Messages: msgs("a", 12, 13, 14), IsEnd: true}})
	if want := seqs(11, 15); !reflect.DeepEqual(*got, want) {
		t.Fatalf("delivered %v, want %v", *got, want)
	}
}

// A push lost with nothing after it (a cluster owner move): the periodic
// MAX_SEQS names it and it is pulled.
func TestKeeperResyncPullsALostLastPush(t *testing.T) {
	s, got, asks := newTestSubscription(t, "a")
	s.q.setLocalSeq("a", 10)
	s.handle(subEvent{kind: evSubscribed, all: true})
	s.handle(subEvent{kind: evMaxSeqs, convs: []string{"a"}, maxes: []int64{10}})
	s.handle(subEvent{kind: evPush, msg: msg("a", 11)}) // 12 is never pushed
	now := s.resyncedAt
	s.maybeResync(now.Add(time.Duration(subResyncEvery.Load()) - time.Millisecond))
	if len(s.maxDue) != 0 {
		t.Fatal("MAX_SEQS due before resync_every")
	}
	s.maybeResync(now.Add(time.Duration(subResyncEvery.Load())))
	if !s.maxDue["a"] {
		t.Fatal("MAX_SEQS not due after resync_every")
	}
	s.checkMaxSeqs()
	s.handle(subEvent{kind: evMaxSeqs, convs: []string{"a"}, maxes: []int64{12}})
	if len(*asks) != 1 || (*asks)[0] != [2]int64{12, 12} {
		t.Fatalf("asks %v, want 12..12", *asks)
	}
	s.handle(subEvent{kind: evPulled, conv: "a", from: 12, to: 12,
		page: PullPage{Messages: msgs("a", 12), IsEnd: true}})
	if want := seqs(11, 12); !reflect.DeepEqual(*got, want) {
		t.Fatalf("delivered %v, want %v", *got, want)
	}
}

// A SUBSCRIBE answered while a MAX_SEQS is in flight makes another due
// (the one in flight may predate it); a failed MAX_SEQS is due again, and
// the next tick sends what is due.
func TestKeeperMaxSeqsRedone(t *testing.T) {
	s, _, _ := newTestSubscription(t, "a", "b")
	s.live, s.maxInFlight = true, true
	s.handle(subEvent{kind: evSubscribed, all: true})
	if !s.maxDue["a"] || !s.maxDue["b"] {
		t.Fatalf("due %v, want a and b", s.maxDue)
	}
	s.handle(subEvent{kind: evMaxSeqs, convs: []string{"a"}, err: errorf(CodeTimeout, "slow")})
	if s.maxInFlight || !s.maxDue["a"] || !s.maxDue["b"] {
		t.Fatalf("after the failure: in flight %v, due %v", s.maxInFlight, s.maxDue)
	}
	s.tick()
	if !s.maxInFlight || len(s.maxDue) != 0 {
		t.Fatalf("after a tick: in flight %v, due %v", s.maxInFlight, s.maxDue)
	}
}

// Seqs the server no longer has (below a min seq) are skipped after three
// pulls that came back without them; fewer misses skip nothing.
func TestKeeperSkipsSeqsGoneAfterThreeMisses(t *testing.T) {
	s, got, _ := newTestSubscription(t, "a")
	s.handle(subEvent{kind: evPush, msg: msg("a", 6)})
	page := PullPage{Messages: msgs("a", 4, 5), IsEnd: true} // 1..3 trimmed
	for i := 0; i < 2; i++ {
		s.handle(subEvent{kind: evPulled, conv: "a", from: 1, to: 5, page: page})
		if len(*got) != 0 {
			t.Fatalf("delivered %v after %d misses", *got, i+1)
		}
	}
	s.handle(subEvent{kind: evPulled, conv: "a", from: 1, to: 5, page: page})
	if want := []int64{4, 5, 6}; !reflect.DeepEqual(*got, want) {
		t.Fatalf("delivered %v, want %v", *got, want)
	}
}

// Added conversations start where Add said. A removed one delivers
// through its cut (what is queued, then what is pulled), nothing after; added
// again before that, it starts afresh once the removed membership is done.
func TestKeeperAddRemoveAtACutAndAddAgain(t *testing.T) {
	s, got, asks := newTestSubscription(t)
	s.addMembers([]string{"a", "b"}, []int64{4, 0})
	handleInbox(s)
	s.handle(subEvent{kind: evPush, msg: msg("a", 4)}) // at the start: not delivered
	s.handle(subEvent{kind: evPush, msg: msg("a", 5)})
	s.handle(subEvent{kind: evPush, msg: msg("b", 1)})
	if want := []int64{5, 1}; !reflect.DeepEqual(*got, want) {
		t.Fatalf("delivered %v, want %v", *got, want)
	}
	// Removed at cut 6 while 6 waits in the inbox: 6 is delivered, 7 not.
	s.post(subEvent{kind: evPush, msg: msg("a", 6)})
	present, epochs := s.membersOf([]string{"a", "zz", "a"})
	if !reflect.DeepEqual(present, []string{"a"}) {
		t.Fatalf("membersOf: %v", present)
	}
	s.cutMembers(present, epochs, []int64{6})
	handleInbox(s)
	s.handle(subEvent{kind: evPush, msg: msg("a", 7)})
	if want := []int64{5, 1, 6}; !reflect.DeepEqual(*got, want) {
		t.Fatalf("after the cut delivered %v, want %v", *got, want)
	}
	if s.head("a") != nil || len(s.cuts) != 0 {
		t.Fatalf("a removed membership delivered through its cut is still there: %v %v", s.head("a"), s.cuts)
	}
	// b removed at cut 3 with 2..3 still to pull, added again from 9 before
	// they came: b's new pushes wait until the old membership is done.
	present, epochs = s.membersOf([]string{"b"})
	s.cutMembers(present, epochs, []int64{3})
	s.addMembers([]string{"b"}, []int64{9})
	handleInbox(s)
	s.handle(subEvent{kind: evPush, msg: msg("b", 10)})
	if last := (*asks)[len(*asks)-1]; last != [2]int64{2, 3} {
		t.Fatalf("asks %v, want 2..3 last", *asks)
	}
	s.handle(subEvent{kind: evPulled, conv: "b", from: 2, to: 3, page: PullPage{Messages: msgs("b", 2, 3), IsEnd: true}})
	s.handle(subEvent{kind: evPush, msg: msg("b", 10)})
	if want := []int64{5, 1, 6, 2, 3, 10}; !reflect.DeepEqual(*got, want) {
		t.Fatalf("delivered %v, want %v", *got, want)
	}
	if cv := s.Conversations(); !reflect.DeepEqual(cv, []string{"b"}) {
		t.Fatalf("Conversations %v", cv)
	}
}

// After Close the handler is not called.
func TestKeeperNoDeliveryAfterClose(t *testing.T) {
	s, got, _ := newTestSubscription(t, "a")
	s.handle(subEvent{kind: evPush, msg: msg("a", 1)})
	s.Close()
	s.handle(subEvent{kind: evPush, msg: msg("a", 2)})
	if !reflect.DeepEqual(*got, []int64{1}) {
		t.Fatalf("delivered %v", *got)
	}
	select {
	case <-s.Done():
	case <-time.After(time.Second):
		t.Fatal("Done not closed")
	}
	if s.Err() != nil {
		t.Fatalf("Err after Close: %v", s.Err())
	}
}

// pushFrame is a PUSH_MESSAGE payload (status, conv, message).
func pushFrame(conv string, seq int64) []byte {
	var e enc
	e.u16(0)
	e.str(conv)
	e.i64(seq)
	e.i64(1000 + seq)
	e.str("u")
	e.str("c" + itoa(int(seq)))
	e.i32(7)
	e.u8(0)
	e.i64(1700000000000)
	e.bytes([]byte("hi"))
	return e.b
}

func inboxKinds(s *Subscription) []int {
	s.inboxMu.Lock()
	defer s.inboxMu.Unlock()
	var out []int
	for _, ev := range s.inbox {
		out = append(out, ev.kind)
	}
	return out
}

// The push connection decodes PUSH_MESSAGE once and hands it to every
// subscription holding its conversation (each its own payload); past a
// subscription's inbox cap its pushes are dropped and one re-sync asked.
// PUSH_DROPPED and a malformed push lose the connection, never crash.
func TestPushConnDemultiplexesAndCapsEachInbox(t *testing.T) {
	a, _, _ := newTestSubscription(t)
	b, _, _ := newTestSubscription(t)
	h := a.c.pushConn()
	for _, s := range []*Subscription{a, b} {
		s.hub = h
		h.mu.Lock()
		h.subs[s] = &hubSub{held: map[string]bool{}, acked: map[string]bool{}}
		h.holdLocked(s, h.subs[s], "x")
		h.mu.Unlock()
	}
	h.mu.Lock()
	h.holdLocked(a, h.subs[a], "y")
	h.mu.Unlock()
	a.maxInbox = 3 * len(pushFrame("x", 1))
	on := h.onPush(1)
	on(opPushMessage, pushFrame("x", 1))
	on(opPushMessage, pushFrame("y", 2))
	on(opPushMessage, pushFrame("z", 3)) // held by nobody
	am, bm := a.inbox[0].msg, b.inbox[0].msg
	if am.ConvID != "x" || am.Seq != 1 || am.ServerMsgID != 1001 || am.ClientMsgID != "c1" ||
		am.ContentType != 7 || string(am.Payload) != "hi" || !reflect.DeepEqual(am, bm) {
		t.Fatalf("decoded %+v and %+v", am, bm)
	}
	am.Payload[0] = 'H'
	if string(bm.Payload) != "hi" {
		t.Fatal("two subscriptions share one payload")
	}
	if k := inboxKinds(a); !reflect.DeepEqual(k, []int{evPush, evPush}) {
		t.Fatalf("a's inbox %v", k)
	}
	if k := inboxKinds(b); !reflect.DeepEqual(k, []int{evPush}) {
		t.Fatalf("b's inbox %v", k)
	}
	// a's cap: one more fits, the next overflows once; b gets them all.
	for seq := int64(4); seq <= 6; seq++ {
		on(opPushMessage, pushFrame("x", seq))
	}
	if k := inboxKinds(a); !reflect.DeepEqual(k, []int{evPush, evPush, evPush, evOverflow}) {
		t.Fatalf("a's inbox %v", k)
	}
	if k := inboxKinds(b); len(k) != 4 {
		t.Fatalf("b's inbox %v", k)
	}
	// Losses: a stale generation is ignored; the current one is lost once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cn, err := a.c.openConn(ctxT(t, 5*time.Second), l.Addr().String(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	h.cn, h.gen = cn, 1
	h.mu.Unlock()
	h.onPush(0)(opPushDropped, pushFrame("x", 1)[:0])
	if h.cn == nil {
		t.Fatal("a stale generation's PUSH_DROPPED lost the connection")
	}
	on(opPushMessage, pushFrame("x", 7)[:20])
	if h.cn != nil {
		t.Fatal("a malformed push did not lose the connection")
	}
	if k := inboxKinds(b); k[len(k)-1] != evLost {
		t.Fatalf("b's inbox %v", k)
	}
}
