package seqd

// receiveQueue: in-order, exactly-once delivery of conversations' messages
// from an unreliable feed (pushes that may be lost, duplicated or
// reordered), with gap filling by pull. A port of the C++ client's
// seqd::client::ReceiveQueue (client/include/seqd/receive_queue.h). Pure
// logic: no I/O, no goroutines.
//
// The local seq rule: per conversation the queue holds localSeq, the last
// seq delivered. offer(m):
//   - m.Seq <= localSeq, or a seq already held: a duplicate, dropped;
//   - m.Seq == localSeq+1: delivered, then every held message that follows
//     without a gap;
//   - otherwise (a gap): m is held (at most maxHeld per conversation; past
//     that the highest is dropped and fetched again later) and the first
//     missing range is asked for ONCE through requestPull(conv, from, to);
//     asked again only after retryAfter with no answer (tick, or the next
//     offer/onPulled).
//
// onPulled feeds a pull's answer; noteMaxSeq says a seq exists (MAX_SEQS),
// so a lost last message is asked for too. A conversation never seen starts
// at localSeq 0 unless setLocalSeq says otherwise.
//
// Thread safety: none; one goroutine (or the caller's lock). Callbacks run
// inside the calling method and must not call back into the queue.

import (
	"sort"
	"time"
)

type receiveQueue struct {
	deliver     func(m Message)
	requestPull func(conv string, from, to int64)
	retryAfter  time.Duration
	maxHeld     int
	now         func() time.Time
	convs       map[string]*rqConv
}

type rqConv struct {
	localSeq int64
	maxSeen  int64     // highest seq known to exist
	held     []Message // ascending by Seq, all above localSeq+1
	asked    bool
	askFrom  int64
	askTo    int64
	askedAt  time.Time
}

func newReceiveQueue(deliver func(Message), requestPull func(string, int64, int64),
	retryAfter time.Duration, maxHeld int, now func() time.Time) *receiveQueue {
	if now == nil {
		now = time.Now
	}
	if maxHeld < 1 {
		maxHeld = 1
	}
	return &receiveQueue{deliver: deliver, requestPull: requestPull, retryAfter: retryAfter,
		maxHeld: maxHeld, now: now, convs: map[string]*rqConv{}}
}

func (q *receiveQueue) conv(id string) *rqConv {
	c := q.convs[id]
	if c == nil {
		c = &rqConv{}
		q.convs[id] = c
	}
	return c
}

// setLocalSeq moves where a conversation starts (only forward): held
// messages at or below it are dropped, those that follow are delivered.
func (q *receiveQueue) setLocalSeq(id string, seq int64) {
	c := q.conv(id)
	if seq <= c.localSeq {
		return
	}
	c.localSeq = seq
	if seq > c.maxSeen {
		c.maxSeen = seq
	}
	c.dropThrough(seq)
	q.drain(c)
	q.maybeAsk(id, c, false)
}

func (q *receiveQueue) localSeq(id string) int64 {
	if c := q.convs[id]; c != nil {
		return c.localSeq
	}
	return 0
}

func (q *receiveQueue) held(id string) int {
	if c := q.convs[id]; c != nil {
		return len(c.held)
	}
	return 0
}

// pending is the range asked for and not yet filled, if any.
func (q *receiveQueue) pending(id string) (from, to int64, ok bool) {
	if c := q.convs[id]; c != nil && c.asked {
		return c.askFrom, c.askTo, true
	}
	return 0, 0, false
}

func (q *receiveQueue) forget(id string) { delete(q.convs, id) }

// dropThrough removes held messages with Seq <= seq.
func (c *rqConv) dropThrough(seq int64) {
	i := sort.Search(len(c.held), func(i int) bool { return c.held[i].Seq > seq })
	if i > 0 {
		c.held = append(c.held[:0], c.held[i:]...)
	}
}

// accept reports whether m was new.
func (q *receiveQueue) accept(c *rqConv, m Message) bool {
	if m.Seq > c.maxSeen {
		c.maxSeen = m.Seq
	}
	if m.Seq <= c.localSeq {
		return false // delivered already
	}
	if m.Seq == c.localSeq+1 {
		c.localSeq++
		q.deliver(m)
		c.dropThrough(c.localSeq)
		q.drain(c)
		return true
	}
	i := sort.Search(len(c.held), func(i int) bool { return c.held[i].Seq >= m.Seq })
	if i < len(c.held) && c.held[i].Seq == m.Seq {
		return false // held already
	}
	if len(c.held) >= q.maxHeld {
		// Full: keep the lowest seqs (delivered first); a higher one is
		// pulled again once the gap before it is filled.
		if i == len(c.held) {
			return false
		}
		c.held = c.held[:len(c.held)-1]
	}
	c.held = append(c.held, Message{})
	copy(c.held[i+1:], c.held[i:])
	c.held[i] = m
	return true
}

func (q *receiveQueue) drain(c *rqConv) {
	n := 0
	for n < len(c.held) && c.held[n].Seq == c.localSeq+1 {
		c.localSeq++
		q.deliver(c.held[n])
		n++
	}
	if n > 0 {
		c.held = append(c.held[:0], c.held[n:]...)
	}
	if c.asked && c.localSeq >= c.askTo {
		c.asked = false // the range is filled
	}
}

// maybeAsk asks for the first gap if there is one and no live request
// covers it (force: ask again anyway).
func (q *receiveQueue) maybeAsk(id string, c *rqConv, force bool) {
	if c.maxSeen <= c.localSeq {
		c.asked = false
		return
	}
	from := c.localSeq + 1
	to := c.maxSeen
	if len(c.held) > 0 {
		to = c.held[0].Seq - 1
	}
	now := q.now()
	if c.asked && !force {
		covered := c.askFrom <= from && to <= c.askTo
		if covered && now.Sub(c.askedAt) < q.retryAfter {
			return // asked once, still live
		}
	}
	c.asked, c.askFrom, c.askTo, c.askedAt = true, from, to, now
	q.requestPull(id, from, to)
}

func (q *receiveQueue) offer(m Message) {
	c := q.conv(m.ConvID)
	q.accept(c, m)
	q.maybeAsk(m.ConvID, c, false)
}

// onPulled feeds a pull's answer (any order, any conversations).
func (q *receiveQueue) onPulled(msgs []Message) {
	sorted := append([]Message(nil), msgs...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].ConvID != sorted[j].ConvID {
			return sorted[i].ConvID < sorted[j].ConvID
		}
		return sorted[i].Seq < sorted[j].Seq
	})
	before := map[string]int64{}
	var order []string
	for _, m := range sorted {
		c := q.conv(m.ConvID)
		if _, ok := before[m.ConvID]; !ok {
			before[m.ConvID] = c.localSeq
			order = append(order, m.ConvID)
		}
		q.accept(c, m)
	}
	for _, id := range order {
		c := q.convs[id]
		// An answer that moved us on: ask for what is still missing at
		// once. One that did not: wait for the retry time.
		if c.localSeq > before[id] && c.asked {
			c.asked = false
		}
		q.maybeAsk(id, c, false)
	}
}

func (q *receiveQueue) noteMaxSeq(id string, max int64) {
	c := q.conv(id)
	if max <= c.maxSeen {
		return
	}
	c.maxSeen = max
	q.maybeAsk(id, c, false)
}

// tick re-asks every range whose request has timed out.
func (q *receiveQueue) tick() {
	now := q.now()
	for id, c := range q.convs {
		if c.asked && now.Sub(c.askedAt) >= q.retryAfter {
			q.maybeAsk(id, c, true)
		}
	}
}
