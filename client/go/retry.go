package seqd

// A call's attempts by the retry rules (package comment, client.go): the
// limit a call retries within (its context's deadline, else
// Options.RetryBudget), the attempt cap, the backoff between attempts,
// and the error a call ends with. Runs on the caller's goroutine; thread
// safety as Client's.

import (
	"context"
	"errors"
	"math"
	"strconv"
	"time"
)

const (
	// defaultRetryBudget: Options.RetryBudget's default.
	defaultRetryBudget = 10 * time.Second
	// noAttemptCap: Options.MaxAttempts 0 (no cap) as New stores it.
	noAttemptCap = math.MaxInt32
	// minAttemptTime: no attempt starts with less of the budget left.
	minAttemptTime = time.Millisecond
)

// errNilContext is the error of a call made with a nil context.
func errNilContext(what string) *Error {
	return errorf(CodeInvalidArgument, "%s: nil context (pass context.Background() or context.TODO())", what)
}

// callLimit is what bounds one call: its context's deadline, or, for a
// context without one, Options.RetryBudget from the call's start.
type callLimit struct {
	budget time.Duration // 0: the context's deadline bounds the call
	end    int64         // monoNow time the budget ends
}

// limitFor is the limit of a call under ctx that starts now, or started
// with prior's attempt.
func (c *Client) limitFor(ctx context.Context, prior *failedAttempt) callLimit {
	if _, ok := ctx.Deadline(); ok {
		return callLimit{}
	}
	start := int64(0)
	if prior != nil {
		start = prior.start
	}
	if start == 0 {
		start = monoNow()
	}
	return callLimit{budget: c.opts.RetryBudget, end: start + int64(c.opts.RetryBudget)}
}

// left is the time left of the budget (meaningful when budget > 0).
func (l callLimit) left() time.Duration { return time.Duration(l.end - monoNow()) }

// callState is one call's progress through its attempts.
type callState struct {
	op       byte
	attempt  int       // attempts made so far
	next     int       // index into Options.Endpoints where the next attempt starts
	routable bool      // the next attempt may go where the router says
	failedEP *endpoint // the endpoint of the last failed attempt, nil if none
	lastErr  error     // the last failed attempt's error
}

// failedAttempt is a first attempt made elsewhere (async.go) that failed
// with a retryable error; invokeAfter continues its call.
type failedAttempt struct {
	ep     *endpoint
	routed bool
	err    error
	start  int64 // monoNow time the attempt began (the call's start), 0 if unknown
}

// invoke runs a call's attempts by the retry rules. The first attempt
// goes to the key's owner when the router knows it; any other to the
// current endpoint, then the next ones in order.
func (c *Client) invoke(ctx context.Context, key string, op byte, payload []byte) ([]byte, error) {
	if ctx == nil {
		return nil, errNilContext(opName(op))
	}
	return c.invokeAfter(ctx, key, op, payload, nil)
}

// invokeAfter is invoke, continuing after prior when it is set (its
// attempt counts as the call's first). REQUIRES: ctx not nil.
func (c *Client) invokeAfter(ctx context.Context, key string, op byte, payload []byte, prior *failedAttempt) ([]byte, error) {
	if prior == nil {
		c.counters.calls.Add(1)
	}
	if c.isClosed() {
		return nil, c.counters.failed(errorf(CodeCancelled, "client closed"))
	}
	lim := c.limitFor(ctx, prior)
	cs := callState{op: op, next: int(c.current.Load()), routable: c.router != nil && key != ""}
	if prior != nil {
		cs.attempt, cs.failedEP, cs.lastErr = 1, prior.ep, prior.err
		cs.routable = cs.routable && !prior.routed
		cs.next = c.following(prior.ep)
		if prior.routed && CodeOf(prior.err) == CodeWrongOwner {
			// Sent again at once, the ordinary way (a server forwards it).
			c.noteRetry(RetryEvent{Op: opName(op), Attempt: 1, Endpoint: prior.ep.addr, Err: prior.err})
		} else if err := c.waitBackoff(ctx, &cs, lim); err != nil {
			return nil, c.counters.failed(err)
		}
	}
	for {
		res, again, err := c.attempt(ctx, key, payload, &cs, lim)
		if err == nil {
			return res, nil
		}
		if !again {
			return nil, c.counters.failed(err)
		}
		if err := c.waitBackoff(ctx, &cs, lim); err != nil {
			return nil, c.counters.failed(err)
		}
	}
}

// attempt makes cs's next attempt. It returns the result, or the error
// with again = true when the call goes on (the error is then cs.lastErr)
// or false when the error is the call's.
func (c *Client) attempt(ctx context.Context, key string, payload []byte, cs *callState, lim callLimit) (res []byte, again bool, err error) {
	cs.attempt++
	var ep *endpoint
	var flags uint16
	routed := false
	if cs.routable {
		if addr, noForward, ok := c.router.route(key); ok {
			ep, routed = c.endpointFor(addr), true
			if noForward {
				flags |= flagNoForward
			}
		}
		c.router.sent(routed)
	}
	if ep == nil {
		ep = c.pickEndpoint(cs.next)
	}
	if cs.failedEP != nil && ep != cs.failedEP {
		c.noteFailover(FailoverEvent{Op: opName(cs.op), From: cs.failedEP.addr, To: ep.addr,
			Attempt: cs.attempt, Err: cs.lastErr})
	}
	timeout := c.opts.CallTimeout
	if lim.budget > 0 {
		left := lim.budget
		if cs.attempt > 1 {
			left = lim.left()
		}
		if left < minAttemptTime {
			return nil, false, c.budgetError(cs, lim)
		}
		if left < timeout {
			timeout = left
		}
	}
	res, err = c.callEP(ctx, ep, timeout, cs.op, flags, payload)
	if err == nil {
		if !routed && ep.index < len(c.opts.Endpoints) {
			c.current.Store(int32(ep.index))
		}
		return res, false, nil
	}
	if ctx.Err() != nil {
		return nil, false, c.endedError(ctx, cs)
	}
	code := CodeOf(err)
	cs.lastErr, cs.failedEP = err, ep
	if routed {
		cs.routable = false // the next attempts go the ordinary way
		switch code {
		case CodeWrongOwner, CodeUnavailable, CodeTimeout, CodeShuttingDown:
			c.router.onWrongOwner()
		}
		if code == CodeWrongOwner && cs.attempt < c.opts.MaxAttempts {
			// Sent again at once, the ordinary way (a server forwards it).
			c.noteRetry(RetryEvent{Op: opName(cs.op), Attempt: cs.attempt, Endpoint: ep.addr, Err: err})
			cs.next = int(c.current.Load())
			return c.attempt(ctx, key, payload, cs, lim)
		}
	}
	if !code.Retryable() {
		return nil, false, err
	}
	if cs.attempt >= c.opts.MaxAttempts {
		return nil, false, attemptsError(err, cs.attempt)
	}
	if lim.budget > 0 && lim.left() < minAttemptTime {
		return nil, false, c.budgetError(cs, lim)
	}
	cs.next = c.following(ep)
	return nil, true, err
}

// following is where the attempt after one that failed on ep starts: the
// next endpoint in order (the current one for an endpoint the router
// added).
func (c *Client) following(ep *endpoint) int {
	if ep.index < len(c.opts.Endpoints) {
		return ep.index + 1
	}
	return int(c.current.Load())
}

// waitBackoff waits the jittered backoff after cs's failed attempt (cut to
// half the budget left when it would end past it), reporting the retry
// first. An error ends the call: ctx ended, the client closed, or the
// budget is spent.
func (c *Client) waitBackoff(ctx context.Context, cs *callState, lim callLimit) error {
	d := c.jittered(cs.attempt)
	if lim.budget > 0 {
		left := lim.left()
		if left < minAttemptTime {
			return c.budgetError(cs, lim)
		}
		if d >= left {
			d = left / 2 // leave the next attempt some time
		}
	}
	c.noteRetry(RetryEvent{Op: opName(cs.op), Attempt: cs.attempt, Endpoint: cs.failedEP.addr,
		Err: cs.lastErr, Backoff: d})
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return c.endedError(ctx, cs)
	case <-c.closing:
		return errorf(CodeCancelled, "client closed")
	}
}

// endedError is the error of a call whose context ended: TIMEOUT for a
// deadline, CANCELLED otherwise (and after Close), naming the last failed
// attempt's error, if any.
func (c *Client) endedError(ctx context.Context, cs *callState) error {
	if c.isClosed() {
		return errorf(CodeCancelled, "client closed")
	}
	e := ctxError(ctx, opName(cs.op))
	if cs.lastErr != nil {
		e.Message += " (" + strconv.Itoa(cs.attempt) + " attempts; last: " + brief(cs.lastErr) + ")"
	}
	return e
}

// budgetError is the error of a call that spent Options.RetryBudget.
func (c *Client) budgetError(cs *callState, lim callLimit) error {
	msg := opName(cs.op) + ": no answer within the retry budget " + lim.budget.String() +
		" (" + strconv.Itoa(cs.attempt) + " attempts"
	if cs.lastErr != nil {
		msg += "; last: " + brief(cs.lastErr)
	}
	return &Error{Code: CodeTimeout, Message: msg + ")"}
}

// attemptsError is err, the last of n attempts, saying so.
func attemptsError(err error, n int) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	e2 := *e
	if n > 1 {
		e2.Message += " (after " + strconv.Itoa(n) + " attempts)"
	}
	return &e2
}

// brief is err as "CODE: message", without the "seqd: " prefix.
func brief(err error) string {
	var e *Error
	if errors.As(err, &e) {
		if e.Message == "" {
			return e.Code.String()
		}
		return e.Code.String() + ": " + e.Message
	}
	return err.Error()
}
