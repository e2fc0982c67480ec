package openim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"seqd.dev/go/internal/testseqd"
)

// OpenIM builds conversation ids from user and group ids that may hold
// anything but ':' (si_<a>_<b>, sg_<group>, g_<group>, sn_<…>, n_<…>).
// Through the adapter, as OpenIM's callers use it: the seed's send flow
// (Malloc, then seq = start + i + 1) from 2 clients x 4 goroutines on such
// ids, twins among them that differ only in case, by a trailing space or
// by Unicode normalization, and the longest id (255 bytes). Each
// conversation's seqs are exactly 1..N, GetMaxSeqs answers N per id, and
// a user's read seqs (SeqUser) keep the twins apart too, through a kill -9.
func TestOddConversationIDsLive(t *testing.T) {
	s := testseqd.Start(t, openIMAutoKeys...)
	ctx := liveCtx(t, 60*time.Second)
	run := fmt.Sprintf("%d", time.Now().UnixNano()%1000000)
	longest := "g_" + run + strings.Repeat("x", 253-len(run))
	convs := []string{
		"si_张三_李四" + run, "sg_Équipe Rouge " + run, "g_a/b?c#d%e&f=g+h" + run, "n_😀_" + run,
		"si_Alice_Bob" + run, "si_alice_bob" + run,
		"sg_team" + run, "sg_team" + run + " ",
		"si_\u00e9" + run, "si_e\u0301" + run,
		longest,
	}
	if len(longest) != MaxKeyLen {
		t.Fatalf("longest id is %d bytes", len(longest))
	}
	caches := []*SeqCache[SeqTime]{New(newSeqdClient(t, s)), New(newSeqdClient(t, s))}
	// Twins' Mallocs interleave: served from one row, each would show holes.
	blocks := mallocConcurrently(t, ctx, caches, convs, 4, 33, func(w, i int) int64 { return int64((w+2*i)%5 + 1) })
	if t.Failed() {
		return
	}
	maxUsed := checkBlocks(t, convs, blocks)
	checkTiles(t, convs, blocks, maxUsed)
	users := []string{"张三", "Alice Bob", "alice bob", "u/1?x"}
	seqUser := NewSeqUser(newSeqdClient(t, s))
	for ui, user := range users {
		reads := map[string]int64{}
		for c, conv := range convs {
			reads[conv] = (maxUsed[c] + int64(ui)) % (maxUsed[c] + 1)
		}
		if err := seqUser.SetUserReadSeqs(ctx, user, reads); err != nil {
			t.Fatalf("SetUserReadSeqs(%q): %v", user, err)
		}
	}
	s.Restart(true) // kill -9: every answer above was durable
	m, err := caches[0].GetMaxSeqs(ctx, convs)
	if err != nil {
		t.Fatal(err)
	}
	for c, conv := range convs {
		if m[conv] != maxUsed[c] {
			t.Fatalf("%q: GetMaxSeqs %d, the blocks end at %d", conv, m[conv], maxUsed[c])
		}
	}
	for ui, user := range users {
		got, err := seqUser.GetUserReadSeqs(ctx, user, convs)
		if err != nil {
			t.Fatalf("GetUserReadSeqs(%q): %v", user, err)
		}
		for c, conv := range convs {
			want := (maxUsed[c] + int64(ui)) % (maxUsed[c] + 1)
			if got[conv] != want {
				t.Fatalf("read seq of %q in %q: %d, want %d", user, conv, got[conv], want)
			}
		}
	}
	t.Logf("%d blocks on %d conversations with odd ids, max seqs %v", len(blocks), len(convs), maxUsed)
}
