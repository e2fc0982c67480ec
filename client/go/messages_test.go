package seqd

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestSendPullDuplicateMarkRead(t *testing.T) {
	_, c := startClient(t)
	ctx := ctxT(t, 20*time.Second)
	conv := "sg_go1"
	var first SendResult
	for i := 1; i <= 5; i++ {
		r, err := c.Send(ctx, OutgoingMessage{ConvID: conv, SenderID: "u1", ClientMsgID: fmt.Sprintf("c%d", i),
			ContentType: 101, Payload: []byte(fmt.Sprintf("hello %d", i))})
		if err != nil {
			t.Fatal(err)
		}
		if r.Seq != int64(i) || r.Duplicate {
			t.Fatalf("send %d: %+v", i, r)
		}
		if i == 1 {
			first = r
		}
	}
	// A re-send with the same client message id stores nothing.
	dup, err := c.Send(ctx, OutgoingMessage{ConvID: conv, SenderID: "u1", ClientMsgID: "c1",
		ContentType: 101, Payload: []byte("hello 1")})
	if err != nil || !dup.Duplicate || dup.Seq != 1 || dup.ServerMsgID != first.ServerMsgID || dup.SendTimeMs != first.SendTimeMs {
		t.Fatalf("re-send: %+v, %v; want duplicate of %+v", dup, err, first)
	}
	page, err := c.PullRange(ctx, conv, PullOptions{})
	if err != nil || !page.IsEnd || len(page.Messages) != 5 {
		t.Fatalf("pull: %+v, %v", page, err)
	}
	for i, m := range page.Messages {
		if m.Seq != int64(i+1) || m.SenderID != "u1" || m.ContentType != 101 || m.ConvID != conv ||
			!bytes.Equal(m.Payload, []byte(fmt.Sprintf("hello %d", i+1))) {
			t.Fatalf("message %d: %+v", i, m)
		}
	}
	page, err = c.PullRange(ctx, conv, PullOptions{FromSeq: 2, ToSeq: 4, Limit: 2, Descending: true})
	if err != nil || len(page.Messages) != 2 || page.Messages[0].Seq != 4 || page.Messages[1].Seq != 3 || page.IsEnd {
		t.Fatalf("descending pull: %+v, %v", page, err)
	}
	msgs, err := c.PullSeqs(ctx, conv, []int64{5, 2, 9}, "")
	if err != nil || len(msgs) != 2 || msgs[0].Seq != 2 || msgs[1].Seq != 5 {
		t.Fatalf("pull seqs: %+v, %v", msgs, err)
	}
	maxes, err := c.MaxSeqs(ctx, []string{conv, "sg_none"})
	if err != nil || len(maxes) != 2 || maxes[0] != 5 || maxes[1] != 0 {
		t.Fatalf("max seqs: %v, %v", maxes, err)
	}
	// Members and read seqs.
	if _, err := c.MarkRead(ctx, conv, "u2", 3); !errors.Is(err, ErrNotFound) {
		t.Fatalf("mark read of a non-member: %v, want NOT_FOUND", err)
	}
	one := int64(1)
	if _, err := c.SetMember(ctx, conv, "u2", &one, nil, false); err != nil {
		t.Fatal(err)
	}
	m, err := c.MarkRead(ctx, conv, "u2", 3)
	if err != nil || m.ReadSeq != 3 || m.MinSeq != 1 || m.HasMaxSeq {
		t.Fatalf("mark read: %+v, %v", m, err)
	}
	if _, err := c.MarkRead(ctx, conv, "u2", 2); !errors.Is(err, ErrFailedPrecondition) {
		t.Fatalf("backwards: %v, want FAILED_PRECONDITION", err)
	}
	if _, err := c.MarkRead(ctx, conv, "u2", 99); !errors.Is(err, ErrFailedPrecondition) {
		t.Fatalf("past the max: %v, want FAILED_PRECONDITION", err)
	}
	got, err := c.GetMember(ctx, conv, "u2")
	if err != nil || got != m {
		t.Fatalf("get member: %+v, %v; want %+v", got, err, m)
	}
	st, err := c.SyncUser(ctx, "u2", []string{conv})
	if err != nil || len(st) != 1 || st[0].MaxSeq != 5 || st[0].ReadSeq != 3 || st[0].Unread != 2 || !st[0].Member {
		t.Fatalf("sync: %+v, %v", st, err)
	}
	rec, err := c.SetStatus(ctx, conv, 2, StatusRecalled)
	if err != nil || rec.Status != StatusRecalled || len(rec.Payload) != 0 || rec.Seq != 2 {
		t.Fatalf("recall: %+v, %v", rec, err)
	}
	if _, err := c.Send(ctx, OutgoingMessage{ConvID: "bad\tconv", SenderID: "u1", ClientMsgID: "x"}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("bad conv: %v", err)
	}
	if _, err := c.Send(ctx, OutgoingMessage{ConvID: conv, SenderID: "u1", ClientMsgID: "big",
		Payload: make([]byte, 100000)}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("big payload: %v", err)
	}
}
