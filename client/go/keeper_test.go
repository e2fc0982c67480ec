package seqd

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// A Subscription driven by synthetic events (no network): the loop's
// handling of pushes, lost connections, MAX_SEQS answers and pulls.
func newTestSubscription(t *testing.T, convs ...string) (*Subscription, *[]int64, *[][2]int64) {
	c := newClient(t, Options{Endpoints: []string{"127.0.0.1:1"}})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var got []int64
	var asks [][2]int64
	s := &Subscription{c: c, convs: convs, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1),
		done: make(chan struct{}), misses: map[string]*subMiss{},
		handler: func(m Message) { got = append(got, m.Seq) }}
	s.q = newReceiveQueue(s.deliver, func(conv string, from, to int64) { asks = append(asks, [2]int64{from, to}) },
		subPullRetry, subMaxHeld, nil)
	return s, &got, &asks
}

func TestKeeperLostConnectionThenMaxSeqsPullsWhatWasMissed(t *testing.T) {
	s, got, asks := newTestSubscription(t, "a")
	s.q.setLocalSeq("a", 10)
	s.gen, s.live = 1, true
	s.handle(subEvent{kind: evPush, gen: 1, msg: msg("a", 11)})
	s.handle(subEvent{kind: evPush, gen: 1, msg: msg("a", 11)}) // pushed twice
	s.handle(subEvent{kind: evClosed, gen: 1, err: errorf(CodeUnavailable, "gone")})
	if s.live || s.Stats().Lost != 1 || s.resubAt.IsZero() {
		t.Fatalf("not lost: live %v stats %+v", s.live, s.Stats())
	}
	// A stale event of the old connection changes nothing.
	s.handle(subEvent{kind: evDropped, gen: 1})
	if s.Stats().Lost != 1 {
		t.Fatal("a stale event counted as a loss")
	}
	// Re-subscribed on connection 2; meanwhile 12..14 were sent. The
	// MAX_SEQS answer asks for them; a push of 15 is held until they come.
	s.gen = 2
	s.handle(subEvent{kind: evSubscribed, gen: 2})
	if !s.live || !s.maxInFlight {
		t.Fatalf("live %v maxInFlight %v", s.live, s.maxInFlight)
	}
	s.handle(subEvent{kind: evPush, gen: 2, msg: msg("a", 15)})
	s.handle(subEvent{kind: evMaxSeqs, gen: 2, convs: []string{"a"}, maxes: []int64{15}})
	if s.maxDue {
		t.Fatal("MAX_SEQS of the current connection left due")
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
	s.gen = 1
	s.handle(subEvent{kind: evSubscribed, gen: 1})
	s.handle(subEvent{kind: evMaxSeqs, gen: 1, convs: []string{"a"}, maxes: []int64{10}})
	s.handle(subEvent{kind: evPush, gen: 1, msg: msg("a", 11)}) // 12 is never pushed
	now := s.resyncedAt
	s.maybeResync(now.Add(time.Duration(subResyncEvery.Load()) - time.Millisecond))
	if s.maxDue {
		t.Fatal("MAX_SEQS due before resync_every")
	}
	s.maybeResync(now.Add(time.Duration(subResyncEvery.Load())))
	if !s.maxDue {
		t.Fatal("MAX_SEQS not due after resync_every")
	}
	s.handle(subEvent{kind: evMaxSeqs, gen: 1, convs: []string{"a"}, maxes: []int64{12}})
	if len(*asks) != 1 || (*asks)[0] != [2]int64{12, 12} {
		t.Fatalf("asks %v, want 12..12", *asks)
	}
	s.handle(subEvent{kind: evPulled, conv: "a", from: 12, to: 12,
		page: PullPage{Messages: msgs("a", 12), IsEnd: true}})
	if want := seqs(11, 12); !reflect.DeepEqual(*got, want) {
		t.Fatalf("delivered %v, want %v", *got, want)
	}
}

// A MAX_SEQS sent before the current connection's SUBSCRIBE does not count
// as the check after it.
func TestKeeperStaleMaxSeqsIsRedone(t *testing.T) {
	s, _, _ := newTestSubscription(t, "a")
	s.gen, s.live, s.maxDue, s.maxInFlight = 3, true, true, true
	s.handle(subEvent{kind: evMaxSeqs, gen: 2, convs: []string{"a"}, maxes: []int64{0}})
	if !s.maxDue || s.maxInFlight {
		t.Fatalf("maxDue %v maxInFlight %v", s.maxDue, s.maxInFlight)
	}
}

// Seqs the server no longer has (below a min seq) are skipped after three
// pulls that came back without them; fewer misses skip nothing.
func TestKeeperSkipsSeqsGoneAfterThreeMisses(t *testing.T) {
	s, got, _ := newTestSubscription(t, "a")
	s.gen, s.live = 1, true
	s.handle(subEvent{kind: evPush, gen: 1, msg: msg("a", 6)})
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

// The connection's push handler decodes PUSH_MESSAGE and PUSH_DROPPED into
// events, and past the inbox cap drops pushes and asks for one re-sync.
func TestKeeperPushDecodingAndBacklogCap(t *testing.T) {
	s, _, _ := newTestSubscription(t, "a")
	s.maxInbox = 3 * len(pushFrame("a", 1))
	on := s.onPush(4)
	on(opPushMessage, pushFrame("a", 1))
	s.inboxMu.Lock()
	m := s.inbox[0].msg
	s.inboxMu.Unlock()
	if m.ConvID != "a" || m.Seq != 1 || m.ServerMsgID != 1001 || m.ClientMsgID != "c1" || m.ContentType != 7 ||
		string(m.Payload) != "hi" || s.inbox[0].gen != 4 {
		t.Fatalf("decoded %+v", m)
	}
	var e enc
	e.u16(uint16(CodeTooLarge))
	e.str("push backlog full: re-sync")
	on(opPushDropped, e.b)
	if k := inboxKinds(s); len(k) != 2 || k[1] != evDropped {
		t.Fatalf("inbox kinds %v", k)
	}
	// Two more pushes fit, the next overflows: one evDropped, then nothing.
	for seq := int64(2); seq <= 6; seq++ {
		on(opPushMessage, pushFrame("a", seq))
	}
	want := []int{evPush, evDropped, evPush, evPush, evDropped}
	if k := inboxKinds(s); !reflect.DeepEqual(k, want) {
		t.Fatalf("inbox kinds %v, want %v", k, want)
	}
	// A malformed push is a re-sync too, never a crash.
	on(opPushMessage, pushFrame("a", 7)[:20])
	if k := inboxKinds(s); k[len(k)-1] != evDropped {
		t.Fatalf("inbox kinds %v", k)
	}
}
