package seqd

import (
	"math/rand"
	"reflect"
	"testing"
	"time"
)

// rqHarness records deliveries and pull requests of a queue on a fake
// clock.
type rqHarness struct {
	q         *receiveQueue
	now       time.Time
	delivered map[string][]int64
	asks      [][3]int64 // conv index (always 0 here), from, to
	askConv   []string
}

func newRQ(maxHeld int) *rqHarness {
	h := &rqHarness{now: time.Unix(1000, 0), delivered: map[string][]int64{}}
	h.q = newReceiveQueue(func(m Message) { h.delivered[m.ConvID] = append(h.delivered[m.ConvID], m.Seq) },
		func(conv string, from, to int64) {
			h.asks = append(h.asks, [3]int64{0, from, to})
			h.askConv = append(h.askConv, conv)
		}, time.Second, maxHeld, func() time.Time { return h.now })
	return h
}

func msg(conv string, seq int64) Message { return Message{ConvID: conv, Seq: seq} }

func seqs(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func msgs(conv string, ss ...int64) []Message {
	var out []Message
	for _, s := range ss {
		out = append(out, msg(conv, s))
	}
	return out
}

func TestReceiveQueueInOrderAndDuplicates(t *testing.T) {
	h := newRQ(1000)
	for _, s := range []int64{1, 2, 2, 1, 3} {
		h.q.offer(msg("a", s))
	}
	if got := h.delivered["a"]; !reflect.DeepEqual(got, seqs(1, 3)) || len(h.asks) != 0 {
		t.Fatalf("delivered %v, asks %v", got, h.asks)
	}
}

func TestReceiveQueueGapIsPulledOnceAndFilled(t *testing.T) {
	h := newRQ(1000)
	h.q.offer(msg("a", 1))
	h.q.offer(msg("a", 4)) // 2..3 missing
	h.q.offer(msg("a", 5))
	h.q.offer(msg("a", 4)) // a duplicate of a held one
	if got := h.delivered["a"]; !reflect.DeepEqual(got, []int64{1}) {
		t.Fatalf("delivered %v before the gap is filled", got)
	}
	if len(h.asks) != 1 || h.asks[0] != [3]int64{0, 2, 3} || h.q.held("a") != 2 {
		t.Fatalf("asks %v held %d, want one ask of 2..3", h.asks, h.q.held("a"))
	}
	// The pull answers 2..3 (and 4 again): all delivered once, in order.
	h.q.onPulled(msgs("a", 3, 2, 4))
	if got := h.delivered["a"]; !reflect.DeepEqual(got, seqs(1, 5)) {
		t.Fatalf("delivered %v", got)
	}
	if _, _, ok := h.q.pending("a"); ok || h.q.held("a") != 0 {
		t.Fatal("a request still pending after the gap filled")
	}
}

func TestReceiveQueueRetriesAnUnansweredPull(t *testing.T) {
	h := newRQ(1000)
	h.q.offer(msg("a", 3))
	h.q.tick()
	h.now = h.now.Add(500 * time.Millisecond)
	h.q.tick()
	if len(h.asks) != 1 {
		t.Fatalf("asked %d times within the retry time", len(h.asks))
	}
	h.now = h.now.Add(600 * time.Millisecond)
	h.q.tick()
	if len(h.asks) != 2 || h.asks[1] != [3]int64{0, 1, 2} {
		t.Fatalf("asks %v, want 1..2 asked again", h.asks)
	}
	// A pull that brings nothing does not re-ask at once.
	h.q.onPulled(nil)
	h.q.onPulled(msgs("a", 9)[:0])
	if len(h.asks) != 2 {
		t.Fatalf("asks %v", h.asks)
	}
}

func TestReceiveQueueMaxSeqPullsTheTail(t *testing.T) {
	h := newRQ(1000)
	h.q.setLocalSeq("a", 10)
	h.q.noteMaxSeq("a", 12) // 11 and 12 exist but were never pushed
	if len(h.asks) != 1 || h.asks[0] != [3]int64{0, 11, 12} {
		t.Fatalf("asks %v", h.asks)
	}
	h.q.onPulled(msgs("a", 9, 10, 11, 12))
	if got := h.delivered["a"]; !reflect.DeepEqual(got, []int64{11, 12}) {
		t.Fatalf("delivered %v, want 11 12 (at or below the start dropped)", got)
	}
}

func TestReceiveQueueSetLocalSeqDropsHeldBelow(t *testing.T) {
	h := newRQ(1000)
	h.q.offer(msg("a", 3))
	h.q.offer(msg("a", 6))
	h.q.setLocalSeq("a", 5) // 3 dropped, 6 follows
	if got := h.delivered["a"]; !reflect.DeepEqual(got, []int64{6}) || h.q.held("a") != 0 {
		t.Fatalf("delivered %v held %d", got, h.q.held("a"))
	}
	h.q.setLocalSeq("a", 2) // never backwards
	if h.q.localSeq("a") != 6 {
		t.Fatalf("local seq %d", h.q.localSeq("a"))
	}
}

func TestReceiveQueueHeldCapKeepsTheLowest(t *testing.T) {
	h := newRQ(3)
	for _, s := range []int64{10, 8, 9, 7, 11} {
		h.q.offer(msg("a", s))
	}
	if h.q.held("a") != 3 {
		t.Fatalf("held %d", h.q.held("a"))
	}
	h.q.onPulled(msgs("a", 1, 2, 3, 4, 5, 6))
	// 7..9 were held; 10 and 11 were dropped and are asked for again.
	if got := h.delivered["a"]; !reflect.DeepEqual(got, seqs(1, 9)) {
		t.Fatalf("delivered %v", got)
	}
	last := h.asks[len(h.asks)-1]
	if last != [3]int64{0, 10, 11} {
		t.Fatalf("last ask %v, want 10..11", last)
	}
}

// A lossy, duplicating, reordering feed over several conversations, a
// server that answers pulls (sometimes not at all), and ticks: every seq
// 1..N of each conversation is delivered exactly once, in order.
func TestReceiveQueueRandomFeed(t *testing.T) {
	const n = 2000
	rng := rand.New(rand.NewSource(42))
	for round := 0; round < 20; round++ {
		h := newRQ(50)
		convs := []string{"a", "b", "c"}
		var feed []Message
		for _, cv := range convs {
			for s := int64(1); s <= n; s++ {
				if rng.Intn(10) == 0 {
					continue // lost
				}
				feed = append(feed, msg(cv, s))
				if rng.Intn(20) == 0 {
					feed = append(feed, msg(cv, s)) // duplicated
				}
			}
		}
		// Local reordering: swap near neighbours.
		for i := range feed {
			j := i + rng.Intn(8)
			if j < len(feed) {
				feed[i], feed[j] = feed[j], feed[i]
			}
		}
		serve := func() {
			asks, conv := h.asks, h.askConv
			h.asks, h.askConv = nil, nil
			for i, a := range asks {
				if rng.Intn(4) == 0 {
					continue // the pull failed: retried after the retry time
				}
				to := a[2]
				if to-a[1] >= 1000 {
					to = a[1] + 999
				}
				h.q.onPulled(msgs(conv[i], seqs(a[1], to)...))
			}
		}
		for i, m := range feed {
			h.q.offer(m)
			if i%7 == 0 {
				serve()
			}
		}
		for _, cv := range convs {
			h.q.noteMaxSeq(cv, n)
		}
		for i := 0; i < 200 && (len(h.delivered["a"]) < n || len(h.delivered["b"]) < n || len(h.delivered["c"]) < n); i++ {
			serve()
			h.now = h.now.Add(1100 * time.Millisecond)
			h.q.tick()
		}
		for _, cv := range convs {
			if got := h.delivered[cv]; !reflect.DeepEqual(got, seqs(1, n)) {
				t.Fatalf("round %d conv %s: %d delivered, first bad at %d", round, cv, len(got), firstBad(got))
			}
		}
	}
}

func firstBad(got []int64) int {
	for i, s := range got {
		if s != int64(i+1) {
			return i
		}
	}
	return len(got)
}
