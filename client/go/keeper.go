package seqd

// The subscription loop (see subscribe.go): one goroutine per Subscription
// owns its receive queue and calls its handler. It handles the inbox
// (pushes, conversations added and removed, the push connection lost and
// subscribed again, answers of the calls it started on other goroutines)
// and a 100 ms tick (MAX_SEQS after each SUBSCRIBE answer and every
// subResyncEvery, pulls unanswered for a second).
//
// Per conversation the loop keeps its memberships in Add order (runs); the
// first owns the queue. A member's run takes pushes and pulls; a removed
// one takes only pulls, up to its cut, then ends, and the next run starts
// afresh at its own start: one membership's messages all reach the handler
// before the next one's.

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
		if r := s.head(ev.msg.ConvID); r != nil && r.cut < 0 {
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
			s.runs[cv] = append(s.runs[cv], &subRun{epoch: ev.epoch, start: ev.starts[i], cut: -1})
			if len(s.runs[cv]) == 1 {
				s.startRun(cv)
			}
		}
		s.checkMaxSeqs()
	case evRemove:
		for i, cv := range ev.convs {
			s.cutRun(cv, ev.epochs[i], ev.cuts[i])
		}
	case evMaxSeqs:
		s.onMaxSeqs(ev)
	case evPulled:
		if s.head(ev.conv) != nil && ev.err == nil {
			s.onPulled(ev.conv, ev.from, ev.to, ev.page)
			s.endRunIfCut(ev.conv)
		} // else asked again after subPullRetry (the queue's tick)
	}
}

// head is the run that owns conv's queue state, nil if none.
func (s *Subscription) head(conv string) *subRun {
	if rs := s.runs[conv]; len(rs) > 0 {
		return rs[0]
	}
	return nil
}

// startRun gives conv's queue to its first run, afresh at its start: a
// member asks MAX_SEQS (what came since its start is pulled), a removed
// one pulls up to its cut.
func (s *Subscription) startRun(conv string) {
	r := s.head(conv)
	s.q.forget(conv)
	delete(s.misses, conv)
	s.q.setLocalSeq(conv, r.start)
	if r.cut < 0 {
		s.maxDue[conv] = true
		return
	}
	delete(s.maxDue, conv)
	s.q.noteMaxSeq(conv, r.cut)
	s.endRunIfCut(conv)
}

// cutRun: the membership epoch of conv was removed at cut.
func (s *Subscription) cutRun(conv string, epoch uint64, cut int64) {
	for i, r := range s.runs[conv] {
		if r.epoch != epoch {
			continue
		}
		r.cut = cut
		if i == 0 {
			delete(s.maxDue, conv)
			s.q.noteMaxSeq(conv, cut)
			s.endRunIfCut(conv)
		}
		return
	}
}

// endRunIfCut ends conv's first run once it delivered through its cut,
// and starts the next one, if any.
func (s *Subscription) endRunIfCut(conv string) {
	for {
		r := s.head(conv)
		if r == nil || r.cut < 0 || s.q.localSeq(conv) < r.cut {
			return
		}
		s.endCut(r.epoch)
		s.runs[conv] = s.runs[conv][1:]
		if len(s.runs[conv]) == 0 {
			delete(s.runs, conv)
			delete(s.maxDue, conv)
			delete(s.misses, conv)
			s.q.forget(conv)
			return
		}
		s.startRun(conv)
	}
}

// markDue: convs (nil: every conversation whose first run is a member)
// need a MAX_SEQS.
func (s *Subscription) markDue(convs []string) {
	if convs == nil {
		for cv, rs := range s.runs {
			if rs[0].cut < 0 {
				s.maxDue[cv] = true
			}
		}
		return
	}
	for _, cv := range convs {
		if r := s.head(cv); r != nil && r.cut < 0 {
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
		if r := s.head(cv); r != nil && r.cut < 0 {
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

// deliver is the queue's delivery: the handler, while the membership that
// owns the queue is a member, or removed with a cut at or above m.
func (s *Subscription) deliver(m Message) {
	r := s.head(m.ConvID)
	if r == nil || !s.begin(m, r.epoch) {
		return
	}
	s.delivered.Add(1)
	s.handler(m)
}
