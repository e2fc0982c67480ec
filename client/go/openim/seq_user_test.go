package openim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	seqd "seqd.dev/go"
)

// seqUser is OpenIM's cache.SeqUser (open-im-server main,
// pkg/common/storage/cache/seq_user.go): the method set matches at compile
// time.
type seqUser interface {
	GetUserMaxSeq(ctx context.Context, conversationID string, userID string) (int64, error)
	SetUserMaxSeq(ctx context.Context, conversationID string, userID string, seq int64) error
	GetUserMinSeq(ctx context.Context, conversationID string, userID string) (int64, error)
	SetUserMinSeq(ctx context.Context, conversationID string, userID string, seq int64) error
	GetUserReadSeq(ctx context.Context, conversationID string, userID string) (int64, error)
	SetUserReadSeq(ctx context.Context, conversationID string, userID string, seq int64) error
	SetUserReadSeqToDB(ctx context.Context, conversationID string, userID string, seq int64) error
	SetUserMinSeqs(ctx context.Context, userID string, seqs map[string]int64) error
	SetUserReadSeqs(ctx context.Context, userID string, seqs map[string]int64) error
	GetUserReadSeqs(ctx context.Context, userID string, conversationIDs []string) (map[string]int64, error)
}

var _ seqUser = NewSeqUser(nil)

// userFake is an in-memory UserSeqStore with a call log.
type userFake struct {
	mu    sync.Mutex
	seqs  map[string]int64 // user/field/conv -> value
	calls []string
	sizes []int
}

func newUserFake() *userFake { return &userFake{seqs: map[string]int64{}} }

func (f *userFake) UserSeqs(ctx context.Context, user string, field seqd.UserSeqField, convs []string) ([]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "get")
	f.sizes = append(f.sizes, len(convs))
	if len(convs) > 1000 {
		return nil, seqd.ErrTooLarge
	}
	out := make([]int64, len(convs))
	for i, c := range convs {
		out[i] = f.seqs[fmt.Sprintf("%s/%d/%s", user, field, c)]
	}
	return out, nil
}

func (f *userFake) SetUserSeqs(ctx context.Context, user string, field seqd.UserSeqField, raise bool, seqs map[string]int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("set %d raise=%v", field, raise))
	f.sizes = append(f.sizes, len(seqs))
	if len(seqs) > 1000 {
		return seqd.ErrTooLarge
	}
	for c, v := range seqs {
		k := fmt.Sprintf("%s/%d/%s", user, field, c)
		if !raise || v > f.seqs[k] {
			f.seqs[k] = v
		}
	}
	return nil
}

// Each method with OpenIM's semantics: 0 until set; the read seq's single
// setters only raise; every other setter overwrites; one field each.
func TestSeqUserSemantics(t *testing.T) {
	f := newUserFake()
	u := NewSeqUser(f)
	for _, get := range []func(context.Context, string, string) (int64, error){
		u.GetUserMaxSeq, u.GetUserMinSeq, u.GetUserReadSeq} {
		if v, err := get(ctx, "si_a_b", "a"); err != nil || v != 0 {
			t.Fatalf("a Get before any set = %d, %v; want 0", v, err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(u.SetUserMaxSeq(ctx, "si_a_b", "a", 50))
	must(u.SetUserMaxSeq(ctx, "si_a_b", "a", 40)) // overwrite: down too
	must(u.SetUserMinSeq(ctx, "si_a_b", "a", 3))
	must(u.SetUserReadSeq(ctx, "si_a_b", "a", 30))
	must(u.SetUserReadSeq(ctx, "si_a_b", "a", 20))     // lower: ignored
	must(u.SetUserReadSeqToDB(ctx, "si_a_b", "a", 25)) // lower: ignored
	got := func(get func(context.Context, string, string) (int64, error)) int64 {
		v, err := get(ctx, "si_a_b", "a")
		must(err)
		return v
	}
	if mx, mn, rd := got(u.GetUserMaxSeq), got(u.GetUserMinSeq), got(u.GetUserReadSeq); mx != 40 || mn != 3 || rd != 30 {
		t.Fatalf("max %d min %d read %d; want 40 3 30", mx, mn, rd)
	}
	must(u.SetUserReadSeqs(ctx, "a", map[string]int64{"si_a_b": 10, "sg_g": 7})) // overwrite
	must(u.SetUserMinSeqs(ctx, "a", map[string]int64{"si_a_b": 5}))
	reads, err := u.GetUserReadSeqs(ctx, "a", []string{"si_a_b", "sg_g", "sg_none", "sg_g"})
	if err != nil || len(reads) != 3 || reads["si_a_b"] != 10 || reads["sg_g"] != 7 || reads["sg_none"] != 0 {
		t.Fatalf("GetUserReadSeqs = %v, %v", reads, err)
	}
	if v := got(u.GetUserMinSeq); v != 5 {
		t.Fatalf("min after SetUserMinSeqs = %d; want 5", v)
	}
	if v, _ := u.GetUserReadSeq(ctx, "si_a_b", "b"); v != 0 {
		t.Fatalf("another user's read seq = %d; want 0", v)
	}
}

// Maps go in requests of 1000; bad ids and negative values are refused
// before anything is sent.
func TestSeqUserBatchesAndRefusals(t *testing.T) {
	f := newUserFake()
	u := NewSeqUser(f)
	m := map[string]int64{}
	var ids []string
	for i := 0; i < 2500; i++ {
		id := fmt.Sprintf("sg_%d", i)
		m[id] = int64(i)
		ids = append(ids, id)
	}
	if err := u.SetUserReadSeqs(ctx, "a", m); err != nil {
		t.Fatal(err)
	}
	reads, err := u.GetUserReadSeqs(ctx, "a", ids)
	if err != nil || len(reads) != 2500 || reads["sg_2499"] != 2499 {
		t.Fatalf("GetUserReadSeqs of 2500: %d answers, %v", len(reads), err)
	}
	if fmt.Sprint(f.sizes) != "[1000 1000 500 1000 1000 500]" {
		t.Fatalf("request sizes %v; want 1000, 1000, 500 each way", f.sizes)
	}
	f.calls = nil
	if err := u.SetUserReadSeq(ctx, "si_a_b", "a", -1); !errors.Is(err, seqd.ErrInvalidArgument) {
		t.Fatalf("a negative seq: %v", err)
	}
	if err := u.SetUserMinSeqs(ctx, "a", map[string]int64{"si\tok": 1}); !errors.Is(err, ErrConversationID) {
		t.Fatalf("a bad conversation id: %v", err)
	}
	if _, err := u.GetUserReadSeqs(ctx, "a", []string{"si_ok", "bad\x00id"}); !errors.Is(err, ErrConversationID) {
		t.Fatalf("a bad conversation id: %v", err)
	}
	if len(f.calls) != 0 {
		t.Fatalf("refused calls reached seqd: %v", f.calls)
	}
}
