package seqd

// The message store ops (docs/protocol.md, "Message store ops"). Each call
// follows the retry rules of the package comment; keyed by the
// conversation for cluster routing.

import (
	"context"
)

// MessageStatus of a stored message.
type MessageStatus uint8

const (
	StatusNormal   MessageStatus = 0
	StatusRecalled MessageStatus = 1 // payload cleared
	StatusDeleted  MessageStatus = 2 // payload cleared
)

// Message is a stored message.
type Message struct {
	ConvID      string
	Seq         int64
	ServerMsgID int64
	SenderID    string
	ClientMsgID string
	ContentType int32
	Status      MessageStatus
	SendTimeMs  int64
	Payload     []byte // empty for recalled and deleted messages
}

// OutgoingMessage is a message to send. Re-sending the same (ConvID,
// SenderID, ClientMsgID) stores nothing and answers the first one's values
// with Duplicate = true.
type OutgoingMessage struct {
	ConvID      string
	SenderID    string
	ClientMsgID string
	ContentType int32
	Payload     []byte
}

// SendResult is SEND's answer.
type SendResult struct {
	Seq         int64
	ServerMsgID int64
	SendTimeMs  int64
	Duplicate   bool // a re-send of a message already stored
}

// Send stores m with its conversation's next seq (SEND), answered once
// durable. Retried on the retryable codes with the same bytes (the same
// client message id): a re-send of a message that was stored answers its
// first seq with Duplicate = true. If Send fails with a retryable code
// after MaxAttempts, the message may or may not be stored: send the same
// OutgoingMessage again later, never under a new ClientMsgID.
func (c *Client) Send(ctx context.Context, m OutgoingMessage) (SendResult, error) {
	var e enc
	e.str(m.ConvID)
	e.str(m.SenderID)
	e.str(m.ClientMsgID)
	e.i32(m.ContentType)
	e.bytes(m.Payload)
	res, err := c.callEnc(ctx, m.ConvID, opSend, &e)
	if err != nil {
		return SendResult{}, err
	}
	d := dec{b: res}
	r := SendResult{Seq: d.i64(), ServerMsgID: d.i64(), SendTimeMs: d.i64(), Duplicate: d.u8() != 0}
	return r, d.done("SEND")
}

// PullOptions select the messages of PullRange.
type PullOptions struct {
	FromSeq    int64  // default 1
	ToSeq      int64  // 0: up to the conversation's max
	Limit      int    // default 100; above 1000 (the protocol's maximum) counts as 1000
	Descending bool   // from ToSeq down
	UserID     string // "": no member window applies
}

// PullPage is PullRange's answer.
type PullPage struct {
	Messages []Message
	IsEnd    bool // false: more messages lie in the range beyond the last one
}

func (d *dec) message(conv string) Message {
	return Message{ConvID: conv, Seq: d.i64(), ServerMsgID: d.i64(), SenderID: d.str(),
		ClientMsgID: d.str(), ContentType: d.i32(), Status: MessageStatus(d.u8()),
		SendTimeMs: d.i64(), Payload: d.bytes()}
}

// messages reads a list of conv's messages: a u32 count, then each.
func (d *dec) messages(conv string) []Message {
	out := make([]Message, d.count(messageMin))
	for i := range out {
		out[i] = d.message(conv)
	}
	return out
}

// messageMin: the fewest bytes a message takes on the wire.
const messageMin = 8 + 8 + 2 + 2 + 4 + 1 + 8 + 4

// PullRange returns the messages with FromSeq <= seq <= ToSeq (PULL_RANGE),
// at most o.Limit of them: 100 when 0, and at most 1000 (a larger Limit is
// clamped to 1000, the protocol's maximum page; IsEnd tells whether more
// follow).
func (c *Client) PullRange(ctx context.Context, convID string, o PullOptions) (PullPage, error) {
	if o.FromSeq == 0 {
		o.FromSeq = 1
	}
	if o.Limit == 0 {
		o.Limit = 100
	}
	if o.Limit > maxListItems {
		o.Limit = maxListItems // a page holds at most that; IsEnd says whether more follow
	}
	if o.Limit < 0 {
		return PullPage{}, errorf(CodeInvalidArgument, "Limit must not be negative (0: 100, at most 1000)")
	}
	var e enc
	e.str(convID)
	e.i64(o.FromSeq)
	e.i64(o.ToSeq)
	e.u32(uint32(o.Limit))
	e.flag(o.Descending)
	e.str(o.UserID)
	res, err := c.callEnc(ctx, convID, opPullRange, &e)
	if err != nil {
		return PullPage{}, err
	}
	d := dec{b: res}
	page := PullPage{IsEnd: d.u8() != 0}
	page.Messages = d.messages(convID)
	return page, d.done("PULL_RANGE")
}

// PullSeqs returns the messages among seqs that exist (in the member's
// window with a user), ascending, each once; if they would not fit one
// frame, the leading ones (ask again for the rest).
func (c *Client) PullSeqs(ctx context.Context, convID string, seqs []int64, userID string) ([]Message, error) {
	if len(seqs) > maxListItems {
		return nil, errorf(CodeTooLarge, "more than %d seqs", maxListItems)
	}
	var e enc
	e.str(convID)
	e.str(userID)
	e.u32(uint32(len(seqs)))
	for _, s := range seqs {
		e.i64(s)
	}
	res, err := c.callEnc(ctx, convID, opPullSeqs, &e)
	if err != nil {
		return nil, err
	}
	d := dec{b: res}
	out := d.messages(convID)
	return out, d.done("PULL_SEQS")
}

// MaxSeqs returns each conversation's max seq (0 for none), in the order
// asked (MAX_SEQS). At most 1000.
func (c *Client) MaxSeqs(ctx context.Context, convIDs []string) ([]int64, error) {
	return c.int64List(ctx, opMaxSeqs, convIDs)
}

// MemberInfo is a member's window and read seq.
type MemberInfo struct {
	MinSeq    int64
	MaxSeq    int64 // valid when HasMaxSeq (the user left at MaxSeq)
	HasMaxSeq bool
	ReadSeq   int64
}

func (c *Client) member(ctx context.Context, conv string, op byte, e *enc) (MemberInfo, error) {
	res, err := c.callEnc(ctx, conv, op, e)
	if err != nil {
		return MemberInfo{}, err
	}
	d := dec{b: res}
	m := MemberInfo{MinSeq: d.i64(), HasMaxSeq: d.u8() != 0, MaxSeq: d.i64(), ReadSeq: d.i64()}
	return m, d.done(opName(op))
}

// MarkRead raises userID's read seq in convID (MARK_READ):
// FAILED_PRECONDITION if it would go backwards or past the max, NOT_FOUND
// for a non-member.
func (c *Client) MarkRead(ctx context.Context, convID, userID string, readSeq int64) (MemberInfo, error) {
	var e enc
	e.str(convID)
	e.str(userID)
	e.i64(readSeq)
	return c.member(ctx, convID, opMarkRead, &e)
}

// GetMember is userID's member row in convID; NOT_FOUND for a non-member.
func (c *Client) GetMember(ctx context.Context, convID, userID string) (MemberInfo, error) {
	var e enc
	e.str(convID)
	e.str(userID)
	return c.member(ctx, convID, opGetMember, &e)
}

// SetMember adds or updates a member (SET_MEMBER). minSeq nil: a new
// member starts after the conversation's current max; maxSeq non-nil: the
// user left at that seq; clearMax: rejoin.
func (c *Client) SetMember(ctx context.Context, convID, userID string, minSeq, maxSeq *int64, clearMax bool) (MemberInfo, error) {
	var e enc
	e.str(convID)
	e.str(userID)
	var flags uint8
	var lo, hi int64
	if minSeq != nil {
		flags |= 1
		lo = *minSeq
	}
	if maxSeq != nil {
		flags |= 2
		hi = *maxSeq
	}
	if clearMax {
		flags |= 4
	}
	e.u8(flags)
	e.i64(lo)
	e.i64(hi)
	return c.member(ctx, convID, opSetMember, &e)
}

// ConvState is one conversation's state for a user (SyncUser).
type ConvState struct {
	ConvID  string
	MaxSeq  int64
	MinSeq  int64
	ReadSeq int64
	Unread  int64
	Member  bool
}

// SyncUser is the login sync of userID over convIDs (SYNC_USER).
func (c *Client) SyncUser(ctx context.Context, userID string, convIDs []string) ([]ConvState, error) {
	if len(convIDs) > maxListItems {
		return nil, errorf(CodeTooLarge, "more than %d conversations", maxListItems)
	}
	var e enc
	e.str(userID)
	e.strList(convIDs)
	res, err := c.callEnc(ctx, firstKey(convIDs), opSyncUser, &e)
	if err != nil {
		return nil, err
	}
	d := dec{b: res}
	out := make([]ConvState, d.count(2+8*4+1))
	for i := range out {
		out[i] = ConvState{ConvID: d.str(), MaxSeq: d.i64(), MinSeq: d.i64(), ReadSeq: d.i64(),
			Unread: d.i64(), Member: d.u8() != 0}
	}
	return out, d.done("SYNC_USER")
}

// SetStatus recalls or deletes message seq (SET_STATUS); the result is the
// updated message.
func (c *Client) SetStatus(ctx context.Context, convID string, seq int64, status MessageStatus) (Message, error) {
	var e enc
	e.str(convID)
	e.i64(seq)
	e.u8(uint8(status))
	res, err := c.callEnc(ctx, convID, opSetStatus, &e)
	if err != nil {
		return Message{}, err
	}
	d := dec{b: res}
	m := d.message(convID)
	return m, d.done("SET_STATUS")
}
