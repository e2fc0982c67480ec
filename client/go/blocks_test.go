package seqd

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"
)

// The issue-30 ops against a live seqd: NEXT_BLOCK, MAX_IDS, GET_MIN_SEQS,
// SET_MIN_SEQS.

func TestNextBlockContiguousAndAboveEverything(t *testing.T) {
	_, c := startClient(t)
	ctx := ctxT(t, 30*time.Second)
	var mu sync.Mutex
	var blocks []Range
	parallel(8, func(g int) {
		for i := 0; i < 50; i++ {
			n := 1 + (g*7+i*13)%40
			first, last, err := c.NextBlock(ctx, "n_blk", n)
			if err != nil {
				t.Error(err)
				return
			}
			if last-first+1 != int64(n) {
				t.Errorf("block %d..%d for %d", first, last, n)
			}
			mu.Lock()
			blocks = append(blocks, Range{first, last})
			mu.Unlock()
		}
	})
	seen := map[int64]bool{}
	for _, b := range blocks {
		for v := b.First; v <= b.Last; v++ {
			if seen[v] {
				t.Fatalf("ID %d in two blocks", v)
			}
			seen[v] = true
		}
	}
	// Blocks and NextIDs share the key's IDs.
	rs, err := c.NextIDs(ctx, "n_blk", 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		for v := r.First; v <= r.Last; v++ {
			if seen[v] {
				t.Fatalf("NextIDs handed out %d, already in a block", v)
			}
		}
	}
	// Sequential blocks grow.
	f1, l1, err1 := c.NextBlock(ctx, "n_blk", 5)
	f2, _, err2 := c.NextBlock(ctx, "n_blk", 5)
	if err1 != nil || err2 != nil || f2 <= l1 || l1 != f1+4 {
		t.Fatalf("sequential blocks %d..%d then %d: %v %v", f1, l1, f2, err1, err2)
	}
	if _, _, err := c.NextBlock(ctx, "n_blk", 0); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("count 0: %v", err)
	}
	if _, _, err := c.NextBlock(ctx, "n_blk", 1000000); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("count 1000000: %v", err)
	}
	if _, _, err := c.NextBlock(ctx, "seqd.x", 1); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("reserved key: %v", err)
	}
	if _, _, err := c.NextBlock(ctx, "nomatch_x", 1); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("unknown key: %v", err)
	}
}

func TestMaxIDs(t *testing.T) {
	s, c := startClient(t)
	ctx := ctxT(t, 30*time.Second)
	got, err := c.MaxIDs(ctx, []string{"n_max_a", "n_max_none"})
	if err != nil || len(got) != 2 || got[0] != 0 || got[1] != 0 {
		t.Fatalf("before any ID: %v, %v", got, err)
	}
	rs, err := c.NextIDs(ctx, "n_max_a", 7)
	if err != nil {
		t.Fatal(err)
	}
	_, last, err := c.NextBlock(ctx, "n_max_b", 3)
	if err != nil {
		t.Fatal(err)
	}
	got, err = c.MaxIDs(ctx, []string{"n_max_b", "n_max_a", "n_max_none"})
	if err != nil || len(got) != 3 || got[0] != last || got[1] != rs[len(rs)-1].Last || got[2] != 0 {
		t.Fatalf("MaxIDs = %v, %v; want [%d %d 0]", got, err, last, rs[len(rs)-1].Last)
	}
	// After a restart the key is not loaded: the table's max_id, at or
	// above every ID handed out.
	s.Restart(false)
	got, err = c.MaxIDs(ctx, []string{"n_max_a"})
	if err != nil || got[0] < rs[len(rs)-1].Last {
		t.Fatalf("after restart: %v, %v; want >= %d", got, err, rs[len(rs)-1].Last)
	}
	next, err := c.NextID(ctx, "n_max_a")
	if err != nil || next <= got[0] {
		t.Fatalf("next ID %d, %v: want above the max %d", next, err, got[0])
	}
	if _, err := c.MaxIDs(ctx, []string{"n_ok", "bad\tkey"}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("bad key: %v", err)
	}
	many := make([]string, 1001)
	for i := range many {
		many[i] = fmt.Sprintf("n_k%d", i)
	}
	if _, err := c.MaxIDs(ctx, many); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("1001 keys: %v", err)
	}
}

func TestMinSeqs(t *testing.T) {
	s, c := startClient(t)
	ctx := ctxT(t, 30*time.Second)
	got, err := c.MinSeqs(ctx, []string{"sg_min_a", "any_key_at_all"})
	if err != nil || len(got) != 2 || got[0] != 0 || got[1] != 0 {
		t.Fatalf("never set: %v, %v", got, err)
	}
	if err := c.SetMinSeqs(ctx, map[string]int64{"sg_min_a": 10, "other_min": 3}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetMinSeqs(ctx, map[string]int64{"sg_min_a": 12}); err != nil {
		t.Fatal(err)
	}
	s.Restart(true) // durable before the answer
	got, err = c.MinSeqs(ctx, []string{"other_min", "sg_min_a", "never"})
	if err != nil || len(got) != 3 || got[0] != 3 || got[1] != 12 || got[2] != 0 {
		t.Fatalf("after SIGKILL and restart: %v, %v; want [3 12 0]", got, err)
	}
	if err := c.SetMinSeqs(ctx, map[string]int64{"sg_min_a": -1}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("negative: %v", err)
	}
	if err := c.SetMinSeqs(ctx, map[string]int64{"seqd.k": 1}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("reserved key: %v", err)
	}
	if err := c.SetMinSeqs(ctx, nil); err != nil {
		t.Fatalf("empty: %v", err)
	}
}

// NEXT_BLOCK_ONCE on a dense key: blocks 1..N with no hole from many
// goroutines, a token sent again gets its block back, and the server's
// refusals come back as errors with their codes.
func TestNextBlockOnceDenseAndIdempotent(t *testing.T) {
	_, c := startClient(t, "--auto-keys", "dk_:50:dense,sk_:50")
	ctx := ctxT(t, 30*time.Second)
	var mu sync.Mutex
	var blocks []Range
	parallel(8, func(g int) {
		for i := 0; i < 25; i++ {
			n := 1 + (g*7+i*13)%9
			token := fmt.Sprintf("g%d-i%d", g, i)
			first, last, err := c.NextBlockOnce(ctx, "dk_go", n, token)
			if err != nil {
				t.Error(err)
				return
			}
			// The same request again: the same block.
			again1, again2, err := c.NextBlockOnce(ctx, "dk_go", n, token)
			if err != nil || again1 != first || again2 != last {
				t.Errorf("retry of %s: %d..%d, %v; first answer %d..%d", token, again1, again2, err, first, last)
			}
			mu.Lock()
			blocks = append(blocks, Range{first, last})
			mu.Unlock()
		}
	})
	sort.Slice(blocks, func(i, j int) bool { return blocks[i].First < blocks[j].First })
	next := int64(1)
	for _, b := range blocks {
		if b.First != next {
			t.Fatalf("block %d..%d where %d was next: a hole or an overlap", b.First, b.Last, next)
		}
		next = b.Last + 1
	}
	max, err := c.MaxIDs(ctx, []string{"dk_go"})
	if err != nil || max[0] != next-1 {
		t.Fatalf("MaxIDs = %v, %v; want %d", max, err, next-1)
	}
	for _, bad := range []struct {
		key, token string
		count      int
	}{
		{"dk_go", "g0-i0", 100}, // another count
		{"dk_go", "has space", 1},
		{"sk_segment", "tok", 1}, // a segment key
	} {
		_, _, err := c.NextBlockOnce(ctx, bad.key, bad.count, bad.token)
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("NextBlockOnce(%q, %d, %q) = %v, want invalid argument", bad.key, bad.count, bad.token, err)
		}
	}
	if _, _, err := c.NextBlockOnce(ctx, "dk_go", 1, ""); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("an empty token: %v", err)
	}
}

// MAX_IDS_TIMES: a dense key's time moves with each block (and not with a
// replayed token), a segment key answers its row's time, a key with no
// row -1; the list bound is checked before anything is sent.
func TestMaxIDsWithTimes(t *testing.T) {
	_, c := startClient(t, "--auto-keys", "dk_:50:dense,sk_:50")
	ctx := ctxT(t, 30*time.Second)
	before := time.Now().UnixMilli()
	if _, _, err := c.NextBlockOnce(ctx, "dk_time", 3, "t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NextID(ctx, "sk_time"); err != nil {
		t.Fatal(err)
	}
	got, err := c.MaxIDsWithTimes(ctx, []string{"dk_time", "sk_time", "dk_never"})
	if err != nil || len(got) != 3 {
		t.Fatalf("MaxIDsWithTimes = %v, %v", got, err)
	}
	after := time.Now().UnixMilli()
	if got[0].MaxID != 3 || got[0].TimeMs < before-5000 || got[0].TimeMs > after+5000 {
		t.Fatalf("dense key: %+v; want max 3, a time in [%d, %d]", got[0], before, after)
	}
	if got[1].TimeMs < before-5000 || got[1].TimeMs > after+5000 {
		t.Fatalf("segment key: %+v; want its row's time in [%d, %d]", got[1], before, after)
	}
	if got[2] != (MaxIDTime{MaxID: 0, TimeMs: -1}) {
		t.Fatalf("a key with no row: %+v; want {0 -1}", got[2])
	}
	time.Sleep(20 * time.Millisecond)
	if _, _, err := c.NextBlockOnce(ctx, "dk_time", 3, "t1"); err != nil { // replayed
		t.Fatal(err)
	}
	if again, err := c.MaxIDsWithTimes(ctx, []string{"dk_time"}); err != nil || again[0] != got[0] {
		t.Fatalf("after a replay: %v, %v; want %+v unchanged", again, err, got[0])
	}
	if _, _, err := c.NextBlock(ctx, "dk_time", 2); err != nil {
		t.Fatal(err)
	}
	if later, err := c.MaxIDsWithTimes(ctx, []string{"dk_time"}); err != nil || later[0].MaxID != 5 ||
		later[0].TimeMs <= got[0].TimeMs {
		t.Fatalf("after a block: %v, %v; want max 5 and a later time than %d", later, err, got[0].TimeMs)
	}
	keys := make([]string, 1001)
	for i := range keys {
		keys[i] = fmt.Sprintf("dk_%d", i)
	}
	if _, err := c.MaxIDsWithTimes(ctx, keys); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("1001 keys: %v; want TOO_LARGE", err)
	}
	if empty, err := c.MaxIDsWithTimes(ctx, nil); err != nil || len(empty) != 0 {
		t.Fatalf("no keys: %v, %v", empty, err)
	}
}

// USER_SEQS and SET_USER_SEQS from the client: a field of one user, set
// or raised; bounds and a bad field refused before anything is sent, a bad
// user id by the server.
func TestUserSeqs(t *testing.T) {
	_, c := startClient(t)
	ctx := ctxT(t, 30*time.Second)
	if err := c.SetUserSeqs(ctx, "u1", UserReadSeq, true, map[string]int64{"sg_us": 9, "si_us": 4}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetUserSeqs(ctx, "u1", UserReadSeq, true, map[string]int64{"sg_us": 3}); err != nil {
		t.Fatal(err)
	}
	got, err := c.UserSeqs(ctx, "u1", UserReadSeq, []string{"sg_us", "si_us", "never"})
	if err != nil || fmt.Sprint(got) != "[9 4 0]" {
		t.Fatalf("UserSeqs = %v, %v; want [9 4 0] (a lower raise ignored)", got, err)
	}
	if got, err := c.UserSeqs(ctx, "u1", UserMaxSeq, []string{"sg_us"}); err != nil || got[0] != 0 {
		t.Fatalf("another field: %v, %v; want [0]", got, err)
	}
	if _, err := c.UserSeqs(ctx, "u1", UserSeqField(4), []string{"a"}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("field 4: %v", err)
	}
	if err := c.SetUserSeqs(ctx, "", UserMinSeq, false, map[string]int64{"a": 1}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("an empty user: %v", err)
	}
	many := make([]string, 1001)
	for i := range many {
		many[i] = fmt.Sprintf("k%d", i)
	}
	if _, err := c.UserSeqs(ctx, "u1", UserMinSeq, many); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("1001 conversations: %v", err)
	}
}
