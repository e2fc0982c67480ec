package seqd

// The transport: endpoints, a small pool of pipelined connections per
// endpoint, frames in and out, and the seams other parts of the package
// build on.
//
// SEAMS (for cluster routing and the subscription keeper, in this package):
//
//   - c.call(ctx, endpoint, op, flags, payload) (result, err): ONE attempt
//     of a request on a pooled connection to `endpoint` ("host:port"; any
//     address, also one not in Options.Endpoints: it is added to the known
//     endpoints). The result is the OK answer's bytes after the status; a
//     non-OK answer is an *Error with the server's code and message. No
//     retry, no failover; ctx bounds the attempt (connect included).
//
//   - c.callKeyed(ctx, key, op, payload): the full call path for a keyed
//     op: asks c.router (if set) for the key's owner, sends there with
//     NO_FORWARD if the router says so, and on failure falls back to the
//     failover order with retries and backoff (client.go, invoke). An
//     empty key means "not routed" (c.callAny does that).
//
//   - router (below): set c.router before the first call (New does it when
//     Options.RouteByShard and a router constructor is registered in
//     newRouter). route(key) is asked on every keyed call's first attempt;
//     onWrongOwner() is called when a routed attempt failed (WRONG_OWNER,
//     or its endpoint was unreachable / timed out / shutting down): refresh
//     the map (rate-limit inside). The failed attempt is retried unrouted
//     (without NO_FORWARD, so any instance forwards it).
//
//   - c.openConn(ctx, endpoint, onPush, onClose) (*conn, error): a
//     DEDICATED connection outside the pool (connected, TLS handshaken,
//     authenticated), for subscriptions: every PUSH frame it receives goes
//     to onPush(op, payload) (payload starts with the u16 status, as on the
//     wire), called from the connection's reader goroutine, in arrival
//     order, never concurrently; do not block in it. onClose(err) runs once
//     when the connection ends (err says why; nil after cn.close()), after
//     the last onPush. Make calls on it with cn.call(ctx, op, flags,
//     payload); close it with cn.close().
//
//   - pooled connections may also get pushes (a server never pushes without
//     SUBSCRIBE, so normally none): they go to c.poolPush if set.
//
// Thread safety: every method here may be called from any goroutine.

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"math/rand"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// router is cluster routing's seam (see above). Implementations must be
// safe for concurrent use and must not block (answer from what they have).
type router interface {
	// route: the endpoint ("host:port") that owns key, whether to send it
	// with NO_FORWARD, and ok = false when there is no answer (no map yet,
	// no live owner): the call then goes the ordinary way.
	route(key string) (endpoint string, noForward bool, ok bool)
	// onWrongOwner: a routed call found the map wrong or its owner
	// unreachable; fetch the map again (in the background).
	onWrongOwner()
}

// newRouter, when not nil, makes the router for Options.RouteByShard
// (registered by the routing file's init). Without it RouteByShard is
// accepted and calls go the ordinary way.
var newRouter func(c *Client) router

// endpoint is one server address with its pool and failover state.
type endpoint struct {
	addr  string
	index int // position in c.eps

	mu        sync.Mutex
	slots     []*slot
	failures  int       // consecutive connection failures
	downUntil time.Time // avoid until then (failover backoff)
	next      uint32    // round-robin over slots
}

// slot holds one pooled connection, or the dial making it.
type slot struct {
	cn      *conn
	dialing chan struct{} // closed when the dial ends
	err     error         // the last dial's error (read after dialing closes)
}

// conn is one TCP (or TLS) connection with its pipelined calls.
type conn struct {
	c  *Client
	ep *endpoint
	nc net.Conn

	onPush  func(op byte, payload []byte)
	onClose func(err error)

	mu       sync.Mutex
	wbuf     []byte // frames waiting to be written
	writing  bool   // a caller is writing (it writes wbuf until empty)
	spare    []byte // the buffer the last write used, for reuse
	pending  map[uint32]*pendingCall
	nextID   uint32
	closed   bool
	closeErr error
	draining bool // SHUTTING_DOWN seen: no new calls

	reads atomic.Uint64 // frames read so far (stall detection)
	done  chan struct{}
}

type pendingCall struct {
	op    byte
	ch    chan callResult // buffered 1; exactly one result per use
	reads uint64          // cn.reads when sent
}

type callResult struct {
	payload []byte
	err     error
}

// ---------------------------------------------------------------- endpoints

// endpointFor is the known endpoint named addr, added if new.
func (c *Client) endpointFor(addr string) *endpoint {
	c.epMu.RLock()
	ep := c.epByAddr[addr]
	c.epMu.RUnlock()
	if ep != nil {
		return ep
	}
	c.epMu.Lock()
	defer c.epMu.Unlock()
	if ep = c.epByAddr[addr]; ep == nil {
		ep = &endpoint{addr: addr, index: len(c.eps), slots: make([]*slot, c.opts.ConnsPerEndpoint)}
		for i := range ep.slots {
			ep.slots[i] = &slot{}
		}
		c.eps = append(c.eps, ep)
		c.epByAddr[addr] = ep
	}
	return ep
}

// pickEndpoint: the first endpoint at or after start (in the failover
// order) not marked down; if all are, the one whose backoff ends first.
// Only Options.Endpoints take part (not owners the router added).
func (c *Client) pickEndpoint(start int) *endpoint {
	n := len(c.opts.Endpoints)
	now := time.Now()
	c.epMu.RLock()
	eps := c.eps[:n]
	c.epMu.RUnlock()
	best := eps[start%n]
	bestUntil := best.down()
	for i := 0; i < n; i++ {
		ep := eps[(start+i)%n]
		until := ep.down()
		if !until.After(now) {
			return ep
		}
		if until.Before(bestUntil) {
			best, bestUntil = ep, until
		}
	}
	return best
}

func (ep *endpoint) down() time.Time {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return ep.downUntil
}

// markDown avoids ep for a backoff that doubles per consecutive failure.
func (c *Client) markDown(ep *endpoint) {
	ep.mu.Lock()
	ep.failures++
	ep.downUntil = time.Now().Add(c.backoff(ep.failures))
	ep.mu.Unlock()
	n := int32(len(c.opts.Endpoints))
	if ep.index < int(n) {
		c.current.CompareAndSwap(int32(ep.index), (int32(ep.index)+1)%n)
	}
}

// backoff after `failures` consecutive failures: BackoffInitial doubled per
// failure, at most BackoffMax.
func (c *Client) backoff(failures int) time.Duration {
	d := c.opts.BackoffInitial
	for i := 1; i < failures && d < c.opts.BackoffMax; i++ {
		d *= 2
	}
	if d > c.opts.BackoffMax {
		d = c.opts.BackoffMax
	}
	return d
}

// jittered: uniform in [b/2, b] for b = backoff(attempt).
func (c *Client) jittered(attempt int) time.Duration {
	b := c.backoff(attempt)
	if b <= 1 {
		return b
	}
	return b/2 + time.Duration(rand.Int63n(int64(b/2)+1))
}

// ---------------------------------------------------------------- the pool

// pooled is an open connection of ep's pool (round robin over its slots),
// dialing one if needed. Concurrent callers wait for one dial per slot.
func (c *Client) pooled(ctx context.Context, ep *endpoint) (*conn, error) {
	ep.mu.Lock()
	s := ep.slots[ep.next%uint32(len(ep.slots))]
	ep.next++
	for {
		if s.cn != nil && s.cn.usable() {
			cn := s.cn
			ep.mu.Unlock()
			return cn, nil
		}
		if s.dialing == nil {
			break
		}
		ch := s.dialing
		ep.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctxError(ctx, "connect to "+ep.addr)
		}
		ep.mu.Lock()
		if s.dialing == nil && (s.cn == nil || !s.cn.usable()) && s.err != nil {
			// The dial we waited for failed. Its own context's end is no
			// answer for us: dial again; any other failure is.
			if code := CodeOf(s.err); code != CodeCancelled && code != CodeTimeout {
				err := s.err
				ep.mu.Unlock()
				return nil, err
			}
			break
		}
	}
	ch := make(chan struct{})
	s.dialing, s.cn, s.err = ch, nil, nil
	ep.mu.Unlock()

	cn, err := c.dial(ctx, ep, c.poolPush, nil)

	ep.mu.Lock()
	s.dialing, s.cn, s.err = nil, cn, err
	ep.mu.Unlock()
	close(ch)
	return cn, err
}

// call is ONE attempt of op on a pooled connection to endpoint (see SEAMS).
func (c *Client) call(ctx context.Context, endpoint string, op byte, flags uint16, payload []byte) ([]byte, error) {
	return c.callEP(ctx, c.endpointFor(endpoint), 0, op, flags, payload)
}

// callEP is one attempt on ep's pool: bounded by ctx and, when timeout > 0,
// by timeout (a TIMEOUT error, retryable).
func (c *Client) callEP(ctx context.Context, ep *endpoint, timeout time.Duration, op byte, flags uint16, payload []byte) ([]byte, error) {
	if c.isClosed() {
		return nil, errorf(CodeCancelled, "client closed")
	}
	cn, err := c.pooledFast(ep)
	if cn == nil {
		dctx, cancel := ctx, context.CancelFunc(func() {})
		if timeout > 0 {
			dctx, cancel = context.WithTimeout(ctx, timeout)
		}
		cn, err = c.pooled(dctx, ep)
		cancel()
		if err != nil {
			if ctx.Err() == nil && CodeOf(err) == CodeTimeout {
				err = errorf(CodeTimeout, "connect to %s: no answer within %v", ep.addr, timeout)
			}
			return nil, err
		}
	}
	return cn.callTimeout(ctx, timeout, op, flags, payload)
}

// pooledFast is the open connection of ep's next slot, nil if it has none
// (then pooled dials).
func (c *Client) pooledFast(ep *endpoint) (*conn, error) {
	ep.mu.Lock()
	s := ep.slots[ep.next%uint32(len(ep.slots))]
	cn := s.cn
	if cn != nil && cn.usable() {
		ep.next++
		ep.mu.Unlock()
		return cn, nil
	}
	ep.mu.Unlock()
	return nil, nil
}

// openConn is a dedicated connection for subscriptions (see SEAMS).
func (c *Client) openConn(ctx context.Context, endpoint string, onPush func(op byte, payload []byte), onClose func(err error)) (*conn, error) {
	if c.isClosed() {
		return nil, errorf(CodeCancelled, "client closed")
	}
	return c.dial(ctx, c.endpointFor(endpoint), onPush, onClose)
}

// ---------------------------------------------------------------- a connection

// dial connects (bounded by ctx and Options.ConnectTimeout), does the TLS
// handshake, sends AUTH (with Options.Token) and waits for its answer
// before any other frame, then starts the reader and writer. A refused
// token is UNAUTHENTICATED (not retried); any other failure UNAVAILABLE
// (the endpoint is marked down).
func (c *Client) dial(ctx context.Context, ep *endpoint, onPush func(byte, []byte), onClose func(error)) (*conn, error) {
	dctx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(dctx, "tcp", ep.addr)
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
			return nil, err
		}
	}
	ep.mu.Lock()
	ep.failures = 0
	ep.downUntil = time.Time{}
	ep.mu.Unlock()
	cn := &conn{c: c, ep: ep, nc: nc, onPush: onPush, onClose: onClose,
		pending: make(map[uint32]*pendingCall), nextID: 1, done: make(chan struct{})}
	if !c.track(cn) {
		nc.Close()
		return nil, errorf(CodeCancelled, "client closed")
	}
	go cn.readLoop()
	return cn, nil
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

func (cn *conn) usable() bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return !cn.closed && !cn.draining
}

// call sends one request on cn and waits for its answer or ctx (see SEAMS).
func (cn *conn) call(ctx context.Context, op byte, flags uint16, payload []byte) ([]byte, error) {
	return cn.callTimeout(ctx, 0, op, flags, payload)
}

var (
	pendingPool = sync.Pool{New: func() interface{} { return &pendingCall{ch: make(chan callResult, 1)} }}
	timerPool   sync.Pool
)

// callTimeout sends one request on cn and waits for its answer, for ctx,
// or (timeout > 0) for timeout to pass: TIMEOUT. A call that gives up
// leaves cn's pending table at once (a late answer is dropped). If nothing
// at all was read on cn since the call was sent when its timeout passed,
// cn is taken for stalled: closed (its other calls fail UNAVAILABLE and
// are retried) and its endpoint marked down, as the C++ client does. A
// context's own deadline does not do that (it may be short on purpose).
func (cn *conn) callTimeout(ctx context.Context, timeout time.Duration, op byte, flags uint16, payload []byte) ([]byte, error) {
	pc := pendingPool.Get().(*pendingCall)
	pc.op = op
	cn.mu.Lock()
	if cn.closed {
		err := cn.closeErr
		cn.mu.Unlock()
		pendingPool.Put(pc)
		return nil, err
	}
	pc.reads = cn.reads.Load()
	id := cn.nextID
	for id == 0 || cn.pending[id] != nil {
		id++
	}
	cn.nextID = id + 1
	cn.pending[id] = pc
	cn.wbuf = appendHeader(cn.wbuf, op, flags, id, len(payload))
	cn.wbuf = append(cn.wbuf, payload...)
	if cn.writing {
		// The caller writing now writes ours too (write combining).
		cn.mu.Unlock()
	} else {
		cn.writing = true
		cn.flush() // unlocks cn.mu
	}
	var timerC <-chan time.Time
	var timer *time.Timer
	if timeout > 0 {
		if t, ok := timerPool.Get().(*time.Timer); ok {
			t.Reset(timeout)
			timer = t
		} else {
			timer = time.NewTimer(timeout)
		}
		timerC = timer.C
	}
	var err *Error
	select {
	case r := <-pc.ch:
		releaseTimer(timer)
		pendingPool.Put(pc)
		return r.payload, r.err
	case <-ctx.Done():
		releaseTimer(timer)
		err = ctxError(ctx, "no answer from "+cn.ep.addr)
	case <-timerC:
		timerPool.Put(timer) // fired and drained
		err = errorf(CodeTimeout, "no answer from %s within %v", cn.ep.addr, timeout)
	}
	cn.mu.Lock()
	mine := cn.pending[id] == pc
	if mine {
		delete(cn.pending, id)
	}
	cn.mu.Unlock()
	if !mine {
		// Whoever took it from the table sends its result: wait for that
		// before reusing pc (it comes at once).
		<-pc.ch
	}
	stalled := timerC != nil && err.Code == CodeTimeout && ctx.Err() == nil && cn.reads.Load() == pc.reads
	pendingPool.Put(pc)
	if stalled {
		cn.fail(errorf(CodeTimeout, "connection to %s stalled", cn.ep.addr), true)
	}
	return nil, err
}

func releaseTimer(t *time.Timer) {
	if t == nil {
		return
	}
	if !t.Stop() {
		<-t.C
	}
	timerPool.Put(t)
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
	callErr := err
	if callErr == nil {
		callErr = errorf(CodeCancelled, "connection closed")
	}
	cn.closeErr = callErr
	pending := cn.pending
	cn.pending = nil
	cn.mu.Unlock()
	cn.nc.Close()
	close(cn.done)
	if markDown {
		cn.c.markDown(cn.ep)
	}
	for _, pc := range pending {
		pc.ch <- callResult{err: callErr}
	}
	cn.c.untrack(cn)
}

// flush writes wbuf until it is empty: frames other callers append
// meanwhile go out with the next write, so concurrent calls share write
// calls. REQUIRES: cn.mu held and cn.writing set by this caller; returns
// with cn.mu released and cn.writing cleared.
func (cn *conn) flush() {
	// Let the goroutines the last answers woke queue their frames first:
	// one write then carries many (fewer syscalls here and in the server).
	cn.mu.Unlock()
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
			cn.writing = false
			cn.mu.Unlock()
			cn.fail(errorf(CodeUnavailable, "write to %s: %v", cn.ep.addr, netReason(err)), true)
			return
		}
	}
	cn.writing = false
	cn.mu.Unlock()
}

func (cn *conn) readLoop() {
	r := bufio.NewReaderSize(cn.nc, 64*1024)
	var head [headerSize]byte
	var err error
	defer func() {
		if cn.onClose != nil {
			cn.mu.Lock()
			e := cn.closeErr
			cn.mu.Unlock()
			if e != nil && CodeOf(e) == CodeCancelled {
				e = nil
			}
			cn.onClose(e)
		}
	}()
	for {
		if _, err = io.ReadFull(r, head[:]); err != nil {
			break
		}
		length := binary.BigEndian.Uint32(head[0:4])
		if length < 8 || length > maxFrameSize-4 || head[4] != protoVersion {
			cn.fail(errorf(CodeProtocol, "undecodable data from %s", cn.ep.addr), true)
			return
		}
		op, flags, id := head[5], binary.BigEndian.Uint16(head[6:8]), binary.BigEndian.Uint32(head[8:12])
		body := make([]byte, length-8)
		if _, err = io.ReadFull(r, body); err != nil {
			break
		}
		cn.reads.Add(1)
		if flags != flagResponse && flags != flagResponse|flagPush {
			cn.fail(errorf(CodeProtocol, "frame with flags %#x from %s", flags, cn.ep.addr), true)
			return
		}
		if flags&flagPush != 0 {
			if cn.onPush != nil {
				cn.onPush(op, body)
			}
			continue
		}
		if op == opProtocolError || id == 0 {
			// The server refused our framing and closes the connection.
			_, perr := parseResponse(body)
			if perr == nil {
				perr = errorf(CodeProtocol, "bad error frame from %s", cn.ep.addr)
			}
			cn.fail(perr, false)
			return
		}
		cn.mu.Lock()
		pc := cn.pending[id]
		if pc != nil {
			delete(cn.pending, id)
		}
		cn.mu.Unlock()
		if pc == nil {
			continue // a late answer to a call that gave up
		}
		if op != pc.op {
			pc.ch <- callResult{err: errorf(CodeProtocol, "answer with opcode %#x to a request %#x from %s", op, pc.op, cn.ep.addr)}
			continue
		}
		res, rerr := parseResponse(body)
		if rerr != nil && CodeOf(rerr) == CodeShuttingDown {
			// The server closes this connection after answering: no new
			// calls on it; its endpoint is avoided for a while.
			cn.mu.Lock()
			cn.draining = true
			cn.mu.Unlock()
			cn.c.markDown(cn.ep)
		}
		if rerr != nil {
			rerr.(*Error).Message = cn.ep.addr + ": " + rerr.(*Error).Message
		}
		pc.ch <- callResult{payload: res, err: rerr}
	}
	// An orderly close of an idle connection (the server's idle timeout)
	// is no reason to avoid the endpoint.
	cn.mu.Lock()
	idle := len(cn.pending) == 0
	cn.mu.Unlock()
	eof := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	msg := "connection closed by " + cn.ep.addr
	if !eof {
		msg = "read from " + cn.ep.addr + ": " + netReason(err).Error()
	}
	cn.fail(errorf(CodeUnavailable, "%s", msg), !(idle && eof))
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
