package seqd

import (
	"errors"
	"sort"
	"sync"
	"testing"
	"time"
)

func TestNextIDsIncreaseAndPipeline(t *testing.T) {
	_, c := startClient(t)
	ctx := ctxT(t, 20*time.Second)
	rs, err := c.NextIDs(ctx, "n_order", 5)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, r := range rs {
		n += r.Len()
	}
	if n != 5 {
		t.Fatalf("got %v, want 5 IDs", rs)
	}
	last := rs[len(rs)-1].Last
	id, err := c.NextID(ctx, "n_order")
	if err != nil || id <= last {
		t.Fatalf("NextID = %d, %v; want > %d", id, err, last)
	}
	// Many goroutines, many calls in flight: every ID unique.
	var mu sync.Mutex
	seen := map[int64]bool{}
	parallel(16, func(int) {
		for i := 0; i < 200; i++ {
			rs, err := c.NextIDs(ctx, "n_order", 3)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			for _, r := range rs {
				for v := r.First; v <= r.Last; v++ {
					if seen[v] {
						t.Errorf("ID %d twice", v)
					}
					seen[v] = true
				}
			}
			mu.Unlock()
		}
	})
	if len(seen) != 16*200*3 {
		t.Fatalf("%d IDs, want %d", len(seen), 16*200*3)
	}
}

func TestTypedErrors(t *testing.T) {
	_, c := startClient(t)
	ctx := ctxT(t, 10*time.Second)
	_, err := c.NextID(ctx, "bad\tkey!")
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInvalidArgument || !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("bad key: %v, want INVALID_ARGUMENT", err)
	}
	_, err = c.NextID(ctx, "seqd.reserved")
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("reserved key: %v, want INVALID_ARGUMENT", err)
	}
	_, err = c.NextID(ctx, "nomatch_key")
	if !errors.Is(err, ErrUnknownKey) || errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("unknown key: %v, want UNKNOWN_KEY", err)
	}
	_, err = c.NextIDs(ctx, "n_x", 1000000)
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("count too large: %v", err)
	}
	// The connection stays usable after errors.
	if _, err := c.NextID(ctx, "n_x"); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestSnowflake(t *testing.T) {
	_, c := startClient(t, "--snowflake", "on")
	ctx := ctxT(t, 20*time.Second)
	var ids []int64
	var err error
	// The worker-id lease may take a moment: NOT_SERVING is retried.
	for i := 0; i < 50; i++ {
		if ids, err = c.Snowflake(ctx, 100); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 100 || !sort.SliceIsSorted(ids, func(i, j int) bool { return ids[i] < ids[j] }) {
		t.Fatalf("ids not 100 ascending: %v", ids)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			t.Fatalf("duplicate %d", ids[i])
		}
	}
	more, err := c.Snowflake(ctx, 1)
	if err != nil || more[0] <= ids[99] {
		t.Fatalf("next = %v, %v; want > %d", more, err, ids[99])
	}
	d, err := c.DecodeSnowflake(ctx, more[0])
	if err != nil || d.TimeMs < time.Now().Add(-time.Minute).UnixMilli() {
		t.Fatalf("decode: %+v, %v", d, err)
	}
	if _, err := c.DecodeSnowflake(ctx, -1); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("decode -1: %v", err)
	}
	if _, err := c.Snowflake(ctx, 100000); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("count 100000: %v", err)
	}
}

func TestSnowflakeOffIsUnknownOpcode(t *testing.T) {
	_, c := startClient(t, "--snowflake", "off")
	if _, err := c.Snowflake(ctxT(t, 10*time.Second), 1); !errors.Is(err, ErrUnknownOpcode) {
		t.Fatalf("got %v, want UNKNOWN_OPCODE", err)
	}
}
