package seqd

// One connection of the transport (transport.go): dial (TCP, TLS, AUTH),
// pipelined calls matched by request id, the reader goroutine, timeouts,
// and closing with every pending call answered (the write side:
// conn_write.go). Thread safety: every method may be called from any
// goroutine; cn.mu guards the mutable state.
//
// The hot path (goal: within 0.8x of the C++ client): a call appends
// its frame to wbuf and waits (a blocking call, on its pooled channel) or
// returns (an asynchronous one, async.go); it never writes nor arms a
// timer. The reader hands out a batch of answers, lets the calls they
// woke queue their next frames (endBatch), then sends them all in one
// write (as seqbench writes once per read). One timer per connection
// (expire) handles every call's timeout.

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// ---------------------------------------------------------------- a connection

// dial connects (bounded by ctx and Options.ConnectTimeout), does the TLS
// handshake, sends AUTH (with Options.Token) and waits for its answer
// before any other frame, then starts the reader and writer goroutines
// (see writeLoop). A refused token is
// UNAUTHENTICATED (not retried); any other failure UNAVAILABLE (the
// endpoint is marked down).
func (c *Client) dial(ctx context.Context, ep *endpoint, pooled bool, onPush func(byte, []byte), onClose func(error)) (*conn, error) {
	dctx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout)
	defer cancel()
	dialContext := c.opts.Dial
	if dialContext == nil {
		var d net.Dialer
		dialContext = d.DialContext
	}
	nc, err := dialContext(dctx, "tcp", ep.addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctxError(ctx, "connect to "+ep.addr)
		}
		c.markDown(ep)
		return nil, errorf(CodeUnavailable, "connect to %s: %v", ep.addr, netReason(err))
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if c.opts.TLSConfig != nil {
		cfg := c.opts.TLSConfig.Clone()
		if cfg.ServerName == "" {
			host, _, _ := net.SplitHostPort(ep.addr)
			cfg.ServerName = host
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(dctx); err != nil {
			nc.Close()
			if ctx.Err() != nil {
				return nil, ctxError(ctx, "TLS handshake with "+ep.addr)
			}
			c.markDown(ep)
			return nil, errorf(CodeUnavailable, "TLS handshake with %s: %v", ep.addr, err)
		}
		nc = tc
	}
	if c.opts.Token != "" {
		if err := authenticate(dctx, nc, c.opts.Token); err != nil {
			nc.Close()
			if ctx.Err() != nil {
				return nil, ctxError(ctx, "AUTH to "+ep.addr)
			}
			if CodeOf(err) == CodeUnavailable {
				c.markDown(ep)
			}
			if e, ok := err.(*Error); ok {
				e.Message = ep.addr + ": " + e.Message
			}
			return nil, err
		}
	}
	if c.opts.WatchPlacement || c.opts.RouteByShard {
		if err := askPlacement(dctx, nc); err != nil {
			nc.Close()
			if ctx.Err() != nil {
				return nil, ctxError(ctx, "PLACEMENT to "+ep.addr)
			}
			c.markDown(ep)
			return nil, errorf(CodeUnavailable, "PLACEMENT to %s: %v", ep.addr, netReason(err))
		}
	}
	cn := &conn{c: c, ep: ep, pooled: pooled, nc: nc, onPush: onPush, onClose: onClose,
		done: make(chan struct{}),
		kick: make(chan struct{}, 1)}
	cn.raw = rawConn(nc)
	if !c.track(cn) {
		nc.Close()
		return nil, errorf(CodeCancelled, "client closed")
	}
	go cn.readLoop()
	go cn.writeLoop()
	return cn, nil
}

// rawConn is nc's file descriptor for the reader's non-blocking writes
// (writeNow): a TCP or unix socket's; nil for any other net.Conn (TLS, a
// custom Dial's wrapper), whose writes go through the writer goroutine.
func rawConn(nc net.Conn) syscall.RawConn {
	var sc syscall.Conn
	switch x := nc.(type) {
	case *net.TCPConn:
		sc = x
	case *net.UnixConn:
		sc = x
	default:
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

func netReason(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

// authenticate sends AUTH as the connection's first frame and reads its
// answer synchronously. UNKNOWN_OPCODE (a server before tokens) is OK.
func authenticate(ctx context.Context, nc net.Conn, token string) error {
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
		defer nc.SetDeadline(time.Time{})
	}
	frame := appendHeader(nil, opAuth, 0, 1, len(token))
	frame = append(frame, token...)
	if _, err := nc.Write(frame); err != nil {
		return errorf(CodeUnavailable, "AUTH: %v", netReason(err))
	}
	var head [headerSize]byte
	if _, err := io.ReadFull(nc, head[:]); err != nil {
		return errorf(CodeUnavailable, "AUTH: %v", netReason(err))
	}
	length := binary.BigEndian.Uint32(head[0:4])
	if length < 8 || length > maxFrameSize-4 {
		return errorf(CodeProtocol, "AUTH: bad answer")
	}
	body := make([]byte, length-8)
	if _, err := io.ReadFull(nc, body); err != nil {
		return errorf(CodeUnavailable, "AUTH: %v", netReason(err))
	}
	_, err := parseResponse(body)
	if err != nil && CodeOf(err) != CodeUnknownOpcode {
		return err
	}
	return nil
}

// askPlacement writes PLACEMENT (version 0) on a new connection: the
// server pushes its placement version on it from then on. The answer is
// read by the connection's reader (notePlacement).
func askPlacement(ctx context.Context, nc net.Conn) error {
	if dl, ok := ctx.Deadline(); ok {
		nc.SetWriteDeadline(dl)
		defer nc.SetWriteDeadline(time.Time{})
	}
	frame := appendHeader(nil, opPlacement, 0, placementRequestID, 8)
	frame = binary.BigEndian.AppendUint64(frame, 0)
	_, err := nc.Write(frame)
	return err
}

// parseResponse splits an answer's payload: the OK result, or an *Error.
func parseResponse(p []byte) ([]byte, error) {
	if len(p) < 2 {
		return nil, errorf(CodeProtocol, "answer without a status")
	}
	status := Code(binary.BigEndian.Uint16(p))
	if status == CodeOK {
		return p[2:], nil
	}
	if len(p) < 4 || len(p) != 4+int(binary.BigEndian.Uint16(p[2:])) {
		return nil, errorf(CodeProtocol, "malformed error answer (status %d)", status)
	}
	return nil, &Error{Code: status, Message: string(p[4:])}
}

// usable: cn takes new calls (neither closed nor draining). Lock-free: read
// on every call.
func (cn *conn) usable() bool { return !cn.unusable.Load() }

// call sends one request on cn and waits for its answer or ctx (see SEAMS).
func (cn *conn) call(ctx context.Context, op byte, flags uint16, payload []byte) ([]byte, error) {
	return cn.callTimeout(ctx, 0, op, flags, payload)
}

var pendingPool = sync.Pool{New: func() interface{} { return &pendingCall{ch: make(chan callResult, 1)} }}

// clockBase: monoNow's origin (monotonic clock).
var clockBase = time.Now()

// monoNow: nanoseconds since clockBase, monotonic.
func monoNow() int64 { return int64(time.Since(clockBase)) }

// callTimeout sends one request on cn and waits for its answer, for ctx,
// or (timeout > 0) for timeout to pass: TIMEOUT. A call that gives up
// leaves cn's pending table at once (a late answer is dropped). If nothing
// at all was read on cn since the call was sent when its timeout passed,
// cn is taken for stalled: closed (its other calls fail UNAVAILABLE and
// are retried) and its endpoint marked down, as the C++ client does. A
// context's own deadline does not do that (it may be short on purpose).
// Timeouts need no timer per call: one timer per connection, armed for
// the earliest deadline, scans the pending table (expire).
func (cn *conn) callTimeout(ctx context.Context, timeout time.Duration, op byte, flags uint16, payload []byte) ([]byte, error) {
	pc := pendingPool.Get().(*pendingCall)
	pc.op, pc.ctx, pc.timeout, pc.deadline = op, ctx, timeout, 0
	id, err := cn.enqueue(pc, flags, payload)
	if err != nil {
		pc.ctx = nil
		pendingPool.Put(pc)
		return nil, err
	}
	res, _, err := cn.await(ctx, pc, id)
	return res, err
}

// callKeyCount is callTimeout for op with a payload of a str key and a
// u32 count, written straight into the write buffer (no payload buffer).
// start is the monoNow time the call was entered, 0 when timeout is 0.
// REQUIRES: len(key) <= 0xFFFF.
func (cn *conn) callKeyCount(ctx context.Context, timeout time.Duration, op byte, flags uint16, key string, count uint32) (res []byte, start int64, err error) {
	pc := pendingPool.Get().(*pendingCall)
	pc.op, pc.ctx, pc.timeout, pc.deadline = op, ctx, timeout, 0
	id, err := cn.enqueueKeyCount(pc, flags, key, count)
	if err != nil {
		pc.ctx = nil
		pendingPool.Put(pc)
		return nil, 0, err
	}
	return cn.await(ctx, pc, id)
}

// await waits for the result of pc, entered as id, or for ctx to end
// (then pc leaves the pending table: a late answer is dropped), and puts
// pc back in the pool. start: as callKeyCount's.
func (cn *conn) await(ctx context.Context, pc *pendingCall, id uint32) (res []byte, start int64, err error) {
	var r callResult
	if done := ctx.Done(); done == nil {
		r = <-pc.ch
	} else {
		select {
		case r = <-pc.ch:
		case <-done:
			r.err = ctxError(ctx, "no answer from "+cn.ep.addr)
			cn.mu.Lock()
			mine := cn.pending.remove(id, pc)
			cn.inFlight.Store(int32(cn.pending.len()))
			cn.mu.Unlock()
			if !mine {
				// Whoever took it from the table sends its result: wait for
				// that before reusing pc (it comes at once).
				<-pc.ch
			}
		}
	}
	if pc.timeout > 0 {
		start = pc.deadline - int64(pc.timeout)
	}
	pc.ctx = nil
	pendingPool.Put(pc)
	return r.payload, start, r.err
}

// enqueue gives pc (op, ctx, timeout and async set) a request id, enters
// it in the pending table (arming the deadline timer for pc.timeout) and
// queues its frame for the writer. From then on exactly one result reaches
// pc (pc.deliver). An error (cn closed) means pc was not entered.
func (cn *conn) enqueue(pc *pendingCall, flags uint16, payload []byte) (uint32, error) {
	cn.mu.Lock()
	id, err := cn.enterLocked(pc)
	if err != nil {
		cn.mu.Unlock()
		return 0, err
	}
	cn.wbuf = appendHeader(cn.wbuf, pc.op, flags, id, len(payload))
	cn.wbuf = append(cn.wbuf, payload...)
	cn.queuedLocked()
	return id, nil
}

// enqueueKeyCount is enqueue for a payload of a str key and a u32 count,
// written straight into the write buffer. REQUIRES: len(key) <= 0xFFFF.
func (cn *conn) enqueueKeyCount(pc *pendingCall, flags uint16, key string, count uint32) (uint32, error) {
	cn.mu.Lock()
	id, err := cn.enterLocked(pc)
	if err != nil {
		cn.mu.Unlock()
		return 0, err
	}
	b := appendHeader(cn.wbuf, pc.op, flags, id, 2+len(key)+4)
	b = binary.BigEndian.AppendUint16(b, uint16(len(key)))
	b = append(b, key...)
	cn.wbuf = binary.BigEndian.AppendUint32(b, count)
	cn.queuedLocked()
	return id, nil
}

// enterLocked gives pc a request id and enters it in the pending table
// (arming the deadline timer for pc.timeout). REQUIRES: cn.mu held.
func (cn *conn) enterLocked(pc *pendingCall) (uint32, error) {
	if cn.closed {
		return 0, cn.closeErr
	}
	pc.reads = cn.reads.Load()
	id := cn.pending.add(pc)
	cn.inFlight.Store(int32(cn.pending.len()))
	if pc.timeout > 0 {
		// In a batch, the clock read at its start: a deadline at most the
		// batch's delivery (microseconds) early, for one clock read per
		// batch instead of one per call.
		now := cn.batchAt
		if !cn.delivering {
			now = monoNow()
		}
		pc.deadline = now + int64(pc.timeout)
		if cn.timerAt == 0 || pc.deadline < cn.timerAt {
			cn.armLocked(pc.deadline, now)
		}
	}
	return id, nil
}

// queuedLocked: a frame was appended to wbuf; the reader or the writer
// sends it. REQUIRES: cn.mu held; returns with it released.
func (cn *conn) queuedLocked() {
	if cn.delivering {
		cn.batchIn++
	}
	cn.wakeWriter() // unlocks cn.mu
}

// armLocked sets cn's deadline timer to fire at `at` (monoNow time).
// REQUIRES: cn.mu held.
func (cn *conn) armLocked(at, now int64) {
	cn.timerAt = at
	d := time.Duration(at - now)
	if cn.timer == nil {
		cn.timer = time.AfterFunc(d, cn.expire)
	} else {
		cn.timer.Reset(d)
	}
}

// expire runs on cn's deadline timer: the calls whose timeout has passed
// leave the pending table and get TIMEOUT; the timer is armed again for
// the earliest deadline left. A call that timed out with nothing read on
// cn since it was sent (and its context still live) means cn stalled.
func (cn *conn) expire() {
	cn.mu.Lock()
	cn.timerAt = 0
	if cn.closed {
		cn.mu.Unlock()
		return
	}
	now := monoNow()
	var next int64
	expired := cn.pending.removeIf(func(pc *pendingCall) bool {
		switch {
		case pc.deadline == 0:
		case pc.deadline <= now:
			return true
		case next == 0 || pc.deadline < next:
			next = pc.deadline
		}
		return false
	})
	if next != 0 {
		cn.armLocked(next, now)
	}
	cn.inFlight.Store(int32(cn.pending.len()))
	reads := cn.reads.Load()
	cn.mu.Unlock()
	stalled := false
	for _, pc := range expired {
		// Read pc before handing it back: its caller reuses it at once.
		if pc.reads == reads && pc.ctx.Err() == nil {
			stalled = true
		}
		pc.deliver(nil, errorf(CodeTimeout, "no answer from %s within %v", cn.ep.addr, pc.timeout))
	}
	if stalled {
		// A hung (or stopped) server: avoid its endpoint for at least a
		// CallTimeout, what trying it again costs if it still hangs.
		cn.c.markDownFor(cn.ep, cn.c.opts.CallTimeout)
		cn.fail(errorf(CodeTimeout, "connection to %s stalled", cn.ep.addr), false)
	}
}

// close ends cn; its pending calls fail CANCELLED.
func (cn *conn) close() { cn.fail(nil, false) }

// fail closes cn (once): pending calls get err (CANCELLED when nil), the
// endpoint is marked down when markDown, onClose runs with err.
func (cn *conn) fail(err error, markDown bool) {
	cn.mu.Lock()
	if cn.closed {
		cn.mu.Unlock()
		return
	}
	cn.closed = true
	cn.unusable.Store(true)
	callErr := err
	if callErr == nil {
		callErr = errorf(CodeCancelled, "connection closed")
	}
	cn.closeErr = callErr
	pending := cn.pending.removeIf(func(*pendingCall) bool { return true })
	cn.inFlight.Store(0)
	if cn.pooled {
		cn.ep.full.Store(false)
		cn.ep.hot.CompareAndSwap(cn, nil)
	}
	if cn.timer != nil {
		cn.timer.Stop()
	}
	cn.mu.Unlock()
	cn.nc.Close()
	close(cn.done)
	if markDown {
		cn.c.markDown(cn.ep)
	}
	if err != nil && CodeOf(err) != CodeCancelled {
		cn.c.noteConnLost(cn.ep, err, !markDown && len(pending) == 0)
	}
	for _, pc := range pending {
		pc.deliver(nil, callErr)
	}
	cn.c.untrack(cn)
}

// frameBuffered: r holds a whole frame (no read needed for the next one).
func frameBuffered(r *bufio.Reader) bool {
	if r.Buffered() < 4 {
		return false
	}
	h, _ := r.Peek(4)
	return r.Buffered() >= 4+int(binary.BigEndian.Uint32(h))
}

// readLoop reads cn's frames until the connection ends: answers go to their
// pending calls, pushes to onPush. Answers read in one go make a batch
// (endBatch after its last).
func (cn *conn) readLoop() {
	r := bufio.NewReaderSize(cn.nc, 64*1024)
	var head [headerSize]byte
	defer cn.reportClose()
	// woken: answers of this batch that woke another goroutine, which may
	// call again (endBatch waits for their frames).
	woken, inBatch := 0, false
	for {
		if inBatch && !frameBuffered(r) {
			cn.endBatch(woken)
			woken, inBatch = 0, false
		}
		f, err := cn.readFrame(r, &head)
		if err == errConnFailed {
			return
		}
		if err != nil {
			cn.readEnded(err)
			return
		}
		if cn.reads.Add(1) == 1 {
			cn.endpointWorks()
		}
		switch {
		case f.flags != flagResponse && f.flags != flagResponse|flagPush:
			cn.fail(errorf(CodeProtocol, "frame with flags %#x from %s", f.flags, cn.ep.addr), true)
			return
		case f.op == opPlacement:
			// A push, or the answer to askPlacement (no call's): the
			// server's version, or an error from a server before the op.
			cn.c.notePlacement(f.body)
		case f.flags&flagPush != 0:
			if cn.onPush != nil {
				cn.onPush(f.op, append([]byte(nil), f.body...))
			}
		case f.op == opProtocolError || f.id == 0:
			cn.failRefused(f.body)
			return
		default:
			if pc := cn.takeAnswer(f.id, &inBatch, &woken); pc != nil {
				cn.deliverAnswer(pc, f)
			}
		}
	}
}

// errConnFailed: readFrame has failed the connection itself.
var errConnFailed = errors.New("connection failed")

// inFrame is one frame read: its header's fields and its body.
type inFrame struct {
	op    byte
	flags uint16
	id    uint32
	body  []byte
}

// readFrame reads the next frame. The body stays in r's buffer until the
// next read (deliver copies what outlives it); a body larger than the
// buffer gets its own. A read error comes back as it is; undecodable data
// fails cn and comes back as errConnFailed.
func (cn *conn) readFrame(r *bufio.Reader, head *[headerSize]byte) (inFrame, error) {
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return inFrame{}, err
	}
	length := binary.BigEndian.Uint32(head[0:4])
	if length < 8 || length > maxFrameSize-4 || head[4] != protoVersion {
		cn.fail(errorf(CodeProtocol, "undecodable data from %s", cn.ep.addr), true)
		return inFrame{}, errConnFailed
	}
	f := inFrame{op: head[5], flags: binary.BigEndian.Uint16(head[6:8]), id: binary.BigEndian.Uint32(head[8:12])}
	var err error
	if n := int(length - 8); n <= r.Size() {
		if f.body, err = r.Peek(n); err != nil {
			return inFrame{}, err
		}
		r.Discard(n)
	} else {
		f.body = make([]byte, n)
		if _, err = io.ReadFull(r, f.body); err != nil {
			return inFrame{}, err
		}
	}
	return f, nil
}

// endpointWorks: cn's first frame arrived, so its endpoint's run of
// failures ends (see markDownFor).
func (cn *conn) endpointWorks() {
	cn.ep.mu.Lock()
	cn.ep.failures = 0
	cn.ep.downUntil.Store(0)
	cn.ep.mu.Unlock()
}

// failRefused: the server refused our framing (PROTOCOL_ERROR, or an
// answer to id 0) and closes the connection; cn fails with its error.
func (cn *conn) failRefused(body []byte) {
	_, perr := parseResponse(body)
	if perr == nil {
		perr = errorf(CodeProtocol, "bad error frame from %s", cn.ep.addr)
	}
	cn.fail(perr, false)
}

// takeAnswer takes the pending call that id answers, nil for a late answer
// to a call that gave up. The first answer taken starts a batch; woken
// counts the answers that wake another goroutine.
func (cn *conn) takeAnswer(id uint32, inBatch *bool, woken *int) *pendingCall {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	pc := cn.pending.take(id)
	if pc == nil {
		return nil
	}
	cn.inFlight.Store(int32(cn.pending.len()))
	if !*inBatch {
		*inBatch, cn.delivering, cn.batchAt = true, true, monoNow()
		if cn.pooled {
			cn.ep.hot.Store(cn)
		}
	}
	if pc.async.done == nil || pc.async.wakes {
		*woken++
	}
	return pc
}

// deliverAnswer hands f, the answer to pc, to its caller: PROTOCOL for an
// answer of another opcode, else its result or error (named by the
// endpoint). SHUTTING_DOWN also stops new calls on cn and avoids its
// endpoint a while: the server closes the connection after answering.
func (cn *conn) deliverAnswer(pc *pendingCall, f inFrame) {
	if f.op != pc.op {
		pc.deliver(nil, errorf(CodeProtocol, "answer with opcode %#x to a request %#x from %s", f.op, pc.op, cn.ep.addr))
		return
	}
	res, rerr := parseResponse(f.body)
	if rerr != nil && CodeOf(rerr) == CodeShuttingDown {
		cn.mu.Lock()
		cn.draining = true
		cn.unusable.Store(true)
		if cn.pooled {
			cn.ep.full.Store(false)
		}
		cn.mu.Unlock()
		cn.c.markDown(cn.ep)
	}
	if rerr != nil {
		rerr.(*Error).Message = cn.ep.addr + ": " + rerr.(*Error).Message
	}
	pc.deliver(res, rerr)
}

// readEnded fails cn after a read error. An orderly close of an idle
// connection (the server's idle timeout) is no reason to avoid the
// endpoint.
func (cn *conn) readEnded(err error) {
	cn.mu.Lock()
	idle := cn.pending.len() == 0
	cn.mu.Unlock()
	eof := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	msg := "connection closed by " + cn.ep.addr
	if !eof {
		msg = "read from " + cn.ep.addr + ": " + netReason(err).Error()
	}
	cn.fail(errorf(CodeUnavailable, "%s", msg), !(idle && eof))
}

// reportClose runs onClose, when set, with the error cn closed with (nil
// for a close of our own).
func (cn *conn) reportClose() {
	if cn.onClose == nil {
		return
	}
	cn.mu.Lock()
	e := cn.closeErr
	cn.mu.Unlock()
	if e != nil && CodeOf(e) == CodeCancelled {
		e = nil
	}
	cn.onClose(e)
}

// track / untrack keep the set of open connections Close must end.
func (c *Client) track(cn *conn) bool {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	if c.closed {
		return false
	}
	c.conns[cn] = struct{}{}
	return true
}

func (c *Client) untrack(cn *conn) {
	c.connMu.Lock()
	delete(c.conns, cn)
	c.connMu.Unlock()
}
