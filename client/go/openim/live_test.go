package openim

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	seqd "seqd.dev/go"
	"seqd.dev/go/internal/testseqd"
)

// denseAutoKeys: seqd's default rules, spelled out: every OpenIM
// conversation id prefix makes a dense key (docs/dense-keys.md).
var denseAutoKeys = []string{"--auto-keys", "si_:50:dense,g_:100:dense,sg_:100:dense,sn_:50:dense,n_:50:dense"}

// segmentAutoKeys: the same prefixes as segment keys (holes allowed).
var segmentAutoKeys = []string{"--auto-keys", "si_:50,g_:100,sg_:100,sn_:50,n_:50"}

// openIMAutoKeys: the rules the adapter's live tests run on.
var openIMAutoKeys = denseAutoKeys

func newSeqdClient(t *testing.T, s *testseqd.Server) *seqd.Client {
	t.Helper()
	c, err := seqd.New(seqd.Options{Endpoints: []string{s.Addr()}, ConnsPerEndpoint: 2,
		CallTimeout: 3 * time.Second, MaxAttempts: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func liveCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// block is one Malloc's answer and when it was asked and answered.
type block struct {
	conv         int
	first, last  int64
	asked, acked time.Time
}

// OpenIM's send flow (BatchInsertChat2Cache: Malloc(conv, len(msgs)), then
// msgs[i].Seq = start + i + 1) from 3 clients x 8 goroutines on 5
// conversations (one per OpenIM prefix): no seq used twice; each block is
// contiguous and above every block answered before it was asked (real-time
// order); each goroutine's blocks of a conversation grow; the seqs used are
// exactly 1..N per conversation; GetMaxSeq(s) is then N.
func TestSendFlowLive(t *testing.T) {
	s := testseqd.Start(t, openIMAutoKeys...)
	ctx := liveCtx(t, 60*time.Second)
	convs := []string{"si_1001_1002", "sg_group7", "g_group8", "n_1001_1002", "sn_1001_admin"}
	var caches []*SeqCache[SeqTime]
	for i := 0; i < 3; i++ {
		caches = append(caches, New(newSeqdClient(t, s)))
	}
	blocks := mallocConcurrently(t, ctx, caches, convs, 8, 150, func(w, i int) int64 { return int64((w*7+i)%12 + 1) })
	if t.Failed() {
		return
	}
	maxUsed := checkBlocks(t, convs, blocks)
	checkTiles(t, convs, blocks, maxUsed)
	m, err := caches[0].GetMaxSeqs(ctx, convs)
	if err != nil {
		t.Fatal(err)
	}
	for c, id := range convs {
		one, err := caches[1].GetMaxSeq(ctx, id)
		if err != nil || one != maxUsed[c] || m[id] != maxUsed[c] {
			t.Fatalf("%s: GetMaxSeq %d (%v), GetMaxSeqs %d; want %d", id, one, err, m[id], maxUsed[c])
		}
		if z, err := caches[2].Malloc(ctx, id, 0); err != nil || z != maxUsed[c] {
			t.Fatalf("%s: Malloc(0) = %d, %v; want %d", id, z, err, maxUsed[c])
		}
	}
	t.Logf("%d blocks on %d conversations, max seqs %v", len(blocks), len(convs), maxUsed)
}

// Min seqs survive a SIGKILL of seqd (durable before the answer), and the
// seqs after the restart continue right after the last one handed out
// before it (dense keys: no hole, no reuse).
func TestMinSeqsAndSeqsAcrossRestart(t *testing.T) {
	s := testseqd.Start(t, openIMAutoKeys...)
	ctx := liveCtx(t, 60*time.Second)
	c := New(newSeqdClient(t, s))
	if v, err := c.GetMinSeq(ctx, "si_a_b"); err != nil || v != 0 {
		t.Fatalf("GetMinSeq(never set) = %d, %v; want 0", v, err)
	}
	start, err := c.Malloc(ctx, "si_a_b", 10)
	if err != nil || start != 0 {
		t.Fatalf("first Malloc = %d, %v; want 0 (seqs 1..10)", start, err)
	}
	want := map[string]int64{"si_a_b": 4, "sg_g1": 120, "n_never_allocated": 7, "g_zero": 0}
	if err := c.SetMinSeqs(ctx, want); err != nil {
		t.Fatal(err)
	}
	if err := c.SetMinSeq(ctx, "sn_one", 9); err != nil {
		t.Fatal(err)
	}
	want["sn_one"] = 9
	check := func(when string) {
		t.Helper()
		for id, v := range want {
			got, err := c.GetMinSeq(ctx, id)
			if err != nil || got != v {
				t.Fatalf("%s: GetMinSeq(%s) = %d, %v; want %d", when, id, got, err, v)
			}
		}
	}
	check("before the restart")
	s.Restart(true) // SIGKILL
	check("after SIGKILL and restart")
	// Setting a min seq never creates seqs; the never-allocated one is still 0.
	if m, err := c.GetMaxSeq(ctx, "n_never_allocated"); err != nil || m != 0 {
		t.Fatalf("GetMaxSeq(n_never_allocated) = %d, %v; want 0", m, err)
	}
	if m, err := c.GetMaxSeq(ctx, "si_a_b"); err != nil || m != 10 {
		t.Fatalf("GetMaxSeq after restart = %d, %v; want 10", m, err)
	}
	next, err := c.Malloc(ctx, "si_a_b", 3)
	if err != nil || next != 10 {
		t.Fatalf("Malloc after restart = %d, %v; want 10 (seqs 11..13: no hole, no reuse)", next, err)
	}
	if m, err := c.GetMaxSeq(ctx, "si_a_b"); err != nil || m != next+3 {
		t.Fatalf("GetMaxSeq = %d, %v; want %d", m, err, next+3)
	}
	t.Logf("seqs 1..10 before the restart; the next block after it starts at %d", next+1)
}

// A conversation id that no auto-create rule covers (and no row exists):
// Malloc's token needs a dense key, so INVALID_ARGUMENT, and with plain
// blocks seqd's UNKNOWN_KEY; either way nothing is created.
func TestUnknownPrefixLive(t *testing.T) {
	s := testseqd.Start(t, openIMAutoKeys...)
	ctx := liveCtx(t, 30*time.Second)
	c := New(newSeqdClient(t, s))
	if _, err := c.Malloc(ctx, "x_no_rule", 1); CodeOf(err) != seqd.CodeInvalidArgument ||
		!strings.Contains(err.Error(), "dense") {
		t.Fatalf("Malloc(x_no_rule): %v; want INVALID_ARGUMENT naming dense keys", err)
	}
	plain := New(newSeqdClient(t, s), WithSegmentKeys())
	if _, err := plain.Malloc(ctx, "x_no_rule", 1); CodeOf(err) != seqd.CodeUnknownKey {
		t.Fatalf("plain Malloc(x_no_rule): %v; want UNKNOWN_KEY", err)
	}
	if m, err := c.GetMaxSeq(ctx, "x_no_rule"); err != nil || m != 0 {
		t.Fatalf("GetMaxSeq(x_no_rule) = %d, %v; want 0 (nothing created)", m, err)
	}
	if _, err := c.Malloc(ctx, "si bad id", 1); CodeOf(err) != seqd.CodeInvalidArgument {
		t.Fatalf("Malloc(bad id): %v; want INVALID_ARGUMENT", err)
	}
}

// checkTiles fails t unless each conversation's blocks are exactly
// 1..maxUsed[c] (tileProblems: no hole, no overlap, one block from 1).
func checkTiles(t *testing.T, convs []string, blocks []block, maxUsed []int64) {
	t.Helper()
	for c, conv := range convs {
		var bs [][2]int64
		for _, b := range blocks {
			if b.conv == c {
				bs = append(bs, [2]int64{b.first, b.last})
			}
		}
		if p := tileProblems(conv, bs, maxUsed[c]); len(p) > 0 {
			t.Fatal(p)
		}
	}
}

// CodeOf is seqd.CodeOf (shorter in tests).
func CodeOf(err error) seqd.Code { return seqd.CodeOf(err) }

// checkBlocks checks each conversation's blocks: no seq in two blocks, and
// a block asked after another was answered is above it (real-time order).
// Returns each conversation's largest seq.
func checkBlocks(t *testing.T, convs []string, blocks []block) []int64 {
	t.Helper()
	maxUsed := make([]int64, len(convs))
	for c := range convs {
		var bs []block
		for _, b := range blocks {
			if b.conv == c {
				bs = append(bs, b)
			}
		}
		if len(bs) == 0 {
			t.Fatalf("%s: no blocks", convs[c])
		}
		// No seq twice: sorted by first, each block starts after the last.
		sort.Slice(bs, func(i, j int) bool { return bs[i].first < bs[j].first })
		for i := 1; i < len(bs); i++ {
			if bs[i].first <= bs[i-1].last {
				t.Fatalf("%s: blocks %d..%d and %d..%d overlap", convs[c], bs[i-1].first, bs[i-1].last,
					bs[i].first, bs[i].last)
			}
		}
		maxUsed[c] = bs[len(bs)-1].last
		// Real-time order: a block asked after another was answered is above it.
		byAck := append([]block(nil), bs...)
		sort.Slice(byAck, func(i, j int) bool { return byAck[i].acked.Before(byAck[j].acked) })
		prefixMax := make([]int64, len(byAck))
		for i, b := range byAck {
			prefixMax[i] = b.last
			if i > 0 && prefixMax[i-1] > b.last {
				prefixMax[i] = prefixMax[i-1]
			}
		}
		for _, b := range bs {
			n := sort.Search(len(byAck), func(i int) bool { return !byAck[i].acked.Before(b.asked) })
			if n > 0 && prefixMax[n-1] >= b.first {
				t.Fatalf("%s: block %d..%d asked after a block up to %d was answered", convs[c],
					b.first, b.last, prefixMax[n-1])
			}
		}
	}
	return maxUsed
}

// mallocConcurrently runs `goroutines` goroutines per cache, each making
// `calls` Mallocs over convs (goroutine w's call i on convs[(w+i)%n], of
// size(w, i) seqs), and returns every block answered. Each goroutine's
// blocks of a conversation must grow; a failed Malloc fails t.
func mallocConcurrently(t *testing.T, ctx context.Context, caches []*SeqCache[SeqTime], convs []string,
	goroutines, calls int, size func(w, i int) int64) []block {
	var mu sync.Mutex
	var blocks []block
	var wg sync.WaitGroup
	for ci, cache := range caches {
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func(cache *SeqCache[SeqTime], w int) {
				defer wg.Done()
				lastOf := map[int]int64{}
				for i := 0; i < calls; i++ {
					conv := (w + i) % len(convs)
					n := size(w, i)
					asked := time.Now()
					start, err := cache.Malloc(ctx, convs[conv], n)
					acked := time.Now()
					if err != nil {
						t.Errorf("Malloc(%s, %d): %v", convs[conv], n, err)
						return
					}
					if start < lastOf[conv] {
						t.Errorf("%s: block after %d starts at %d", convs[conv], lastOf[conv], start+1)
					}
					lastOf[conv] = start + n
					mu.Lock()
					blocks = append(blocks, block{conv, start + 1, start + n, asked, acked})
					mu.Unlock()
				}
			}(cache, ci*goroutines+g)
		}
	}
	wg.Wait()
	return blocks
}
