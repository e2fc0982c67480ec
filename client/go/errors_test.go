package seqd

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// MESSAGE_ID_CONFLICT is a code of its own: matched by its sentinel only,
// named as the protocol names it, and not retried.
func TestMessageIDConflictIsDistinct(t *testing.T) {
	err := fmt.Errorf("send: %w", &Error{Code: Code(16), Message: "client_msg_id is already used"})
	if !errors.Is(err, ErrMessageIDConflict) {
		t.Fatalf("errors.Is(%v, ErrMessageIDConflict) = false", err)
	}
	for _, other := range []error{ErrInvalidArgument, ErrFailedPrecondition, ErrKeyExists,
		ErrResourceExhausted, ErrNotFound, ErrInternal} {
		if errors.Is(err, other) {
			t.Errorf("errors.Is(%v, %v) = true", err, other)
		}
	}
	if CodeOf(err) != CodeMessageIDConflict || CodeMessageIDConflict.String() != "MESSAGE_ID_CONFLICT" {
		t.Errorf("CodeOf = %v, String = %q", CodeOf(err), CodeMessageIDConflict.String())
	}
	if CodeMessageIDConflict.Retryable() {
		t.Error("MESSAGE_ID_CONFLICT is retryable; a retry cannot succeed")
	}
}

// Against seqd: a re-send with the same content is a duplicate; another
// payload or content type under the used ClientMsgID is
// ErrMessageIDConflict, answered at once, and stores nothing.
func TestMessageIDConflictLive(t *testing.T) {
	_, c := startClient(t)
	ctx := ctxT(t, 20*time.Second)
	m := OutgoingMessage{ConvID: "sg_go_conflict", SenderID: "u1", ClientMsgID: "c1",
		ContentType: 7, Payload: []byte("first")}
	first, err := c.Send(ctx, m)
	if err != nil || first.Duplicate {
		t.Fatalf("send: %+v, %v", first, err)
	}
	if again, err := c.Send(ctx, m); err != nil || !again.Duplicate || again.Seq != first.Seq {
		t.Fatalf("re-send: %+v, %v; want the duplicate of %+v", again, err, first)
	}
	otherPayload, otherType := m, m
	otherPayload.Payload = []byte("second")
	otherType.ContentType = 8
	for _, other := range []OutgoingMessage{otherPayload, otherType} {
		_, err := c.Send(ctx, other)
		if !errors.Is(err, ErrMessageIDConflict) || errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("send %+v: %v; want MESSAGE_ID_CONFLICT", other, err)
		}
	}
	page, err := c.PullRange(ctx, m.ConvID, PullOptions{})
	if err != nil || len(page.Messages) != 1 || string(page.Messages[0].Payload) != "first" {
		t.Fatalf("pull: %+v, %v; want only the first message", page, err)
	}
}
