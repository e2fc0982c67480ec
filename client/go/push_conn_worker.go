package seqd

// The shared push connection's worker (push_conn.go): one goroutine that
// connects (and subscribes everything held on each new connection), sends
// the queued SUBSCRIBE and UNSUBSCRIBE frames one at a time, pings a live
// connection every subPingEvery, and ends once no subscription is
// attached or the client is closed. Its calls block only itself.

import (
	"context"
	"math/rand"
	"sync"
	"time"
)

// hubStep is what the worker does next.
type hubStep struct {
	kind int
	cn   *conn
	gen  int
	ops  []*hubOp
}

const (
	stepWait = iota
	stepExit
	stepConnect
	stepSend
	stepPing
)

func (h *pushConn) run() {
	t := time.NewTicker(subTick)
	defer t.Stop()
	for {
		st := h.nextStep(time.Now())
		switch st.kind {
		case stepExit:
			return
		case stepConnect:
			h.connect()
		case stepSend:
			h.send(st.cn, st.gen, st.ops)
		case stepPing:
			h.ping(st.cn, st.gen)
		default:
			select {
			case <-h.wake:
			case <-t.C:
			case <-h.c.closing:
			}
		}
	}
}

// nextStep decides the worker's next step (and ends the connection and the
// worker once nothing needs them).
func (h *pushConn) nextStep(now time.Time) hubStep {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.c.isClosed() || len(h.subs) == 0 {
		h.stopLocked()
		return hubStep{kind: stepExit}
	}
	if h.cn == nil {
		if len(h.refs) > 0 && !h.resubAt.After(now) {
			return hubStep{kind: stepConnect}
		}
		return hubStep{kind: stepWait}
	}
	if len(h.refs) == 0 && len(h.queue) == 0 {
		h.closeIdleLocked()
		return hubStep{kind: stepWait}
	}
	if ops := h.takeQueuedLocked(); len(ops) > 0 {
		return hubStep{kind: stepSend, cn: h.cn, gen: h.gen, ops: ops}
	}
	if now.Sub(h.pingedAt) >= time.Duration(subPingEvery.Load()) {
		h.pingedAt = now
		return hubStep{kind: stepPing, cn: h.cn, gen: h.gen}
	}
	return hubStep{kind: stepWait}
}

// takeQueuedLocked takes the next frame's ops: one SUBSCRIBE, or a run of
// UNSUBSCRIBEs (at most maxListItems conversations). Finished SUBSCRIBEs
// (their Add gave up) are skipped.
func (h *pushConn) takeQueuedLocked() []*hubOp {
	for len(h.queue) > 0 && h.queue[0].finished && !h.queue[0].unsub {
		h.queue = h.queue[1:]
	}
	if len(h.queue) == 0 {
		return nil
	}
	if !h.queue[0].unsub {
		op := h.queue[0]
		h.queue = h.queue[1:]
		return []*hubOp{op}
	}
	n, convs := 0, 0
	for n < len(h.queue) && h.queue[n].unsub && (n == 0 || convs+len(h.queue[n].convs) <= maxListItems) {
		convs += len(h.queue[n].convs)
		n++
	}
	ops := append([]*hubOp(nil), h.queue[:n]...)
	h.queue = h.queue[n:]
	return ops
}

// stopLocked: the worker ends; so does the connection.
func (h *pushConn) stopLocked() {
	h.closeIdleLocked()
	for _, op := range h.queue {
		h.finishLocked(op, errorf(CodeCancelled, "client closed"))
	}
	h.queue = nil
	for _, hs := range h.subs {
		for _, op := range append([]*hubOp(nil), hs.pending...) {
			h.finishLocked(op, errorf(CodeCancelled, "client closed"))
		}
	}
	h.running = false
}

// closeIdleLocked closes the connection when nothing is held (no
// subscription is told: none loses anything).
func (h *pushConn) closeIdleLocked() {
	if h.cn != nil {
		h.cn.close()
		h.cn, h.live = nil, false
	}
}

// connect opens a connection on the next endpoint and subscribes
// everything held on it.
func (h *pushConn) connect() {
	h.mu.Lock()
	h.gen++
	gen := h.gen
	ep := h.c.pickEndpoint(h.next)
	h.next = ep.index + 1
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), h.c.opts.ConnectTimeout)
	cn, err := h.c.openConn(ctx, ep.addr, h.onPush(gen), func(err error) {
		if err == nil {
			err = errorf(CodeUnavailable, "connection closed")
		}
		h.lose(gen, err)
	})
	cancel()
	if err != nil {
		h.connectFailed(err)
		return
	}
	h.opened.Add(1)
	h.mu.Lock()
	if gen != h.gen || h.c.isClosed() {
		h.mu.Unlock()
		cn.close()
		return
	}
	h.cn, h.live = cn, false
	jobs := h.snapshotLocked()
	h.mu.Unlock()
	h.resubscribeAll(cn, gen, jobs)
}

// connectFailed: no connection (see failedLocked).
func (h *pushConn) connectFailed(err error) {
	h.mu.Lock()
	ending := h.failedLocked(err)
	h.mu.Unlock()
	for _, s := range ending {
		s.finish(err)
	}
}

// failedLocked counts a failed connection (no connect, or a transport
// failure of its full SUBSCRIBE) and schedules the next. Adds waiting for
// a connection fail after MaxAttempts such failures, and at once on an
// error that is not transient (a refused token); such an error also ends
// every subscription holding conversations: the returned ones, to finish
// once mu is released.
func (h *pushConn) failedLocked(err error) []*Subscription {
	h.failures++
	h.resubAt = time.Now().Add(h.backoff())
	fatal := !transientSub(err)
	var ending []*Subscription
	for s, hs := range h.subs {
		for _, op := range append([]*hubOp(nil), hs.pending...) {
			if op.connFailures++; fatal || op.connFailures >= h.c.opts.MaxAttempts {
				h.finishLocked(op, err)
			}
		}
		if fatal && len(hs.held) > 0 {
			ending = append(ending, s)
		}
	}
	return ending
}

// subJob is one SUBSCRIBE frame of a full re-subscription: a
// subscription's acknowledged conversations (op nil), or one Add's.
type subJob struct {
	s     *Subscription
	op    *hubOp
	convs []string
	err   error
}

// snapshotLocked: the frames that subscribe everything held on a new
// connection (at most maxListItems conversations each).
func (h *pushConn) snapshotLocked() []*subJob {
	var jobs []*subJob
	for s, hs := range h.subs {
		acked := make([]string, 0, len(hs.acked))
		for cv := range hs.acked {
			acked = append(acked, cv)
		}
		for _, chunk := range chunks(acked) {
			jobs = append(jobs, &subJob{s: s, convs: chunk})
		}
		for _, op := range hs.pending {
			for _, chunk := range chunks(op.convs) {
				jobs = append(jobs, &subJob{s: s, op: op, convs: chunk})
			}
		}
	}
	return jobs
}

// resubscribeAll sends the jobs' frames on cn (hubMaxParallel at a time),
// then applies the outcome: a transport failure loses the connection
// (everything waits for the next one); a refusal ends the subscription
// (acknowledged conversations) or fails the Add it concerns; otherwise the
// connection is live and every subscription is told.
func (h *pushConn) resubscribeAll(cn *conn, gen int, jobs []*subJob) {
	sem := make(chan struct{}, hubMaxParallel)
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func(j *subJob) {
			defer wg.Done()
			j.err = h.callList(cn, opSubscribe, j.convs)
			<-sem
		}(j)
	}
	wg.Wait()
	h.mu.Lock()
	if gen != h.gen || h.cn != cn {
		h.mu.Unlock()
		return // lost meanwhile
	}
	for _, j := range jobs {
		if j.err != nil && transientSub(j.err) {
			h.failedLocked(j.err) // transient: ends nothing
			h.loseLocked(gen, j.err)
			h.mu.Unlock()
			return
		}
	}
	ending := map[*Subscription]error{}
	for _, j := range jobs {
		switch {
		case j.op != nil && j.err != nil:
			h.finishLocked(j.op, j.err)
		case j.err != nil:
			ending[j.s] = j.err
		}
	}
	for _, j := range jobs {
		if j.op != nil && j.err == nil && ending[j.s] == nil {
			h.finishLocked(j.op, nil)
		}
	}
	h.live, h.failures, h.pingedAt = true, 0, time.Now()
	for s := range h.subs {
		if ending[s] == nil {
			s.post(subEvent{kind: evSubscribed, all: true})
		}
	}
	h.mu.Unlock()
	for s, err := range ending {
		s.finish(err)
	}
}

// send sends one queued frame on the live connection cn and applies its
// outcome.
func (h *pushConn) send(cn *conn, gen int, ops []*hubOp) {
	var convs []string
	for _, op := range ops {
		convs = append(convs, op.convs...)
	}
	opcode := opSubscribe
	if ops[0].unsub {
		opcode = opUnsubscribe
	}
	err := h.callList(cn, opcode, convs)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil && (transientSub(err) || h.cn != cn) {
		for _, op := range ops {
			if op.unsub {
				h.finishLocked(op, nil) // the server forgets a lost connection's
			} // a SUBSCRIBE stays pending: the next connection carries it
		}
		h.loseLocked(gen, err)
		return
	}
	for _, op := range ops {
		if op.unsub {
			h.finishLocked(op, nil)
			continue
		}
		if err == nil && !op.finished && h.subs[op.s] != nil {
			op.s.post(subEvent{kind: evSubscribed, convs: op.convs})
		}
		h.finishLocked(op, err)
	}
}

// ping: a PING on the live connection every subPingEvery, so one that died
// silently (a hung server, a half-open TCP connection) is noticed: no
// answer within CallTimeout counts as lost.
func (h *pushConn) ping(cn *conn, gen int) {
	ctx, cancel := context.WithTimeout(context.Background(), h.c.opts.CallTimeout)
	_, err := cn.call(ctx, opPing, 0, []byte("ping"))
	cancel()
	if err != nil {
		h.lose(gen, err)
	}
}

// callList sends op with convs on cn, maxListItems a frame, each frame
// bounded by CallTimeout.
func (h *pushConn) callList(cn *conn, op byte, convs []string) error {
	for _, chunk := range chunks(convs) {
		var e enc
		e.strList(chunk)
		p, err := e.payload()
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), h.c.opts.CallTimeout)
		_, err = cn.call(ctx, op, 0, p)
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// chunks splits convs into runs of at most maxListItems.
func chunks(convs []string) [][]string {
	var out [][]string
	for i := 0; i < len(convs); i += maxListItems {
		j := i + maxListItems
		if j > len(convs) {
			j = len(convs)
		}
		out = append(out, convs[i:j])
	}
	return out
}

// jitterHalf: initial doubled per failure, at most max, jittered to
// [1/2, 1].
func jitterHalf(initial, max time.Duration, failures int) time.Duration {
	d := initial
	for i := 0; i < failures && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	if d <= 1 {
		return d
	}
	return d/2 + time.Duration(rand.Int63n(int64(d/2)+1))
}
