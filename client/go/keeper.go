package seqd

// The subscription loop (see subscribe.go): one goroutine per Subscription
// owns its receive queue and connection state. It handles the inbox
// (pushes, PUSH_DROPPED, a closed connection, answers of the calls it
// started on other goroutines) and a 100 ms tick (re-subscribe when due,
// MAX_SEQS after each (re)subscribe and every subResyncEvery, pulls
// unanswered for a second).

import (
	"context"
	"math/rand"
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
		s.inboxMu.Unlock()
		for _, ev := range evs {
			if s.closed.Load() {
				return
			}
			s.handle(ev)
		}
	}
}

// exit ends the loop: the connection is closed, and so is any that a
// (re)subscription in flight brings later (post sees exited).
func (s *Subscription) exit() {
	s.inboxMu.Lock()
	s.exited = true
	evs := s.inbox
	s.inbox = nil
	s.inboxMu.Unlock()
	for _, ev := range evs {
		if ev.cn != nil {
			ev.cn.close()
		}
	}
	if s.cn != nil {
		s.cn.close()
	}
}

func (s *Subscription) handle(ev subEvent) {
	switch ev.kind {
	case evPush:
		s.q.offer(ev.msg)
	case evDropped, evClosed:
		if (ev.gen == s.gen || ev.gen == genCurrent) && s.live {
			s.onLost()
		}
	case evSubscribed:
		s.subscribing = false
		if ev.err == nil {
			s.cn, s.live, s.maxDue, s.failures = ev.cn, true, true, 0
			s.resubscribes.Add(1)
			s.checkMaxSeqs()
			return
		}
		if !transientSub(ev.err) {
			s.finish(ev.err)
			return
		}
		s.failures++
		s.resubAt = time.Now().Add(s.backoff())
	case evMaxSeqs:
		s.maxInFlight = false
		if ev.err != nil || len(ev.maxes) != len(ev.convs) {
			return // redone on a tick while maxDue
		}
		for i, cv := range ev.convs {
			s.q.noteMaxSeq(cv, ev.maxes[i])
		}
		if ev.gen == s.gen && s.live {
			s.maxDue, s.resyncedAt = false, time.Now()
		}
	case evPinged:
		s.pingInFlight = false
		if ev.err != nil && ev.gen == s.gen && s.live && s.ctx.Err() == nil {
			s.onLost()
		}
	case evPulled:
		if ev.err == nil {
			s.onPulled(ev.conv, ev.from, ev.to, ev.page)
		} // else asked again after subPullRetry (the queue's tick)
	}
}

// onLost: pushes stopped (connection lost, PUSH_DROPPED, backlog full).
// The connection is dropped and a re-subscription scheduled.
func (s *Subscription) onLost() {
	s.live, s.maxDue = false, false
	s.lost.Add(1)
	if s.cn != nil {
		s.cn.close()
		s.cn = nil
	}
	if !s.resubAt.After(time.Now()) {
		s.resubAt = time.Now().Add(s.backoff())
	}
}

func (s *Subscription) tick() {
	if s.c.isClosed() {
		s.finish(errorf(CodeCancelled, "client closed"))
		return
	}
	if !s.live && !s.subscribing && !s.resubAt.After(time.Now()) {
		s.resubscribe()
	}
	s.maybeResync(time.Now())
	s.checkMaxSeqs()
	s.maybePing()
	s.q.tick()
}

// maybeResync: every subResyncEvery a live subscription asks MAX_SEQS
// again, so a push lost with no later push to show the gap (a cluster
// owner move) is pulled.
func (s *Subscription) maybeResync(now time.Time) {
	if s.live && !s.maxDue && now.Sub(s.resyncedAt) >= time.Duration(subResyncEvery.Load()) {
		s.maxDue = true
	}
}

// resubscribe starts a connection and SUBSCRIBE on the next endpoint; its
// outcome comes back as evSubscribed.
func (s *Subscription) resubscribe() {
	s.subscribing = true
	s.inboxMu.Lock()
	s.overflow = false
	s.inboxMu.Unlock()
	ep := s.nextEndpoint()
	s.gen++
	gen := s.gen
	go func() {
		cn, err := s.connectAndSubscribe(s.ctx, ep, gen)
		s.post(subEvent{kind: evSubscribed, gen: gen, cn: cn, err: err})
	}()
}

// checkMaxSeqs: one MAX_SEQS at a time after each (re)subscribe answer,
// until one answers for the current connection.
func (s *Subscription) checkMaxSeqs() {
	if !s.live || !s.maxDue || s.maxInFlight {
		return
	}
	s.maxInFlight = true
	gen, convs := s.gen, s.convs
	go func() {
		maxes, err := s.maxSeqs(s.ctx, convs)
		s.post(subEvent{kind: evMaxSeqs, gen: gen, convs: convs, maxes: maxes, err: err})
	}()
}

// maybePing: a PING on the live connection every subPingEvery, so a
// connection that died silently (a half-open TCP connection: no FIN, no
// RST) is noticed: no answer within CallTimeout counts as lost.
func (s *Subscription) maybePing() {
	if !s.live || s.pingInFlight || time.Since(s.pingedAt) < time.Duration(subPingEvery.Load()) {
		return
	}
	s.pingInFlight, s.pingedAt = true, time.Now()
	cn, gen := s.cn, s.gen
	go func() {
		ctx, cancel := context.WithTimeout(s.ctx, s.c.opts.CallTimeout)
		_, err := cn.call(ctx, opPing, 0, []byte("ping"))
		cancel()
		s.post(subEvent{kind: evPinged, gen: gen, err: err})
	}()
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

// deliver is the queue's delivery: the handler, unless closed.
func (s *Subscription) deliver(m Message) {
	if s.closed.Load() {
		return
	}
	s.delivered.Add(1)
	s.handler(m)
}

// backoff: BackoffInitial doubled per consecutive failed re-subscription,
// at most BackoffMax, jittered to [1/2, 1].
func (s *Subscription) backoff() time.Duration {
	d := s.c.opts.BackoffInitial
	for i := 0; i < s.failures && d < s.c.opts.BackoffMax; i++ {
		d *= 2
	}
	if d > s.c.opts.BackoffMax {
		d = s.c.opts.BackoffMax
	}
	if d <= 1 {
		return d
	}
	return d/2 + time.Duration(rand.Int63n(int64(d/2)+1))
}
