package openim

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	seqd "seqd.dev/go"
	"seqd.dev/go/internal/testseqd"
)

// OpenIM's "new conversation" check (msg_transfer: Malloc answering 0
// means the conversation is new, and only then are the recipients'
// conversations created) while a relay cuts the connection on 10% of
// seqd's answers: many goroutines of three OpenIM-like clients send to
// fresh conversations at once. On dense keys each conversation's first
// Malloc answers 0 exactly once, and the blocks answered tile 1..max with
// no hole. The same load on segment keys with plain blocks, today's
// behaviour before dense keys, breaks the check: it can fail.
func TestNewConversationsThroughLostAnswersLive(t *testing.T) {
	dense := runThroughLostAnswers(t, denseAutoKeys, nil)
	for _, p := range dense.problems {
		t.Error(p)
	}
	if dense.dropped == 0 {
		t.Fatal("the relay lost no answer: the run proves nothing")
	}
	t.Logf("dense: %d Mallocs, %d answers lost on the way, no hole, one 0 per conversation",
		dense.mallocs, dense.dropped)
	segment := runThroughLostAnswers(t, segmentAutoKeys, []Option{WithSegmentKeys()})
	if len(segment.problems) == 0 {
		t.Fatalf("segment keys with plain blocks passed the check (%d answers lost): it cannot fail",
			segment.dropped)
	}
	t.Logf("segment keys, plain blocks (the check failing, as it must): %d problems, first: %s",
		len(segment.problems), segment.problems[0])
}

// lostAnswersRun is what one run saw.
type lostAnswersRun struct {
	mallocs  int
	dropped  int64
	problems []string
}

func runThroughLostAnswers(t *testing.T, autoKeys []string, opts []Option) lostAnswersRun {
	t.Helper()
	s := testseqd.Start(t, autoKeys...)
	relay := startLossyRelay(t, s.Addr(), 0.10, 45)
	ctx := liveCtx(t, 90*time.Second)
	var convs []string
	for i := 0; i < 8; i++ {
		convs = append(convs, fmt.Sprintf("si_lost_%d_%d", i, time.Now().UnixNano()%100000))
	}
	var mu sync.Mutex
	blocks := map[string][][2]int64{}
	mallocs := 0
	var wg sync.WaitGroup
	for c := 0; c < 3; c++ {
		client, err := seqd.New(seqd.Options{Endpoints: []string{relay.Addr()}, ConnsPerEndpoint: 2,
			CallTimeout: 2 * time.Second, MaxAttempts: 3})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close() })
		cache := New(client, opts...)
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < 12; i++ {
					conv := convs[(w+i)%len(convs)]
					n := int64((w+i)%3 + 1)
					start, err := cache.Malloc(ctx, conv, n)
					mu.Lock()
					mallocs++
					if err == nil {
						blocks[conv] = append(blocks[conv], [2]int64{start + 1, start + n})
					}
					mu.Unlock()
					if err != nil && seqd.CodeOf(err).Retryable() {
						continue // a plain block's caller gives up on this message
					}
					if err != nil {
						t.Errorf("Malloc(%s, %d): %v", conv, n, err)
						return
					}
				}
			}(c*4 + g)
		}
	}
	wg.Wait()
	direct := New(newSeqdClient(t, s))
	run := lostAnswersRun{mallocs: mallocs, dropped: relay.dropped.Load()}
	for _, conv := range convs {
		maxSeq, err := direct.GetMaxSeq(ctx, conv)
		if err != nil {
			t.Fatalf("GetMaxSeq(%s): %v", conv, err)
		}
		run.problems = append(run.problems, tileProblems(conv, blocks[conv], maxSeq)...)
	}
	return run
}

// tileProblems says how conv's blocks fail to tile 1..maxSeq exactly with
// one block starting at 1 (nothing when they do).
func tileProblems(conv string, bs [][2]int64, maxSeq int64) []string {
	sort.Slice(bs, func(i, j int) bool { return bs[i][0] < bs[j][0] })
	var out []string
	next := int64(1)
	for _, b := range bs {
		switch {
		case b[0] > next:
			out = append(out, fmt.Sprintf("%s: seqs %d..%d never answered (a hole)", conv, next, b[0]-1))
		case b[0] < next:
			out = append(out, fmt.Sprintf("%s: block %d..%d overlaps seqs up to %d", conv, b[0], b[1], next-1))
		}
		if b[1]+1 > next {
			next = b[1] + 1
		}
	}
	if len(bs) == 0 || bs[0][0] != 1 {
		out = append(out, fmt.Sprintf("%s: no Malloc answered 0 (a new conversation never seen)", conv))
	}
	if len(bs) > 1 && bs[1][0] == 1 {
		out = append(out, fmt.Sprintf("%s: two Mallocs answered 0", conv))
	}
	if maxSeq != next-1 {
		out = append(out, fmt.Sprintf("%s: GetMaxSeq %d, the last seq answered %d", conv, maxSeq, next-1))
	}
	return out
}

// The max seq survives SIGTERM and SIGKILL exactly, and the next Malloc
// continues right after it: unread (max - read) never grows by a seq that
// no message has.
func TestMaxSeqExactAcrossRestartsLive(t *testing.T) {
	s := testseqd.Start(t, denseAutoKeys...)
	ctx := liveCtx(t, 60*time.Second)
	c := New(newSeqdClient(t, s))
	var bs [][2]int64
	want := int64(0)
	for round, kill := range []bool{false, true, true} {
		for i := int64(1); i <= 5; i++ {
			start, err := c.Malloc(ctx, "sg_restart_group", i*7)
			if err != nil {
				t.Fatal(err)
			}
			bs = append(bs, [2]int64{start + 1, start + i*7})
			want = start + i*7
		}
		s.Restart(kill)
		got, err := c.GetMaxSeq(ctx, "sg_restart_group")
		if err != nil || got != want {
			t.Fatalf("round %d (kill %v): GetMaxSeq after the restart = %d, %v; want %d", round, kill, got, err, want)
		}
	}
	if p := tileProblems("sg_restart_group", bs, want); len(p) > 0 {
		t.Fatal(p)
	}
	// A block far above the segment keys' max_count (10,000): up to the
	// dense keys' own bound (100,000 by default).
	start, err := c.Malloc(ctx, "sg_restart_group", 100_000)
	if err != nil || start != want {
		t.Fatalf("Malloc(100000) = %d, %v; want %d", start, err, want)
	}
	if _, err := c.Malloc(ctx, "sg_restart_group", 100_001); CodeOf(err) != seqd.CodeInvalidArgument {
		t.Fatalf("Malloc(100001): %v; want INVALID_ARGUMENT (over dense_max_count)", err)
	}
}
