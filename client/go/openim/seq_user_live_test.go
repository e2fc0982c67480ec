package openim

import (
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"seqd.dev/go/internal/testseqd"
)

// OpenIM's unread count: GetConversationsHasReadAndMaxSeq answers max seq
// (SeqCache) and read seq (SeqUser), and the client shows max - read. A
// user reads every message (SetUserReadSeq from several goroutines at
// once, in any order: only raises count), then seqd is killed with SIGKILL
// and restarted, twice. On dense keys unread stays exactly 0 and the read
// seq survives: seqd inflates no unread count. The same on segment keys
// must fail (the max after a restart is the reserved bound: unread that
// no message has).
func TestUnreadNeverInflatedLive(t *testing.T) {
	if problems := unreadProblems(t, denseAutoKeys, nil); len(problems) > 0 {
		t.Fatal(problems)
	}
	problems := unreadProblems(t, segmentAutoKeys, []Option{WithSegmentKeys()})
	if len(problems) == 0 {
		t.Fatal("segment keys passed the unread check through restarts: it cannot fail")
	}
	t.Logf("segment keys (the check failing, as it must): %s", problems[0])
}

func unreadProblems(t *testing.T, autoKeys []string, opts []Option) []string {
	t.Helper()
	s := testseqd.Start(t, autoKeys...)
	ctx := liveCtx(t, 60*time.Second)
	client := newSeqdClient(t, s)
	seqs := New(client, opts...)
	users := NewSeqUser(client)
	run := time.Now().UnixNano() % 1000000
	convs := []string{fmt.Sprintf("sg_unread_%d", run), fmt.Sprintf("si_u1_u2_%d", run)}
	var problems []string
	for round := 0; round < 3; round++ {
		for _, conv := range convs {
			if _, err := seqs.Malloc(ctx, conv, int64(7+round)); err != nil {
				t.Fatal(err)
			}
		}
		// The user reads up to the max: many raises at once, any order.
		var wg sync.WaitGroup
		for _, conv := range convs {
			max, err := seqs.GetMaxSeq(ctx, conv)
			if err != nil {
				t.Fatal(err)
			}
			for g := 0; g < 8; g++ {
				wg.Add(1)
				go func(conv string, g int, max int64) {
					defer wg.Done()
					rng := rand.New(rand.NewSource(int64(g)))
					for i := 0; i < 10; i++ {
						v := max - rng.Int63n(max)
						if g == 0 && i == 9 {
							v = max // one of them reads it all
						}
						if err := users.SetUserReadSeq(ctx, conv, "u1", v); err != nil {
							t.Error(err)
							return
						}
					}
				}(conv, g, max)
			}
		}
		wg.Wait()
		s.Restart(true) // SIGKILL
		maxes, err := seqs.GetMaxSeqs(ctx, convs)
		if err != nil {
			t.Fatal(err)
		}
		reads, err := users.GetUserReadSeqs(ctx, "u1", convs)
		if err != nil {
			t.Fatal(err)
		}
		for _, conv := range convs {
			if unread := maxes[conv] - reads[conv]; unread != 0 {
				problems = append(problems, fmt.Sprintf("round %d, %s: unread %d after kill -9 (max %d, read %d)",
					round, conv, unread, maxes[conv], reads[conv]))
			}
		}
	}
	return problems
}

// The per-user seqs live: durable through SIGKILL, raise-only for the
// single read-seq setter, overwrite for the others, and 0 for unknowns.
func TestSeqUserLive(t *testing.T) {
	s := testseqd.Start(t, denseAutoKeys...)
	ctx := liveCtx(t, 30*time.Second)
	u := NewSeqUser(newSeqdClient(t, s))
	if v, err := u.GetUserMaxSeq(ctx, "si_never", "nobody"); err != nil || v != 0 {
		t.Fatalf("unknown: %d, %v", v, err)
	}
	steps := []error{
		u.SetUserMaxSeq(ctx, "sg_live", "u1", 90),
		u.SetUserMaxSeq(ctx, "sg_live", "u1", 80),
		u.SetUserMinSeq(ctx, "sg_live", "u1", 4),
		u.SetUserReadSeq(ctx, "sg_live", "u1", 60),
		u.SetUserReadSeqToDB(ctx, "sg_live", "u1", 50),
		u.SetUserMinSeqs(ctx, "u2", map[string]int64{"sg_live": 6, "si_x": 1}),
		u.SetUserReadSeqs(ctx, "u2", map[string]int64{"sg_live": 9, "si_x": 2}),
		u.SetUserReadSeqs(ctx, "u2", map[string]int64{"sg_live": 8}),
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	s.Restart(true)
	check := func(name string, got int64, err error, want int64) {
		t.Helper()
		if err != nil || got != want {
			t.Fatalf("%s = %d, %v; want %d", name, got, err, want)
		}
	}
	v, err := u.GetUserMaxSeq(ctx, "sg_live", "u1")
	check("max u1", v, err, 80)
	v, err = u.GetUserMinSeq(ctx, "sg_live", "u1")
	check("min u1", v, err, 4)
	v, err = u.GetUserReadSeq(ctx, "sg_live", "u1")
	check("read u1", v, err, 60)
	v, err = u.GetUserMinSeq(ctx, "si_x", "u2")
	check("min u2", v, err, 1)
	reads, err := u.GetUserReadSeqs(ctx, "u2", []string{"sg_live", "si_x", "si_none"})
	if err != nil || reads["sg_live"] != 8 || reads["si_x"] != 2 || reads["si_none"] != 0 || len(reads) != 3 {
		t.Fatalf("GetUserReadSeqs = %v, %v", reads, err)
	}
}
