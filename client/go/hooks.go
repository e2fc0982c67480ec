package seqd

// Hooks: what a Client tells the application about its retries, failovers
// and connections (Options.Logger, Options.OnRetry, Options.OnFailover).
// None of them runs on the hot path of a call that succeeds at its first
// attempt. Thread safety: hooks are called from any goroutine, also
// concurrently; they must be safe for that and must not block.

import (
	"time"
)

// Logger receives the client's log records: a message and key-value pairs,
// as log/slog's. Its method set is a subset of *slog.Logger's (Go 1.21),
// so a *slog.Logger is a Logger as it is; for another logging library, a
// few lines of adapter do. The client logs only what happens off the
// common path: retries (Warn), failovers (Warn), connections lost (Warn;
// Debug for an idle one the server closed) and made (Info for a
// reconnect, Debug for a first connection).
// Errors a call returns are the caller's to log, not the client's.
type Logger interface {
	Debug(msg string, args ...any)
	Info(msg string, args ...any)
	Warn(msg string, args ...any)
	Error(msg string, args ...any)
}

// RetryEvent is a failed attempt of a call that the client tries again
// (Options.OnRetry).
type RetryEvent struct {
	Op       string        // the call's op, as docs/protocol.md names it ("NEXT_IDS")
	Attempt  int           // the attempt that failed, from 1
	Endpoint string        // where it went ("host:port")
	Err      error         // why it failed (an *Error with a retryable code)
	Backoff  time.Duration // the wait before the next attempt
}

// FailoverEvent is a call's next attempt going to another endpoint than
// its failed one (Options.OnFailover).
type FailoverEvent struct {
	Op      string // the call's op ("NEXT_IDS")
	From    string // the endpoint that failed
	To      string // the endpoint the next attempt goes to
	Attempt int    // the attempt that goes to To, from 2
	Err     error  // why the attempt on From failed
}

// noteRetry reports a retry to the counters, the logger and OnRetry.
func (c *Client) noteRetry(ev RetryEvent) {
	c.counters.retries.Add(1)
	if l := c.opts.Logger; l != nil {
		l.Warn("seqd: attempt failed, retrying", "op", ev.Op, "attempt", ev.Attempt,
			"endpoint", ev.Endpoint, "code", CodeOf(ev.Err).String(), "err", ev.Err.Error(),
			"backoff", ev.Backoff)
	}
	if f := c.opts.OnRetry; f != nil {
		f(ev)
	}
}

// noteFailover reports a failover to the counters, the logger and
// OnFailover.
func (c *Client) noteFailover(ev FailoverEvent) {
	c.counters.failovers.Add(1)
	if l := c.opts.Logger; l != nil {
		l.Warn("seqd: failing over", "op", ev.Op, "from", ev.From, "to", ev.To,
			"attempt", ev.Attempt, "err", errText(ev.Err))
	}
	if f := c.opts.OnFailover; f != nil {
		f(ev)
	}
}

// noteConnected reports a connection made to ep; again: ep had one
// before (a reconnect).
func (c *Client) noteConnected(ep *endpoint, again bool) {
	c.counters.connects.Add(1)
	if again {
		c.counters.reconnects.Add(1)
	}
	if l := c.opts.Logger; l != nil {
		if again {
			l.Info("seqd: reconnected", "endpoint", ep.addr)
		} else {
			l.Debug("seqd: connected", "endpoint", ep.addr)
		}
	}
}

// noteConnLost reports a connection that ended with err (not closed by
// the client); quiet: no call was lost with it and its endpoint is not
// suspect (the server closed an idle connection), logged at Debug.
func (c *Client) noteConnLost(ep *endpoint, err error, quiet bool) {
	c.counters.connsLost.Add(1)
	if l := c.opts.Logger; l != nil {
		log := l.Warn
		if quiet {
			log = l.Debug
		}
		log("seqd: connection lost", "endpoint", ep.addr, "code", CodeOf(err).String(),
			"err", err.Error())
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
