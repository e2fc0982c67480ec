package seqd

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"
)

// The issue-30 ops' encodings (NEXT_BLOCK 0x05, MAX_IDS 0x06, GET_MIN_SEQS
// 0x07, SET_MIN_SEQS 0x08), checked byte for byte against a fake server.
func TestIssue30OpsEncoding(t *testing.T) {
	var e enc
	results := map[byte][]byte{}
	e = enc{}
	e.i64(101)
	e.i64(110)
	results[opNextBlock] = e.b
	e = enc{}
	e.u32(2)
	e.i64(55)
	e.i64(0)
	results[opMaxIDs] = e.b
	results[opGetMinSeqs] = e.b
	results[opSetMinSeqs] = nil
	var mu sync.Mutex
	set := func(op byte, b []byte) { mu.Lock(); results[op] = b; mu.Unlock() }
	f := startFake(t, func(op byte, p []byte) (Code, []byte) { mu.Lock(); defer mu.Unlock(); return CodeOK, results[op] })
	c := newClient(t, Options{Endpoints: []string{f.addr()}})
	ctx := ctxT(t, 5*time.Second)

	first, last, err := c.NextBlock(ctx, "order", 10)
	if err != nil || first != 101 || last != 110 {
		t.Fatalf("NextBlock = %d..%d, %v", first, last, err)
	}
	maxes, err := c.MaxIDs(ctx, []string{"a", "b"})
	if err != nil || len(maxes) != 2 || maxes[0] != 55 || maxes[1] != 0 {
		t.Fatalf("MaxIDs = %v, %v", maxes, err)
	}
	mins, err := c.MinSeqs(ctx, []string{"a", "b"})
	if err != nil || len(mins) != 2 || mins[0] != 55 {
		t.Fatalf("MinSeqs = %v, %v", mins, err)
	}
	if err := c.SetMinSeqs(ctx, map[string]int64{"a": 3}); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	want := []fakeReq{
		{op: opNextBlock, payload: []byte{0, 5, 'o', 'r', 'd', 'e', 'r', 0, 0, 0, 10}},
		{op: opMaxIDs, payload: []byte{0, 0, 0, 2, 0, 1, 'a', 0, 1, 'b'}},
		{op: opGetMinSeqs, payload: []byte{0, 0, 0, 2, 0, 1, 'a', 0, 1, 'b'}},
		{op: opSetMinSeqs, payload: []byte{0, 0, 0, 1, 0, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 3}},
	}
	if len(reqs) != len(want) {
		t.Fatalf("%d requests, want %d", len(reqs), len(want))
	}
	for i := range want {
		if reqs[i].op != want[i].op || !bytes.Equal(reqs[i].payload, want[i].payload) {
			t.Fatalf("request %d: op %#x %x, want op %#x %x", i, reqs[i].op, reqs[i].payload, want[i].op, want[i].payload)
		}
	}

	// Answers that do not match the request are PROTOCOL errors.
	set(opNextBlock, results[opMaxIDs][:16]) // a block of the wrong size
	if _, _, err := c.NextBlock(ctx, "order", 10); !errors.Is(err, ErrProtocol) {
		t.Fatalf("wrong block size: %v", err)
	}
	if _, err := c.MaxIDs(ctx, []string{"a"}); !errors.Is(err, ErrProtocol) {
		t.Fatalf("2 values for 1 key: %v", err)
	}
	set(opSetMinSeqs, []byte{0})
	if err := c.SetMinSeqs(ctx, map[string]int64{"a": 3}); !errors.Is(err, ErrProtocol) {
		t.Fatalf("SET_MIN_SEQS with a result: %v", err)
	}
	// Empty lists ask nothing.
	n := len(f.requests())
	if v, err := c.MaxIDs(ctx, nil); err != nil || len(v) != 0 || len(f.requests()) != n {
		t.Fatalf("empty MaxIDs: %v, %v", v, err)
	}
}
