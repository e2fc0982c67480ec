package openim

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"seqd.dev/go/internal/testseqd"
)

// OpenIM's GetActiveConversation: GetCacheMaxSeqWithTime over a user's
// conversations, sorted by time, newest first. Conversations get their
// Mallocs in a known order, the first one again last, so the order by last
// allocation differs from the order of creation. On dense keys the order
// is exact, survives a kill -9, and a conversation never allocated is left
// out (GetMaxSeqsWithTime answers it with time 0). On segment keys a
// Malloc inside a segment writes nothing, so the time is the segment's:
// the check fails there, as it must.
func TestActiveConversationsByTimeLive(t *testing.T) {
	if problems := activeOrderProblems(t, denseAutoKeys, nil, true); len(problems) > 0 {
		t.Fatal(problems)
	}
	problems := activeOrderProblems(t, segmentAutoKeys, []Option{WithSegmentKeys()}, false)
	if len(problems) == 0 {
		t.Fatal("segment keys sorted by their segments' times passed the check: it cannot fail")
	}
	t.Logf("segment keys (the check failing, as it must): %s", problems[0])
}

func activeOrderProblems(t *testing.T, autoKeys []string, opts []Option, restart bool) []string {
	t.Helper()
	s := testseqd.Start(t, autoKeys...)
	ctx := liveCtx(t, 30*time.Second)
	c := NewFor[dbSeqTime](newSeqdClient(t, s), opts...)
	run := time.Now().UnixNano() % 1000000
	convs := []string{fmt.Sprintf("si_act_a_%d", run), fmt.Sprintf("sg_act_b_%d", run),
		fmt.Sprintf("g_act_c_%d", run), fmt.Sprintf("sn_act_d_%d", run)}
	never := fmt.Sprintf("si_act_never_%d", run)
	order := append(append([]string(nil), convs...), convs[0]) // a again, last
	for _, id := range order {
		if _, err := c.Malloc(ctx, id, 1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(15 * time.Millisecond) // apart by more than a clock tick
	}
	want := []string{convs[0], convs[3], convs[2], convs[1]} // newest first
	asked := append(append([]string(nil), convs...), never)
	cached, err := c.GetCacheMaxSeqWithTime(ctx, asked)
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	if _, ok := cached[never]; ok {
		problems = append(problems, "a conversation never allocated is in GetCacheMaxSeqWithTime")
	}
	if got := newestFirst(cached); fmt.Sprint(got) != fmt.Sprint(want) {
		problems = append(problems, fmt.Sprintf("active order %v, want %v (times %v)", got, want, cached))
	}
	if !restart {
		return problems
	}
	all, err := c.GetMaxSeqsWithTime(ctx, asked)
	if err != nil || all[never] != (dbSeqTime{}) || all[convs[0]] != cached[convs[0]] {
		problems = append(problems, fmt.Sprintf("GetMaxSeqsWithTime %v, %v", all, err))
	}
	s.Restart(true) // kill -9: the times were committed with their blocks
	again, err := c.GetCacheMaxSeqWithTime(ctx, asked)
	if err != nil || fmt.Sprint(again) != fmt.Sprint(cached) {
		problems = append(problems, fmt.Sprintf("after kill -9: %v, %v; before: %v", again, err, cached))
	}
	one, err := c.GetMaxSeqWithTime(ctx, convs[0])
	if err != nil || one != cached[convs[0]] || one.Seq != 2 {
		problems = append(problems, fmt.Sprintf("GetMaxSeqWithTime = %v, %v; want %v", one, err, cached[convs[0]]))
	}
	return problems
}

// newestFirst orders ids as OpenIM's activeConversations does: by time,
// the newest first (ties, which OpenIM leaves in any order, by max seq).
func newestFirst(m map[string]dbSeqTime) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := m[ids[i]], m[ids[j]]
		if a.Time != b.Time {
			return a.Time > b.Time
		}
		return a.Seq > b.Seq
	})
	return ids
}
