package seqd

// A connection's write side (the rest of a connection: conn.go): the
// writer goroutine, the end of a batch of answers, and the reader's own
// non-blocking write. Frames wait in cn.wbuf; either the reader (at the
// end of the batch whose answers queued them) or the writer goroutine
// sends them, never both at once (cn.kicked). Thread safety: cn.mu guards
// the state, as in conn.go.

import (
	"runtime"
	"syscall"
	"time"
)

// wakeWriter wakes the writer goroutine for the frames in wbuf unless it
// is awake already or the reader will wake it at the end of the batch it
// is delivering. REQUIRES: cn.mu held; returns with cn.mu released.
func (cn *conn) wakeWriter() {
	if cn.kicked || cn.delivering || len(cn.wbuf) == 0 {
		cn.mu.Unlock()
		return
	}
	cn.kicked = true
	cn.mu.Unlock()
	select {
	case cn.kick <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// writeLoop is cn's writer goroutine: woken by wakeWriter, it writes wbuf
// until it is empty (frames appended meanwhile go out with the next write,
// so concurrent calls share write calls); callers never block in a write.
// It ends when cn closes; a failed write closes cn (UNAVAILABLE).
func (cn *conn) writeLoop() {
	for {
		select {
		case <-cn.kick:
		case <-cn.done:
			return
		}
		// Let the calls woken with ours queue their frames first: one
		// write then carries many (fewer syscalls here and in the server).
		runtime.Gosched()
		cn.mu.Lock()
		for len(cn.wbuf) > 0 && !cn.closed {
			buf := cn.wbuf
			cn.wbuf = cn.spare[:0]
			cn.mu.Unlock()
			_, err := cn.nc.Write(buf)
			cn.mu.Lock()
			cn.spare = buf[:0]
			if err != nil {
				cn.mu.Unlock()
				cn.fail(errorf(CodeUnavailable, "write to %s: %v", cn.ep.addr, netReason(err)), true)
				return
			}
		}
		cn.kicked = false
		cn.mu.Unlock()
	}
}

// batchWait bounds how long the reader waits, at the end of a batch, for
// the calls it woke to queue their next frames.
const batchWait = 20 * time.Microsecond

// endBatch: the reader has no complete frame buffered; before it blocks in
// a read, it lets the calls its `woken` answers woke queue their next
// frames (until as many frames came, or batchWait passed: a caller may not
// call again), then wakes the writer once for all of them. On two cores
// the woken calls run on both, so one yield is not enough. Callbacks
// (NextIDsFunc) queued theirs before they returned: no wait for them.
func (cn *conn) endBatch(woken int) {
	cn.mu.Lock()
	if woken > 0 {
		start := monoNow()
		for cn.batchIn < woken && !cn.closed && monoNow()-start <= int64(batchWait) {
			cn.mu.Unlock()
			runtime.Gosched()
			cn.mu.Lock()
		}
	}
	cn.delivering = false
	cn.batchIn = 0
	if cn.raw != nil && !cn.kicked && len(cn.wbuf) > 0 && !cn.closed {
		cn.writeNow() // unlocks cn.mu
		return
	}
	cn.wakeWriter() // unlocks cn.mu
}

// writeNow: the reader sends wbuf itself with one non-blocking write,
// saving the writer goroutine's wake-up; what the socket does not take
// goes to the writer goroutine (the reader never blocks in a write: a
// server that stops reading until its answers are read would wait for it
// for ever). REQUIRES: cn.mu held, cn.raw set, the writer idle (!kicked),
// wbuf not empty; returns with cn.mu released.
func (cn *conn) writeNow() {
	cn.kicked = true // the writer stays idle meanwhile; calls only append
	buf := cn.wbuf
	cn.wbuf = cn.spare[:0]
	cn.mu.Unlock()
	n, werr := 0, error(nil)
	rerr := cn.raw.Write(func(fd uintptr) bool {
		n, werr = syscall.Write(int(fd), buf)
		return true // one attempt: never wait for the socket here
	})
	if n < 0 || werr == syscall.EAGAIN || werr == syscall.EINTR {
		n, werr = 0, nil
	}
	if werr == nil {
		werr = rerr
	}
	cn.mu.Lock()
	cn.kicked = false
	if werr != nil {
		cn.mu.Unlock()
		cn.fail(errorf(CodeUnavailable, "write to %s: %v", cn.ep.addr, werr), true)
		return
	}
	if n < len(buf) {
		// The rest goes first, before what calls appended meanwhile.
		rest := append(buf[:0:0], buf[n:]...)
		cn.wbuf = append(rest, cn.wbuf...)
	} else {
		cn.spare = buf[:0]
	}
	cn.wakeWriter() // unlocks cn.mu
}
