package seqd

import (
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seqd.dev/go/internal/testseqd"
)

// fakeRouter sends every key to one endpoint.
type fakeRouter struct {
	to        string
	noForward bool
	wrong     atomic.Int32
}

func (r *fakeRouter) route(key string) (string, bool, bool) { return r.to, r.noForward, true }
func (r *fakeRouter) onWrongOwner()                         { r.wrong.Add(1) }
func (r *fakeRouter) sent(routed bool)                      {}

func TestRouterSeam(t *testing.T) {
	s := testseqd.Start(t)
	ctx := ctxT(t, 10*time.Second)
	// Routed to a live endpoint not in Options.Endpoints: it is used.
	other := testseqd.Start(t)
	c := newClient(t, Options{Endpoints: []string{s.Addr()}})
	r := &fakeRouter{to: other.Addr(), noForward: true}
	c.router = r
	if _, err := c.NextID(ctx, "n_route"); err != nil {
		t.Fatal(err)
	}
	if got := len(c.eps); got != 2 {
		t.Fatalf("%d endpoints known, want 2 (the owner added)", got)
	}
	// Routed to a dead owner: onWrongOwner, then the ordinary way.
	r.to = "127.0.0.1:" + itoa(testseqd.FreePort(t))
	if _, err := c.NextID(ctx, "n_route"); err != nil {
		t.Fatalf("with a dead owner: %v", err)
	}
	if r.wrong.Load() != 1 {
		t.Fatalf("onWrongOwner called %d times, want 1", r.wrong.Load())
	}
	// Keyless calls are never routed.
	if err := c.Ping(ctx); err != nil || r.wrong.Load() != 1 {
		t.Fatalf("ping: %v (onWrongOwner %d)", err, r.wrong.Load())
	}
}

func TestPushSeam(t *testing.T) {
	s := testseqd.Start(t)
	ctx := ctxT(t, 10*time.Second)
	c := newClient(t, Options{Endpoints: []string{s.Addr()}})
	var mu sync.Mutex
	var pushes [][]byte
	closed := make(chan error, 1)
	cn, err := c.openConn(ctx, s.Addr(), func(op byte, payload []byte) {
		if op != opPushMessage {
			t.Errorf("push op %#x", op)
		}
		mu.Lock()
		pushes = append(pushes, payload)
		mu.Unlock()
	}, func(err error) { closed <- err })
	if err != nil {
		t.Fatal(err)
	}
	var e enc
	e.strList([]string{"sg_push"})
	if _, err := cn.call(ctx, opSubscribe, 0, e.b); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := c.Send(ctx, OutgoingMessage{ConvID: "sg_push", SenderID: "u", ClientMsgID: "m" + itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(pushes)
		mu.Unlock()
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pushes, want 3", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i, p := range pushes {
		d := dec{b: p}
		if d.u16() != 0 || d.str() != "sg_push" {
			t.Fatalf("push %d: bad header", i)
		}
		if m := d.message("sg_push"); m.Seq != int64(i+1) || d.done("push") != nil {
			t.Fatalf("push %d: %+v", i, m)
		}
	}
	// The server dies: onClose tells why.
	s.Kill()
	select {
	case err := <-closed:
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("onClose(%v), want UNAVAILABLE", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("onClose not called")
	}
}

func TestErrorsIsAndCodes(t *testing.T) {
	err := error(&Error{Code: CodeUnknownKey, Message: "x"})
	if !errors.Is(err, ErrUnknownKey) || errors.Is(err, ErrNotFound) {
		t.Fatal("errors.Is by code")
	}
	if CodeUnknownKey.String() != "UNKNOWN_KEY" || Code(99).String() != "CODE_99" {
		t.Fatal("names")
	}
	for _, c := range []Code{CodeTimeout, CodeUnavailable, CodeStoreUnavailable, CodeShuttingDown, CodeNotServing} {
		if !c.Retryable() {
			t.Fatalf("%v not retryable", c)
		}
	}
	for _, c := range []Code{CodeInvalidArgument, CodeUnknownKey, CodeUnauthenticated, CodePermissionDenied, CodeWrongOwner, CodeTooLarge} {
		if c.Retryable() {
			t.Fatalf("%v retryable", c)
		}
	}
	// docs/protocol.md's vector: NEXT_IDS response, id 9, UNKNOWN_KEY "unknown key 'x'".
	body := []byte{0x00, 0x02, 0x00, 0x0f}
	body = append(body, "unknown key 'x'"...)
	_, perr := parseResponse(body)
	var e *Error
	if !errors.As(perr, &e) || e.Code != CodeUnknownKey || e.Message != "unknown key 'x'" {
		t.Fatalf("parse: %v", perr)
	}
	if _, perr := parseResponse(body[:5]); !errors.Is(perr, ErrProtocol) {
		t.Fatalf("short error: %v", perr)
	}
	// NEXT_IDS request vector: id 7, key "order", count 3.
	var en enc
	en.str("order")
	en.u32(3)
	frame := appendHeader(nil, opNextIDs, 0, 7, len(en.b))
	frame = append(frame, en.b...)
	want := "000000130102000000000007" + "00056f72646572" + "00000003"
	if got := hexs(frame); got != want {
		t.Fatalf("frame %s, want %s", got, want)
	}
	_ = binary.BigEndian
}

func hexs(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, x := range b {
		out = append(out, digits[x>>4], digits[x&15])
	}
	return string(out)
}

func TestOptionsValidation(t *testing.T) {
	for _, o := range []Options{
		{},
		{Endpoints: []string{"nohost"}},
		{Endpoints: []string{"h:0"}},
		{Endpoints: []string{"::1:80"}},
		{Endpoints: []string{"h:1"}, MaxAttempts: -1},
		{Endpoints: []string{"h:1"}, ConnsPerEndpoint: 100},
		{Endpoints: []string{"h:1", "h:1"}},
		{Endpoints: []string{"h:1"}, Token: string(make([]byte, 257))},
	} {
		if _, err := New(o); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("New(%+v) = %v, want INVALID_ARGUMENT", o, err)
		}
	}
	if _, err := New(Options{Endpoints: []string{"[::1]:7070", "localhost:1"}}); err != nil {
		t.Fatal(err)
	}
}
