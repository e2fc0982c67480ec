package openim

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	seqd "seqd.dev/go"
)

// dbSeqTime has the shape of OpenIM's database.SeqTime (a distinct named
// type, as OpenIM's is).
type dbSeqTime struct {
	Seq  int64
	Time int64
}

// seqConversationCacheV1 is OpenIM's cache.SeqConversationCache in the
// versions without the *WithTime methods.
type seqConversationCacheV1 interface {
	Malloc(ctx context.Context, conversationID string, size int64) (int64, error)
	GetMaxSeq(ctx context.Context, conversationID string) (int64, error)
	SetMinSeq(ctx context.Context, conversationID string, seq int64) error
	GetMinSeq(ctx context.Context, conversationID string) (int64, error)
	GetMaxSeqs(ctx context.Context, conversationIDs []string) (map[string]int64, error)
	SetMinSeqs(ctx context.Context, seqs map[string]int64) error
}

// seqConversationCache is the interface of the versions with them
// (database.SeqTime -> dbSeqTime): the same methods and three more.
type seqConversationCache interface {
	seqConversationCacheV1
	GetCacheMaxSeqWithTime(ctx context.Context, conversationIDs []string) (map[string]dbSeqTime, error)
	GetMaxSeqsWithTime(ctx context.Context, conversationIDs []string) (map[string]dbSeqTime, error)
	GetMaxSeqWithTime(ctx context.Context, conversationID string) (dbSeqTime, error)
}

// The method sets match at compile time.
var (
	_ seqConversationCache   = NewFor[dbSeqTime](nil)
	_ seqConversationCacheV1 = New(nil)
	_ seqConversationCacheV1 = NewFor[dbSeqTime](nil)
)

// fake is an in-memory Allocator: NextBlock hands out segments of `step`
// IDs per key (a block that does not fit the rest of a segment skips it,
// as a segment key does); NextBlockOnce hands out contiguous blocks and
// replays a token's block, as a dense key does. Also min seqs, a call log,
// an injectable error, and lost answers.
type fake struct {
	mu      sync.Mutex
	step    int64
	next    map[string]int64 // next ID to hand out
	end     map[string]int64 // last ID of the current segment
	max     map[string]int64
	minSeq  map[string]int64
	tokens  map[string][2]int64 // key + "/" + token -> its block
	times   map[string]int64    // a key's last allocation (a fake clock), by key
	clock   int64               // the fake clock: one tick per block
	calls   []string
	listLen []int
	fail    error
	// lose > 0: the next NextBlockOnce or NextBlock reserves its block,
	// then answers UNAVAILABLE (an answer lost on the way), and lose drops
	// by one.
	lose int
}

func newFake(step int64) *fake {
	return &fake{step: step, next: map[string]int64{}, end: map[string]int64{},
		max: map[string]int64{}, minSeq: map[string]int64{}, tokens: map[string][2]int64{},
		times: map[string]int64{}}
}

func (f *fake) NextBlockOnce(ctx context.Context, key string, count int, token string) (int64, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "NextBlockOnce "+key)
	if f.fail != nil {
		return 0, 0, f.fail
	}
	b, replay := f.tokens[key+"/"+token]
	if !replay {
		b = [2]int64{f.max[key] + 1, f.max[key] + int64(count)}
		f.tokens[key+"/"+token] = b
		f.max[key] = b[1]
		f.clock += 1000
		f.times[key] = f.clock
	} else if b[1]-b[0]+1 != int64(count) {
		return 0, 0, seqd.ErrInvalidArgument
	}
	if f.lose > 0 {
		f.lose--
		return 0, 0, &seqd.Error{Code: seqd.CodeUnavailable, Message: "answer lost"}
	}
	return b[0], b[1], nil
}

func (f *fake) NextBlock(ctx context.Context, key string, count int) (int64, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "NextBlock "+key)
	if f.fail != nil {
		return 0, 0, f.fail
	}
	n := int64(count)
	if f.next[key] == 0 {
		f.next[key], f.end[key] = 1, 0
	}
	if f.next[key]+n-1 > f.end[key] { // a new segment, big enough for the block
		start := f.end[key] + 1
		seg := f.step
		if n > seg {
			seg = n
		}
		f.next[key], f.end[key] = start, start+seg-1
	}
	first := f.next[key]
	f.next[key] += n
	f.max[key] = first + n - 1
	if f.lose > 0 {
		f.lose--
		return 0, 0, &seqd.Error{Code: seqd.CodeUnavailable, Message: "answer lost"}
	}
	return first, first + n - 1, nil
}

func (f *fake) list(op string, keys []string, m map[string]int64) ([]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, op)
	f.listLen = append(f.listLen, len(keys))
	if f.fail != nil {
		return nil, f.fail
	}
	if len(keys) > 1000 {
		return nil, seqd.ErrTooLarge
	}
	out := make([]int64, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out, nil
}

func (f *fake) MaxIDs(ctx context.Context, keys []string) ([]int64, error) {
	return f.list("MaxIDs", keys, f.max)
}

// MaxIDsWithTimes: the max, and the time of the key's last block (-1 for
// a key never allocated; a key created at 0 is in times with its time).
func (f *fake) MaxIDsWithTimes(ctx context.Context, keys []string) ([]seqd.MaxIDTime, error) {
	maxes, err := f.list("MaxIDsWithTimes", keys, f.max)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]seqd.MaxIDTime, len(keys))
	for i, k := range keys {
		t, ok := f.times[k]
		if !ok {
			t = -1
		}
		out[i] = seqd.MaxIDTime{MaxID: maxes[i], TimeMs: t}
	}
	return out, nil
}

func (f *fake) MinSeqs(ctx context.Context, keys []string) ([]int64, error) {
	return f.list("MinSeqs", keys, f.minSeq)
}

func (f *fake) SetMinSeqs(ctx context.Context, m map[string]int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "SetMinSeqs")
	f.listLen = append(f.listLen, len(m))
	if f.fail != nil {
		return f.fail
	}
	if len(m) > 1000 {
		return seqd.ErrTooLarge
	}
	for k, v := range m {
		f.minSeq[k] = v
	}
	return nil
}

var ctx = context.Background()

func TestMallocReturnsTheSeqBeforeTheBlock(t *testing.T) {
	f := newFake(50)
	s := New(f)
	ret, err := s.Malloc(ctx, "si_a_b", 3)
	if err != nil || ret != 0 {
		t.Fatalf("first Malloc = %d, %v; want 0 (messages 1..3)", ret, err)
	}
	ret, err = s.Malloc(ctx, "si_a_b", 2)
	if err != nil || ret != 3 {
		t.Fatalf("second Malloc = %d, %v; want 3 (messages 4..5)", ret, err)
	}
	// size 0: the current max, nothing reserved.
	for i := 0; i < 2; i++ {
		if ret, err = s.Malloc(ctx, "si_a_b", 0); err != nil || ret != 5 {
			t.Fatalf("Malloc(0) = %d, %v; want 5", ret, err)
		}
	}
	if m, err := s.GetMaxSeq(ctx, "si_a_b"); err != nil || m != 5 {
		t.Fatalf("GetMaxSeq = %d, %v; want 5", m, err)
	}
	if m, err := s.GetMaxSeq(ctx, "sg_never"); err != nil || m != 0 {
		t.Fatalf("GetMaxSeq(never used) = %d, %v; want 0", m, err)
	}
	// A dense key's blocks are contiguous whatever their size.
	ret, err = s.Malloc(ctx, "si_a_b", 48)
	if err != nil || ret != 5 {
		t.Fatalf("Malloc(48) = %d, %v; want 5 (messages 6..53)", ret, err)
	}
	for _, c := range f.calls {
		if strings.HasPrefix(c, "NextBlock ") {
			t.Fatalf("a Malloc asked for a plain block: %v", f.calls)
		}
	}
}

// WithSegmentKeys: plain blocks. A block that does not fit the segment's
// rest starts a new segment: a hole, never an overlap.
func TestMallocWithSegmentKeys(t *testing.T) {
	f := newFake(50)
	s := New(f, WithSegmentKeys())
	if ret, err := s.Malloc(ctx, "si_a_b", 5); err != nil || ret != 0 {
		t.Fatalf("first Malloc = %d, %v; want 0", ret, err)
	}
	ret, err := s.Malloc(ctx, "si_a_b", 48)
	if err != nil || ret != 50 {
		t.Fatalf("Malloc(48) = %d, %v; want 50 (the new segment's first seq is 51)", ret, err)
	}
}

// Answers lost on the way: Malloc sends the same token again, so the
// conversation's first Malloc still answers 0, and no seq is skipped.
func TestMallocLostAnswersLeaveNoHole(t *testing.T) {
	f := newFake(50)
	s := New(f)
	f.lose = 3
	ret, err := s.Malloc(ctx, "si_new", 4)
	if err != nil || ret != 0 {
		t.Fatalf("first Malloc after 3 lost answers = %d, %v; want 0 (a new conversation)", ret, err)
	}
	if n := len(f.calls); n != 4 {
		t.Fatalf("%d calls; want 4 (3 lost, the 4th answered): %v", n, f.calls)
	}
	f.lose = 1
	if ret, err = s.Malloc(ctx, "si_new", 2); err != nil || ret != 4 {
		t.Fatalf("second Malloc = %d, %v; want 4 (messages 5..6, no hole)", ret, err)
	}
	// The same loss without a token (plain blocks, as before dense keys):
	// the caller's retry gets the next block, so the new conversation's
	// first answer is not 0 and seqs 1..4 are a hole. The check above can
	// fail.
	seg := New(f, WithSegmentKeys())
	f.lose = 1
	if _, err = seg.Malloc(ctx, "si_seg", 4); !errors.Is(err, seqd.ErrUnavailable) {
		t.Fatalf("plain Malloc with its answer lost: %v; want UNAVAILABLE", err)
	}
	if ret, err = seg.Malloc(ctx, "si_seg", 4); err != nil || ret != 4 {
		t.Fatalf("plain Malloc retried = %d, %v; want 4 (1..4 lost)", ret, err)
	}
}

// A Malloc that is never answered gives up at the context's deadline,
// with the retryable error it saw; a code that is not retryable at once.
func TestMallocRetriesWithinTheContext(t *testing.T) {
	f := newFake(50)
	s := New(f)
	f.fail = &seqd.Error{Code: seqd.CodeUnavailable, Message: "down"}
	c, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := s.Malloc(c, "si_a", 1); !errors.Is(err, seqd.ErrUnavailable) {
		t.Fatalf("Malloc while down: %v; want UNAVAILABLE", err)
	}
	if d := time.Since(start); d < 140*time.Millisecond || d > 2*time.Second {
		t.Fatalf("gave up after %v; want the context's 150 ms", d)
	}
	if n := len(f.calls); n < 3 {
		t.Fatalf("%d attempts in 150 ms; want several", n)
	}
	f.calls = nil
	f.fail = &seqd.Error{Code: seqd.CodeInvalidArgument, Message: "token on a segment key"}
	if _, err := s.Malloc(ctx, "si_a", 1); !errors.Is(err, seqd.ErrInvalidArgument) || len(f.calls) != 1 {
		t.Fatalf("Malloc: %v after %d calls; want INVALID_ARGUMENT after 1", err, len(f.calls))
	}
}

// Tokens differ between calls and between SeqCaches, and fit seqd's limit.
func TestMallocTokens(t *testing.T) {
	a, b := newTokenSource(), newTokenSource()
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		for _, tok := range []string{a.next(), b.next()} {
			if seen[tok] || len(tok) > 64 || strings.ContainsAny(tok, " \t") {
				t.Fatalf("token %q: repeated or not a valid token", tok)
			}
			seen[tok] = true
		}
	}
}

func TestMallocRefusesBadSizes(t *testing.T) {
	f := newFake(50)
	s := New(f)
	for _, size := range []int64{-1, 1 << 33} {
		if _, err := s.Malloc(ctx, "si_a_b", size); !errors.Is(err, seqd.ErrInvalidArgument) {
			t.Fatalf("Malloc(%d) = %v; want INVALID_ARGUMENT", size, err)
		}
	}
	if len(f.calls) != 0 {
		t.Fatalf("calls made: %v", f.calls)
	}
}

func TestBadConversationIDsAreRefusedBeforeAnyCall(t *testing.T) {
	f := newFake(50)
	s := NewFor[dbSeqTime](f)
	bad := []string{"", strings.Repeat("a", 256), "si_a\tb", "sg_grp\n1", "si_\xff", "si_\xc3",
		"si_\xed\xa0\x80", "si_\u0085", "seqd.x", "n_a\x00", "n_a\x7f"}
	for _, id := range bad {
		checks := map[string]error{}
		_, checks["Malloc"] = s.Malloc(ctx, id, 1)
		_, checks["Malloc0"] = s.Malloc(ctx, id, 0)
		_, checks["GetMaxSeq"] = s.GetMaxSeq(ctx, id)
		_, checks["GetMaxSeqs"] = s.GetMaxSeqs(ctx, []string{"si_ok", id})
		_, checks["GetMinSeq"] = s.GetMinSeq(ctx, id)
		checks["SetMinSeq"] = s.SetMinSeq(ctx, id, 1)
		checks["SetMinSeqs"] = s.SetMinSeqs(ctx, map[string]int64{"si_ok": 1, id: 2})
		_, checks["GetMaxSeqWithTime"] = s.GetMaxSeqWithTime(ctx, id)
		_, checks["GetMaxSeqsWithTime"] = s.GetMaxSeqsWithTime(ctx, []string{id})
		_, checks["GetCacheMaxSeqWithTime"] = s.GetCacheMaxSeqWithTime(ctx, []string{id})
		for name, err := range checks {
			var ce *ConversationIDError
			if !errors.Is(err, ErrConversationID) || !errors.Is(err, seqd.ErrInvalidArgument) ||
				!errors.As(err, &ce) || ce.ID != id {
				t.Fatalf("%s(%q) = %v; want a ConversationIDError (INVALID_ARGUMENT)", name, id, err)
			}
		}
	}
	if len(f.calls) != 0 {
		t.Fatalf("calls made for bad ids: %v", f.calls)
	}
	// The longest valid id, and OpenIM's ids whatever their users' ids hold, pass.
	for _, id := range []string{strings.Repeat("a", 255), strings.Repeat("é", 127), "si_AZaz09_-.:@x",
		"seqd", "si_a b", "sg_grp/1", "si_é", "sg_群聊 ", "si_😀_%2F?#&="} {
		if _, err := s.Malloc(ctx, id, 1); err != nil {
			t.Fatalf("Malloc(%q): %v", id, err)
		}
	}
}

func TestWithKeyFunc(t *testing.T) {
	f := newFake(50)
	s := New(f, WithKeyFunc(func(id string) (string, error) {
		if id == "refuse" {
			return "", errors.New("no")
		}
		return "k_" + strings.ReplaceAll(id, " ", "_"), nil
	}))
	if _, err := s.Malloc(ctx, "si_a b", 2); err != nil {
		t.Fatal(err)
	}
	if f.max["k_si_a_b"] != 2 {
		t.Fatalf("key not mapped: %v", f.max)
	}
	if _, err := s.Malloc(ctx, "refuse", 1); !errors.Is(err, ErrConversationID) {
		t.Fatalf("refused by the key func: %v", err)
	}
	// Two ids that map to one key in one SetMinSeqs: refused.
	if err := s.SetMinSeqs(ctx, map[string]int64{"a b": 1, "a_b": 2}); !errors.Is(err, ErrConversationID) {
		t.Fatalf("colliding ids: %v", err)
	}
	// GetMaxSeqs answers by the ids asked.
	m, err := s.GetMaxSeqs(ctx, []string{"si_a b"})
	if err != nil || m["si_a b"] != 2 || len(m) != 1 {
		t.Fatalf("GetMaxSeqs = %v, %v", m, err)
	}
}

func TestGetMaxSeqsDeduplicatesAndBatches(t *testing.T) {
	f := newFake(50)
	s := New(f)
	var ids []string
	for i := 0; i < 2500; i++ {
		id := fmt.Sprintf("sg_%d", i)
		ids = append(ids, id)
		if i%7 == 0 {
			if _, err := s.Malloc(ctx, id, int64(i%5+1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	ids = append(ids, ids[:100]...) // duplicates
	f.calls, f.listLen = nil, nil
	m, err := s.GetMaxSeqs(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2500 {
		t.Fatalf("%d answers, want 2500", len(m))
	}
	for i := 0; i < 2500; i++ {
		want := int64(0)
		if i%7 == 0 {
			want = int64(i%5 + 1)
		}
		if got := m[fmt.Sprintf("sg_%d", i)]; got != want {
			t.Fatalf("sg_%d: %d, want %d", i, got, want)
		}
	}
	if fmt.Sprint(f.listLen) != "[1000 1000 500]" {
		t.Fatalf("batches %v, want [1000 1000 500]", f.listLen)
	}
	if m, err := s.GetMaxSeqs(ctx, nil); err != nil || m == nil || len(m) != 0 {
		t.Fatalf("GetMaxSeqs(nil) = %v, %v; want an empty map", m, err)
	}
}

func TestWithTimeAnswers(t *testing.T) {
	f := newFake(50)
	s := NewFor[dbSeqTime](f)
	if _, err := s.Malloc(ctx, "si_a_b", 4); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Malloc(ctx, "sg_later", 2); err != nil {
		t.Fatal(err)
	}
	f.times["sg_created"] = 500 // a row at max seq 0 (created, never allocated)
	st, err := s.GetMaxSeqWithTime(ctx, "si_a_b")
	if err != nil || st != (dbSeqTime{Seq: 4, Time: 1000}) {
		t.Fatalf("GetMaxSeqWithTime = %+v, %v; want {4 1000}", st, err)
	}
	all, err := s.GetMaxSeqsWithTime(ctx, []string{"si_a_b", "sg_none", "sg_later", "sg_created"})
	want := map[string]dbSeqTime{"si_a_b": {4, 1000}, "sg_none": {}, "sg_later": {2, 2000}, "sg_created": {0, 500}}
	if err != nil || !reflect.DeepEqual(all, want) {
		t.Fatalf("GetMaxSeqsWithTime = %+v, %v; want %+v", all, err, want)
	}
	cached, err := s.GetCacheMaxSeqWithTime(ctx, []string{"si_a_b", "sg_none", "sg_later", "sg_created"})
	delete(want, "sg_none")
	if err != nil || !reflect.DeepEqual(cached, want) {
		t.Fatalf("GetCacheMaxSeqWithTime = %+v, %v; want %+v (the one without a row left out)", cached, err, want)
	}
}

func TestMinSeqs(t *testing.T) {
	f := newFake(50)
	s := New(f)
	if v, err := s.GetMinSeq(ctx, "si_a_b"); err != nil || v != 0 {
		t.Fatalf("GetMinSeq(never set) = %d, %v", v, err)
	}
	if err := s.SetMinSeq(ctx, "si_a_b", 7); err != nil {
		t.Fatal(err)
	}
	if v, err := s.GetMinSeq(ctx, "si_a_b"); err != nil || v != 7 {
		t.Fatalf("GetMinSeq = %d, %v; want 7", v, err)
	}
	// Lowering is allowed (OpenIM's controller decides).
	if err := s.SetMinSeq(ctx, "si_a_b", 3); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.GetMinSeq(ctx, "si_a_b"); v != 3 {
		t.Fatalf("GetMinSeq = %d; want 3", v)
	}
	// Negative: refused before any call, nothing written.
	f.calls = nil
	if err := s.SetMinSeqs(ctx, map[string]int64{"sg_1": 5, "sg_2": -1}); !errors.Is(err, seqd.ErrInvalidArgument) {
		t.Fatalf("negative min seq: %v", err)
	}
	if len(f.calls) != 0 {
		t.Fatalf("calls made: %v", f.calls)
	}
	// 2300 ids: three requests of at most 1000.
	m := map[string]int64{}
	for i := 0; i < 2300; i++ {
		m[fmt.Sprintf("n_%d", i)] = int64(i)
	}
	f.listLen = nil
	if err := s.SetMinSeqs(ctx, m); err != nil {
		t.Fatal(err)
	}
	sort.Ints(f.listLen)
	if fmt.Sprint(f.listLen) != "[300 1000 1000]" {
		t.Fatalf("batches %v", f.listLen)
	}
	for id, v := range m {
		if f.minSeq[id] != v {
			t.Fatalf("%s = %d, want %d", id, f.minSeq[id], v)
		}
	}
	if err := s.SetMinSeqs(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

func TestErrorsPassThrough(t *testing.T) {
	f := newFake(50)
	f.fail = &seqd.Error{Code: seqd.CodeUnknownKey, Message: "no rule"}
	s := New(f)
	if _, err := s.Malloc(ctx, "x_1", 1); !errors.Is(err, seqd.ErrUnknownKey) {
		t.Fatalf("Malloc: %v", err)
	}
	if _, err := s.GetMaxSeqs(ctx, []string{"a", "b"}); !errors.Is(err, seqd.ErrUnknownKey) {
		t.Fatalf("GetMaxSeqs: %v", err)
	}
	if err := s.SetMinSeq(ctx, "a", 1); !errors.Is(err, seqd.ErrUnknownKey) {
		t.Fatalf("SetMinSeq: %v", err)
	}
	if _, err := s.GetMinSeq(ctx, "a"); !errors.Is(err, seqd.ErrUnknownKey) {
		t.Fatalf("GetMinSeq: %v", err)
	}
}

// OpenIM's send flow (BatchInsertChat2Cache): Malloc(conv, len(msgs)),
// then msgs[i].Seq = start + i + 1, from many goroutines: no seq twice,
// each conversation's blocks contiguous.
func TestSendFlowWithFake(t *testing.T) {
	f := newFake(50)
	s := New(f)
	convs := []string{"si_u1_u2", "sg_g1", "n_u1_u3"}
	used := make([]sync.Map, len(convs))
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				c := (g + i) % len(convs)
				msgs := make([]int64, (g+i)%9+1)
				start, err := s.Malloc(ctx, convs[c], int64(len(msgs)))
				if err != nil {
					t.Error(err)
					return
				}
				for j := range msgs {
					msgs[j] = start + int64(j) + 1
					if _, dup := used[c].LoadOrStore(msgs[j], true); dup {
						t.Errorf("%s seq %d used twice", convs[c], msgs[j])
					}
				}
			}
		}(g)
	}
	wg.Wait()
}
