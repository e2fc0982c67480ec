package seqd

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// fakeServer answers each request frame with answer(op, payload), which
// returns the status and the OK result. It records every request. With
// pushes set (setPushes), each answer on a connection is preceded by the
// frames pushes(told) returns, told being what it returned last there.
type fakeServer struct {
	l      net.Listener
	mu     sync.Mutex
	seen   []fakeReq
	answer func(op byte, payload []byte) (Code, []byte)
	pushes func(told int64) ([]byte, int64) // guarded by mu
}

// setPushes sets the frames written before each answer: push(told) returns
// them and the connection's new told value.
func (f *fakeServer) setPushes(push func(told int64) ([]byte, int64)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pushes = push
}

type fakeReq struct {
	op      byte
	flags   uint16
	payload []byte
}

func startFake(t *testing.T, answer func(op byte, payload []byte) (Code, []byte)) *fakeServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeServer{l: l, answer: answer}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go f.serve(nc)
		}
	}()
	return f
}

func (f *fakeServer) addr() string { return f.l.Addr().String() }

func (f *fakeServer) requests() []fakeReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeReq(nil), f.seen...)
}

func (f *fakeServer) serve(nc net.Conn) {
	defer nc.Close()
	var head [headerSize]byte
	var told int64
	for {
		if _, err := io.ReadFull(nc, head[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(head[:4]) - 8
		payload := make([]byte, n)
		if _, err := io.ReadFull(nc, payload); err != nil {
			return
		}
		op, flags, id := head[5], binary.BigEndian.Uint16(head[6:8]), binary.BigEndian.Uint32(head[8:12])
		f.mu.Lock()
		f.seen = append(f.seen, fakeReq{op, flags, payload})
		push := f.pushes
		f.mu.Unlock()
		var frame []byte
		if push != nil {
			frame, told = push(told)
		}
		code, result := f.answer(op, payload)
		var body []byte
		body = binary.BigEndian.AppendUint16(body, uint16(code))
		if code == CodeOK {
			body = append(body, result...)
		} else {
			body = binary.BigEndian.AppendUint16(body, 4)
			body = append(body, "fake"...)
		}
		frame = binary.BigEndian.AppendUint32(frame, uint32(8+len(body)))
		frame = append(frame, 1, op)
		frame = binary.BigEndian.AppendUint16(frame, flagResponse)
		frame = binary.BigEndian.AppendUint32(frame, id)
		if _, err := nc.Write(append(frame, body...)); err != nil {
			return
		}
	}
}

// oneRangeAnswer is a NEXT_IDS result of the one range first..last.
func oneRangeAnswer(first, last int64) []byte {
	var e enc
	e.u32(1)
	e.i64(first)
	e.i64(last)
	return e.b
}

func sendOK() []byte {
	var e enc
	e.i64(7)
	e.i64(4097)
	e.i64(1795360448589)
	e.u8(1)
	return e.b
}

func TestSendResentByteForByteOnStoreUnavailable(t *testing.T) {
	// The first endpoint answers STORE_UNAVAILABLE ("maybe stored"); the
	// second stored it already and answers it as a duplicate.
	a := startFake(t, func(op byte, p []byte) (Code, []byte) { return CodeStoreUnavailable, nil })
	b := startFake(t, func(op byte, p []byte) (Code, []byte) { return CodeOK, sendOK() })
	c := newClient(t, Options{Endpoints: []string{a.addr(), b.addr()}})
	c.current.Store(0)
	m := OutgoingMessage{ConvID: "sg_1", SenderID: "u1", ClientMsgID: "c1", ContentType: 101, Payload: []byte("hi")}
	r, err := c.Send(ctxT(t, 5*time.Second), m)
	if err != nil || r != (SendResult{Seq: 7, ServerMsgID: 4097, SendTimeMs: 1795360448589, Duplicate: true}) {
		t.Fatalf("Send = %+v, %v", r, err)
	}
	ra, rb := a.requests(), b.requests()
	if len(ra) != 1 || len(rb) != 1 {
		t.Fatalf("requests: %d to the first endpoint, %d to the second; want 1 and 1", len(ra), len(rb))
	}
	// docs/protocol.md's SEND vector: the same bytes both times.
	want := []byte{0, 4, 's', 'g', '_', '1', 0, 2, 'u', '1', 0, 2, 'c', '1', 0, 0, 0, 101, 0, 0, 0, 2, 'h', 'i'}
	if ra[0].op != opSend || !bytes.Equal(ra[0].payload, want) || !bytes.Equal(rb[0].payload, want) {
		t.Fatalf("re-send differs: %x then %x, want %x", ra[0].payload, rb[0].payload, want)
	}
}

func TestRetryRules(t *testing.T) {
	ctx := ctxT(t, 10*time.Second)
	// Not retried: a code about the request itself.
	bad := startFake(t, func(op byte, p []byte) (Code, []byte) { return CodeInvalidArgument, nil })
	c := newClient(t, Options{Endpoints: []string{bad.addr()}, MaxAttempts: 5})
	if _, err := c.NextID(ctx, "n_a"); !errors.Is(err, ErrInvalidArgument) || len(bad.requests()) != 1 {
		t.Fatalf("INVALID_ARGUMENT: %v after %d requests, want 1", err, len(bad.requests()))
	}
	// Retried up to MaxAttempts, then the last error, saying so.
	for _, code := range []Code{CodeStoreUnavailable, CodeShuttingDown, CodeNotServing} {
		code := code
		f := startFake(t, func(op byte, p []byte) (Code, []byte) { return code, nil })
		c := newClient(t, Options{Endpoints: []string{f.addr()}, MaxAttempts: 3, BackoffInitial: time.Millisecond, BackoffMax: 5 * time.Millisecond})
		_, err := c.Snowflake(ctx, 1)
		var e *Error
		if !errors.As(err, &e) || e.Code != code || len(f.requests()) != 3 || !bytes.Contains([]byte(e.Message), []byte("after 3 attempts")) {
			t.Fatalf("%v: %v after %d requests, want 3", code, err, len(f.requests()))
		}
	}
	// NOT_SERVING on one server, IDs on the next.
	ns := startFake(t, func(op byte, p []byte) (Code, []byte) { return CodeNotServing, nil })
	ok := startFake(t, func(op byte, p []byte) (Code, []byte) {
		var e enc
		e.u32(1)
		e.i64(42)
		return CodeOK, e.b
	})
	c = newClient(t, Options{Endpoints: []string{ns.addr(), ok.addr()}})
	c.current.Store(0)
	ids, err := c.Snowflake(ctx, 1)
	if err != nil || len(ids) != 1 || ids[0] != 42 {
		t.Fatalf("snowflake after NOT_SERVING: %v, %v", ids, err)
	}
	// The client sticks to the endpoint that answered.
	if _, err := c.Snowflake(ctx, 1); err != nil || len(ns.requests()) != 1 {
		t.Fatalf("second call went back to the failing endpoint (%d requests), %v", len(ns.requests()), err)
	}
	// A reply that is not the protocol: PROTOCOL, not retried.
	junk := startFake(t, func(op byte, p []byte) (Code, []byte) { return CodeOK, []byte{1, 2, 3} })
	c = newClient(t, Options{Endpoints: []string{junk.addr()}})
	if _, err := c.NextID(ctx, "n_a"); !errors.Is(err, ErrProtocol) || len(junk.requests()) != 1 {
		t.Fatalf("malformed result: %v after %d requests", err, len(junk.requests()))
	}
}

func TestAuthIsTheFirstFrame(t *testing.T) {
	f := startFake(t, func(op byte, p []byte) (Code, []byte) {
		if op == opAuth && string(p) != "right" {
			return CodeUnauthenticated, nil
		}
		if op == opAuth {
			return CodeOK, nil
		}
		return CodeOK, oneRangeAnswer(5, 5)
	})
	c := newClient(t, Options{Endpoints: []string{f.addr()}, Token: "right", ConnsPerEndpoint: 1})
	if _, err := c.NextID(ctxT(t, 5*time.Second), "n_a"); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 2 || reqs[0].op != opAuth || string(reqs[0].payload) != "right" || reqs[1].op != opNextIDs {
		t.Fatalf("frames: %+v", reqs)
	}
	w := newClient(t, Options{Endpoints: []string{f.addr()}, Token: "wrong", MaxAttempts: 3})
	if _, err := w.NextID(ctxT(t, 5*time.Second), "n_a"); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("wrong token: %v", err)
	}
	if n := len(f.requests()); n != 3 {
		t.Fatalf("%d frames, want 3 (a refused AUTH is not retried, and no call follows it)", n)
	}
}
