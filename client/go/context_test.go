package seqd

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"seqd.dev/go/internal/testseqd"
)

// outcome is what one call in flight across an outage saw.
type outcome struct {
	id   int64
	err  error
	took time.Duration
}

// callInBackground starts NextID(key) under ctx and returns where its
// outcome arrives.
func callInBackground(c *Client, ctx context.Context, key string) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		start := time.Now()
		id, err := c.NextID(ctx, key)
		ch <- outcome{id, err, time.Since(start)}
	}()
	return ch
}

// TestCallRidesOutAKill: seqd is killed (SIGKILL) and started again ~1.5 s
// later while calls are in flight. With the default options, a call whose
// context deadline is longer than the outage, and one with no deadline
// (RetryBudget), succeed after the restart; one whose deadline is shorter
// fails at its deadline with an error that is context.DeadlineExceeded.
func TestCallRidesOutAKill(t *testing.T) {
	s := testseqd.Start(t)
	c := newClient(t, Options{Endpoints: []string{s.Addr()}})
	before, err := c.NextID(ctxT(t, 5*time.Second), "n_outage")
	if err != nil {
		t.Fatal(err)
	}
	m0 := c.Metrics()
	s.Kill()
	killed := time.Now()
	long := callInBackground(c, ctxT(t, 8*time.Second), "n_outage")
	noDeadline := callInBackground(c, context.Background(), "n_outage")
	short := callInBackground(c, ctxT(t, 600*time.Millisecond), "n_outage")
	time.Sleep(1500 * time.Millisecond)
	s.Start()
	outage := time.Since(killed)

	for name, ch := range map[string]<-chan outcome{"8s deadline": long, "no deadline": noDeadline} {
		o := <-ch
		if o.err != nil {
			t.Fatalf("%s: %v after %v (outage %v)", name, o.err, o.took, outage)
		}
		if o.id <= before || o.took < 1400*time.Millisecond {
			t.Fatalf("%s: ID %d after %v; want an ID above %d, answered after the restart", name, o.id, o.took, before)
		}
	}
	o := <-short
	if !errors.Is(o.err, context.DeadlineExceeded) || CodeOf(o.err) != CodeTimeout {
		t.Fatalf("600ms deadline: %v, want TIMEOUT (context.DeadlineExceeded)", o.err)
	}
	if o.took < 550*time.Millisecond || o.took > 900*time.Millisecond {
		t.Fatalf("600ms deadline: failed after %v, want about 600ms", o.took)
	}
	if !strings.Contains(o.err.Error(), "last: UNAVAILABLE") {
		t.Fatalf("600ms deadline: %q does not name the last attempt's error", o.err)
	}
	m := c.Metrics()
	if m.Calls-m0.Calls != 3 || m.Retries == m0.Retries || m.Reconnects == m0.Reconnects ||
		m.ConnectionsLost == m0.ConnectionsLost || m.Errors[CodeTimeout] != 1 {
		t.Fatalf("metrics across the outage: before %+v, after %+v", m0, m)
	}
}

// TestCallRidesOutAStop: seqd is stopped (SIGSTOP) for 2.5 s, far more
// than CallTimeout × 3 attempts: a call with a 6 s deadline keeps trying
// and succeeds once seqd continues.
func TestCallRidesOutAStop(t *testing.T) {
	s := testseqd.Start(t)
	c := newClient(t, Options{Endpoints: []string{s.Addr()}, CallTimeout: 500 * time.Millisecond})
	if _, err := c.NextID(ctxT(t, 5*time.Second), "n_stop"); err != nil {
		t.Fatal(err)
	}
	s.Pause()
	defer s.Resume()
	call := callInBackground(c, ctxT(t, 6*time.Second), "n_stop")
	time.Sleep(2500 * time.Millisecond)
	s.Resume()
	o := <-call
	if o.err != nil || o.took < 2400*time.Millisecond {
		t.Fatalf("call across a 2.5 s SIGSTOP: %v after %v", o.err, o.took)
	}
	if n := c.Metrics().Retries; n < 3 {
		t.Fatalf("%d retries, want at least 3 (CallTimeout 500ms over 2.5 s)", n)
	}
}

// TestRetryBudgetAndAttemptCap: without a context deadline, RetryBudget
// ends the retries; MaxAttempts, when set, caps them first.
func TestRetryBudgetAndAttemptCap(t *testing.T) {
	dead := "127.0.0.1:" + itoa(testseqd.FreePort(t))
	c := newClient(t, Options{Endpoints: []string{dead}, RetryBudget: 400 * time.Millisecond,
		BackoffMax: 50 * time.Millisecond})
	start := time.Now()
	_, err := c.NextID(context.Background(), "n_b")
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "retry budget 400ms") {
		t.Fatalf("dead endpoint, budget 400ms: %v", err)
	}
	if took < 350*time.Millisecond || took > 700*time.Millisecond {
		t.Fatalf("budget 400ms: failed after %v", took)
	}
	if m := c.Metrics(); m.Retries < 3 || m.Errors[CodeTimeout] != 1 {
		t.Fatalf("budget 400ms: %+v, want several retries and one TIMEOUT", m)
	}

	capped := newClient(t, Options{Endpoints: []string{dead}, MaxAttempts: 2})
	start = time.Now()
	_, err = capped.NextID(ctxT(t, 5*time.Second), "n_b")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "after 2 attempts") {
		t.Fatalf("MaxAttempts 2: %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("MaxAttempts 2: failed after %v, want at once", took)
	}
	if _, err := New(Options{Endpoints: []string{dead}, MaxAttempts: -1}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("MaxAttempts -1: %v", err)
	}
}

// TestNilContextIsRefused: every call refuses a nil context with
// INVALID_ARGUMENT, sends nothing and does not crash.
func TestNilContextIsRefused(t *testing.T) {
	f := startFake(t, func(op byte, p []byte) (Code, []byte) { return CodeOK, oneRangeAnswer(1, 1) })
	c := newClient(t, Options{Endpoints: []string{f.addr()}})
	pre := newClient(t, Options{Endpoints: []string{f.addr()}, Prefetch: 10})
	var nilCtx context.Context
	calls := map[string]func() error{
		"NextID":          func() error { _, err := c.NextID(nilCtx, "n_a"); return err },
		"NextIDs":         func() error { _, err := c.NextIDs(nilCtx, "n_a", 5); return err },
		"NextID prefetch": func() error { _, err := pre.NextID(nilCtx, "n_a"); return err },
		"NextBlock":       func() error { _, _, err := c.NextBlock(nilCtx, "n_a", 5); return err },
		"Snowflake":       func() error { _, err := c.Snowflake(nilCtx, 1); return err },
		"Ping":            func() error { return c.Ping(nilCtx) },
		"MaxIDs":          func() error { _, err := c.MaxIDs(nilCtx, []string{"n_a"}); return err },
		"Send": func() error {
			_, err := c.Send(nilCtx, OutgoingMessage{ConvID: "sg_1", SenderID: "u", ClientMsgID: "m"})
			return err
		},
		"PullRange": func() error { _, err := c.PullRange(nilCtx, "sg_1", PullOptions{}); return err },
		"NextIDsFunc": func() error {
			ch := make(chan error, 1)
			c.NextIDsFunc(nilCtx, "n_a", 1, func(_ []Range, err error) { ch <- err })
			return <-ch
		},
		"Lane.NextIDsFunc": func() error {
			ch := make(chan error, 1)
			c.Lane().NextIDsFunc(nilCtx, "n_a", 1, func(_ []Range, err error) { ch <- err })
			return <-ch
		},
		"GoNextIDs": func() error { return (<-c.GoNextIDs(nilCtx, "n_a", 1, nil).Done).Err },
		"Subscribe": func() error {
			_, err := c.Subscribe(nilCtx, []string{"sg_1"}, nil, func(Message) {})
			return err
		},
	}
	for name, call := range calls {
		err := call()
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "nil context") {
			t.Errorf("%s(nil ctx): %v, want INVALID_ARGUMENT naming the nil context", name, err)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("%d requests sent for nil contexts", n)
	}
}

// TestCountBoundsSayWhichBound: a count too large names the maximum, one
// too small the minimum; neither is sent.
func TestCountBoundsSayWhichBound(t *testing.T) {
	c := newClient(t, Options{Endpoints: []string{"127.0.0.1:1"}})
	ctx := ctxT(t, 5*time.Second)
	tooLarge := map[string]error{}
	_, tooLarge["NextIDs 1<<40"] = c.NextIDs(ctx, "n_a", 1<<40)
	_, tooLarge["NextIDs 1<<32+5"] = c.NextIDs(ctx, "n_a", 1<<32+5)
	_, _, tooLarge["NextBlock 1<<32+7"] = c.NextBlock(ctx, "n_a", 1<<32+7)
	_, _, tooLarge["NextBlockOnce 1<<33"] = c.NextBlockOnce(ctx, "n_a", 1<<33, "tok")
	_, tooLarge["Snowflake 1<<32"] = c.Snowflake(ctx, 1<<32)
	for name, err := range tooLarge {
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "at most 4294967295") ||
			strings.Contains(err.Error(), "at least") {
			t.Errorf("%s: %v, want the maximum named", name, err)
		}
	}
	tooSmall := map[string]error{}
	_, tooSmall["NextIDs 0"] = c.NextIDs(ctx, "n_a", 0)
	_, _, tooSmall["NextBlock -1"] = c.NextBlock(ctx, "n_a", -1)
	_, tooSmall["Snowflake 0"] = c.Snowflake(ctx, 0)
	for name, err := range tooSmall {
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "at least 1") {
			t.Errorf("%s: %v, want the minimum named", name, err)
		}
	}
	if m := c.Metrics(); m.Calls != 0 {
		t.Fatalf("%d calls sent for bad counts", m.Calls)
	}
}

// TestPullLimitIsClamped: a Limit above 1000 asks for 1000 (no error).
func TestPullLimitIsClamped(t *testing.T) {
	f := startFake(t, func(op byte, p []byte) (Code, []byte) { return CodeOK, []byte{1, 0, 0, 0, 0} })
	c := newClient(t, Options{Endpoints: []string{f.addr()}})
	for _, limit := range []int{5000, 1000, 7} {
		page, err := c.PullRange(ctxT(t, 5*time.Second), "sg_1", PullOptions{Limit: limit})
		if err != nil || !page.IsEnd {
			t.Fatalf("Limit %d: %+v, %v", limit, page, err)
		}
	}
	var got []uint32
	for _, r := range f.requests() {
		at := 2 + len("sg_1") + 8 + 8 // str conv, i64 from, i64 to, then u32 limit
		got = append(got, binary.BigEndian.Uint32(r.payload[at:]))
	}
	if len(got) != 3 || got[0] != 1000 || got[1] != 1000 || got[2] != 7 {
		t.Fatalf("limits sent: %v, want [1000 1000 7]", got)
	}
	if _, err := c.PullRange(ctxT(t, 5*time.Second), "sg_1", PullOptions{Limit: -1}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Limit -1: %v", err)
	}
}

// recordingLogger keeps every record it is given.
type recordingLogger struct {
	mu      sync.Mutex
	records []logRecord
}

type logRecord struct {
	level, msg string
	attrs      map[string]any
}

func (l *recordingLogger) add(level, msg string, args []any) {
	r := logRecord{level: level, msg: msg, attrs: map[string]any{}}
	for i := 0; i+1 < len(args); i += 2 {
		r.attrs[args[i].(string)] = args[i+1]
	}
	l.mu.Lock()
	l.records = append(l.records, r)
	l.mu.Unlock()
}

func (l *recordingLogger) Debug(msg string, args ...any) { l.add("DEBUG", msg, args) }
func (l *recordingLogger) Info(msg string, args ...any)  { l.add("INFO", msg, args) }
func (l *recordingLogger) Warn(msg string, args ...any)  { l.add("WARN", msg, args) }
func (l *recordingLogger) Error(msg string, args ...any) { l.add("ERROR", msg, args) }

// find is the first record with msg, ok false if none.
func (l *recordingLogger) find(msg string) (logRecord, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.records {
		if r.msg == msg {
			return r, true
		}
	}
	return logRecord{}, false
}
