package seqd

// The subscription loop (see subscribe.go): one goroutine per Subscription
// owns its receive queue and calls its handler. It handles the inbox
// (pushes, conversations added and removed, the push connection lost and
// subscribed again, answers of the calls it started on other goroutines)
// and a 100 ms tick (MAX_SEQS after each SUBSCRIBE answer and every
// subResyncEvery, pulls unanswered for a second).

import (
	"sort"
	"time"
)

func (s *Subscription) run() {
	t := time.NewTicker(subTick)
	defer t.Stop()
	defer s.exit()
	for {
		select {
		case <-s.wake:
		case <-t.C:
			s.tick()
		}
		if s.closed.Load() {
			return
		}
		s.inboxMu.Lock()
		evs := s.inbox
		s.inbox = nil
		s.inboxBytes = 0
		s.overflow = false
		s.inboxMu.Unlock()
		for _, ev := range evs {
			if s.closed.Load() {
				return
			}
			s.handle(ev)
		}
	}
}

// exit ends the loop: nothing is queued any more.
func (s *Subscription) exit() {
	s.inboxMu.Lock()
	s.exited = true
	s.inbox = nil
	s.inboxMu.Unlock()
}

func (s *Subscription) handle(ev subEvent) {
	switch ev.kind {
	case evPush:
		if _, ok := s.active[ev.msg.ConvID]; ok {
			s.q.offer(ev.msg)
		}
	case evOverflow:
		s.lost.Add(1)
		s.markDue(nil)
	case evLost:
		s.live = false
		s.lost.Add(1)
	case evSubscribed:
		if ev.all && s.everLive {
			s.resubscribes.Add(1)
		}
		s.live, s.everLive = true, true
		if ev.all {
			s.markDue(nil)
		} else {
			s.markDue(ev.convs)
		}
		s.checkMaxSeqs()
	case evAdd:
		for i, cv := range ev.convs {
			s.q.forget(cv)
			delete(s.misses, cv)
			s.active[cv] = ev.epoch
			s.q.setLocalSeq(cv, ev.starts[i])
		}
	case evRemove:
		for _, cv := range ev.convs {
			delete(s.active, cv)
			delete(s.maxDue, cv)
			delete(s.misses, cv)
			s.q.forget(cv)
		}
	case evMaxSeqs:
		s.onMaxSeqs(ev)
	case evPulled:
		if _, ok := s.active[ev.conv]; ok && ev.err == nil {
			s.onPulled(ev.conv, ev.from, ev.to, ev.page)
		} // else asked again after subPullRetry (the queue's tick)
	}
}

// markDue: convs (nil: every active one) need a MAX_SEQS.
func (s *Subscription) markDue(convs []string) {
	if convs == nil {
		for cv := range s.active {
			s.maxDue[cv] = true
		}
		return
	}
	for _, cv := range convs {
		if _, ok := s.active[cv]; ok {
			s.maxDue[cv] = true
		}
	}
}

func (s *Subscription) tick() {
	if s.c.isClosed() {
		s.finish(errorf(CodeCancelled, "client closed"))
		return
	}
	s.maybeResync(time.Now())
	s.checkMaxSeqs()
	s.q.tick()
}

// maybeResync: every subResyncEvery a live subscription asks MAX_SEQS
// again, so a push lost with no later push to show the gap (a cluster
// owner move) is pulled.
func (s *Subscription) maybeResync(now time.Time) {
	if s.live && len(s.maxDue) == 0 && !s.maxInFlight &&
		now.Sub(s.resyncedAt) >= time.Duration(subResyncEvery.Load()) {
		s.markDue(nil)
	}
}

// checkMaxSeqs: one MAX_SEQS at a time, while live, of the conversations
// due.
func (s *Subscription) checkMaxSeqs() {
	if !s.live || s.maxInFlight || len(s.maxDue) == 0 {
		return
	}
	convs := make([]string, 0, len(s.maxDue))
	for cv := range s.maxDue {
		convs = append(convs, cv)
	}
	sort.Strings(convs)
	s.maxDue = map[string]bool{}
	s.maxInFlight = true
	go func() {
		maxes, err := s.maxSeqs(s.ctx, convs)
		s.post(subEvent{kind: evMaxSeqs, convs: convs, maxes: maxes, err: err})
	}()
}

// onMaxSeqs: what exists is noted (and pulled); a failed MAX_SEQS is due
// again on the next tick.
func (s *Subscription) onMaxSeqs(ev subEvent) {
	s.maxInFlight = false
	if ev.err != nil || len(ev.maxes) != len(ev.convs) {
		s.markDue(ev.convs)
		return
	}
	for i, cv := range ev.convs {
		if _, ok := s.active[cv]; ok {
			s.q.noteMaxSeq(cv, ev.maxes[i])
		}
	}
	s.resyncedAt = time.Now()
	s.checkMaxSeqs()
}

// requestPull is the queue's pull request: PULL_RANGE on another
// goroutine, its answer back as evPulled.
func (s *Subscription) requestPull(conv string, from, to int64) {
	s.pulls.Add(1)
	go func() {
		page, err := s.c.PullRange(s.ctx, conv, PullOptions{FromSeq: from, ToSeq: to, Limit: subPullLimit})
		s.post(subEvent{kind: evPulled, conv: conv, from: from, to: to, page: page, err: err})
	}()
}

func (s *Subscription) onPulled(conv string, from, to int64, page PullPage) {
	for i := range page.Messages {
		page.Messages[i].ConvID = conv
	}
	s.q.onPulled(page.Messages)
	if s.q.localSeq(conv) >= from || !page.IsEnd {
		return
	}
	// The range's start did not come back. A server that lags answers it
	// later; seqs below the conversation's min seq never.
	m := s.misses[conv]
	if m == nil || m.from != from {
		m = &subMiss{from: from}
		s.misses[conv] = m
	}
	if m.n++; m.n < subMissesToSkip {
		return
	}
	first := to + 1
	for _, msg := range page.Messages {
		if msg.Seq >= from && msg.Seq < first {
			first = msg.Seq
		}
	}
	m.n = 0
	s.q.setLocalSeq(conv, first-1)
}

// deliver is the queue's delivery: the handler, while the message's
// conversation is still a member of the epoch the loop started it with.
func (s *Subscription) deliver(m Message) {
	epoch, ok := s.active[m.ConvID]
	if !ok || !s.begin(m, epoch) {
		return
	}
	s.delivered.Add(1)
	s.handler(m)
}
