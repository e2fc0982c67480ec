package seqd

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seqd.dev/go/internal/testseqd"
)

// sendUntilAcked sends m until the server acknowledges it, re-sending the
// same message (same client message id) after any failure: the
// idempotent re-send of an unknown outcome.
func sendUntilAcked(ctx context.Context, c *Client, m OutgoingMessage) (SendResult, error) {
	for {
		r, err := c.Send(ctx, m)
		if err == nil {
			return r, nil
		}
		if ctx.Err() != nil {
			return r, fmt.Errorf("%s never acknowledged: %w", m.ClientMsgID, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// recorder is a subscription handler that keeps what it got.
type recorder struct {
	mu   sync.Mutex
	msgs []Message
}

func (r *recorder) handle(m Message) {
	r.mu.Lock()
	r.msgs = append(r.msgs, m)
	r.mu.Unlock()
}

func (r *recorder) snapshot() []Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Message(nil), r.msgs...)
}

// dropPushConn loses c's push connection as PUSH_DROPPED would.
func dropPushConn(c *Client, err error) {
	h := c.pushConn()
	h.mu.Lock()
	gen := h.gen
	h.mu.Unlock()
	h.lose(gen, err)
}

// waitFor polls cond every 20 ms until it holds or `within` passes.
func waitFor(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// checkExactlyOnceInOrder: the delivered messages are the seqs from+1,
// from+2, ... with no hole and no duplicate, and every acknowledged
// message (client message id -> seq) is among them with its seq.
func checkExactlyOnceInOrder(t *testing.T, conv string, from int64, got []Message, acked map[string]int64) {
	t.Helper()
	byID := map[string]int64{}
	for i, m := range got {
		if m.ConvID != conv {
			t.Fatalf("message %d of conversation %q", i, m.ConvID)
		}
		if want := from + int64(i) + 1; m.Seq != want {
			t.Fatalf("delivery %d is seq %d, want %d (hole, duplicate or out of order)", i, m.Seq, want)
		}
		if prev, dup := byID[m.ClientMsgID]; dup {
			t.Fatalf("client message %s delivered twice (seqs %d and %d)", m.ClientMsgID, prev, m.Seq)
		}
		byID[m.ClientMsgID] = m.Seq
		if string(m.Payload) != m.ClientMsgID {
			t.Fatalf("seq %d: payload %q, client message id %q", m.Seq, m.Payload, m.ClientMsgID)
		}
	}
	for id, seq := range acked {
		if got, ok := byID[id]; !ok || got != seq {
			t.Fatalf("acknowledged %s (seq %d) delivered as seq %d (present %v)", id, seq, got, ok)
		}
	}
}

// The kill test: a subscriber on one conversation while senders send N
// messages; seqd is SIGKILLed and restarted twice mid-run (same ports, same
// store). Every acknowledged message is delivered exactly once, in seq
// order, and nothing else appears (every message is re-sent until
// acknowledged, so the delivered set is exactly the acknowledged one).
func TestSubscribeSurvivesKillAndRestart(t *testing.T) {
	const n, senders = 600, 4
	s := testseqd.Start(t)
	ctx := ctxT(t, 120*time.Second)
	conv := "sg_kill_" + strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
	sender := newClient(t, Options{Endpoints: []string{s.Addr()}})
	subClient := newClient(t, Options{Endpoints: []string{s.Addr()}})

	// Two messages before subscribing: not delivered (the subscription
	// starts after the max seq at Subscribe).
	for i := 0; i < 2; i++ {
		if _, err := sender.Send(ctx, OutgoingMessage{ConvID: conv, SenderID: "u", ClientMsgID: "pre" + strconv.Itoa(i),
			Payload: []byte("pre" + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	var rec recorder
	sub, err := subClient.Subscribe(ctx, []string{conv}, nil, rec.handle)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	var mu sync.Mutex
	acked := map[string]int64{}
	var ackedCount atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for g := 0; g < senders; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; i < n; i += senders {
				id := "m" + strconv.Itoa(i)
				r, err := sendUntilAcked(ctx, sender, OutgoingMessage{ConvID: conv, SenderID: "u", ClientMsgID: id,
					ContentType: 1, Payload: []byte(id)})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				acked[id] = r.Seq
				mu.Unlock()
				ackedCount.Add(1)
			}
		}(g)
	}
	for k, at := range []int64{n / 3, 2 * n / 3} {
		// Each kill hits a live subscription: the one before has been
		// re-subscribed by then.
		if !waitFor(60*time.Second, func() bool {
			return ackedCount.Load() >= at && sub.Stats().Resubscribes >= uint64(k)
		}) {
			t.Fatalf("only %d of %d messages acknowledged; %+v", ackedCount.Load(), n, sub.Stats())
		}
		s.Restart(true) // SIGKILL, then the same ports and store
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if !waitFor(30*time.Second, func() bool { return len(rec.snapshot()) >= n }) {
		t.Fatalf("delivered %d of %d acknowledged messages; stats %+v", len(rec.snapshot()), n, sub.Stats())
	}
	time.Sleep(300 * time.Millisecond) // a late duplicate would show now
	got := rec.snapshot()
	if len(got) != n {
		t.Fatalf("delivered %d messages, %d were sent", len(got), n)
	}
	checkExactlyOnceInOrder(t, conv, 2, got, acked)
	st := sub.Stats()
	if st.Lost < 2 || st.Resubscribes < 2 {
		t.Fatalf("stats %+v: want at least two losses and re-subscriptions", st)
	}
	t.Logf("%d messages, %d senders, 2 kills: %+v", n, senders, st)
}

// Subscribe with `from`: what the caller lacks is pulled first, then the
// pushes follow; PUSH_DROPPED-style loss (the connection closed under the
// subscription) is re-synced the same way.
func TestSubscribeFromAndConnectionLoss(t *testing.T) {
	_, c := startClient(t)
	ctx := ctxT(t, 30*time.Second)
	conv := "sg_from"
	acked := map[string]int64{}
	send := func(i int) {
		id := "f" + strconv.Itoa(i)
		r, err := c.Send(ctx, OutgoingMessage{ConvID: conv, SenderID: "u", ClientMsgID: id, Payload: []byte(id)})
		if err != nil {
			t.Fatal(err)
		}
		acked[id] = r.Seq
	}
	for i := 1; i <= 5; i++ {
		send(i)
	}
	var rec recorder
	sub, err := c.Subscribe(ctx, []string{conv}, map[string]int64{conv: 2}, rec.handle)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if !waitFor(5*time.Second, func() bool { return len(rec.snapshot()) == 3 }) {
		t.Fatalf("delivered %d, want seqs 3..5", len(rec.snapshot()))
	}
	send(6)
	// Close the subscription's connection under it: the keeper re-subscribes.
	waitFor(5*time.Second, func() bool { return len(rec.snapshot()) == 4 })
	dropPushConn(c, errorf(CodeTooLarge, "push backlog full"))
	for i := 7; i <= 9; i++ {
		send(i)
	}
	if !waitFor(5*time.Second, func() bool { return len(rec.snapshot()) == 7 }) {
		t.Fatalf("delivered %d, want 7; stats %+v", len(rec.snapshot()), sub.Stats())
	}
	delete(acked, "f1")
	delete(acked, "f2")
	checkExactlyOnceInOrder(t, conv, 2, rec.snapshot(), acked)
	if st := sub.Stats(); st.Lost != 1 {
		t.Fatalf("stats %+v, want one loss", st)
	}
	// Bad arguments.
	if _, err := c.Subscribe(ctx, []string{"a", "a"}, nil, rec.handle); CodeOf(err) != CodeInvalidArgument {
		t.Fatalf("twice-listed conversation: %v", err)
	}
	if _, err := c.Subscribe(ctx, []string{"bad\tkey!"}, nil, rec.handle); CodeOf(err) != CodeInvalidArgument {
		t.Fatalf("bad conversation id: %v", err)
	}
	sub.Close()
	select {
	case <-sub.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed after Close")
	}
}

// A connection that goes silent (the server stopped, the TCP connection
// still open) is noticed by the subscription's PING, re-subscribed, and
// what was sent meanwhile is delivered.
func TestSubscribeNoticesASilentConnection(t *testing.T) {
	old := subPingEvery.Load()
	subPingEvery.Store(int64(200 * time.Millisecond))
	defer subPingEvery.Store(old)
	s, c := startClient(t)
	ctx := ctxT(t, 30*time.Second)
	conv := "sg_silent"
	var rec recorder
	sub, err := c.Subscribe(ctx, []string{conv}, nil, rec.handle)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	s.Pause()
	if !waitFor(5*time.Second, func() bool { return sub.Stats().Lost >= 1 }) {
		s.Resume()
		t.Fatalf("a silent connection was not noticed: %+v", sub.Stats())
	}
	s.Resume()
	acked := map[string]int64{}
	for i := 1; i <= 3; i++ {
		id := "s" + strconv.Itoa(i)
		r, err := sendUntilAcked(ctx, c, OutgoingMessage{ConvID: conv, SenderID: "u", ClientMsgID: id, Payload: []byte(id)})
		if err != nil {
			t.Fatal(err)
		}
		acked[id] = r.Seq
	}
	if !waitFor(10*time.Second, func() bool { return len(rec.snapshot()) == 3 }) {
		t.Fatalf("delivered %d of 3; %+v", len(rec.snapshot()), sub.Stats())
	}
	checkExactlyOnceInOrder(t, conv, 0, rec.snapshot(), acked)
}
