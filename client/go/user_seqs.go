package seqd

import "context"

// UserSeqField names one of a user's seqs in a conversation (OpenIM's
// SeqUser): its min seq, max seq or read seq.
type UserSeqField uint8

const (
	UserMinSeq  UserSeqField = 1
	UserMaxSeq  UserSeqField = 2
	UserReadSeq UserSeqField = 3
)

// UserSeqs returns field of userID in each conversation (USER_SEQS), in
// the order asked; 0 for a pair never set. At most 1000 conversations.
// userID is 1 to 255 bytes with no control characters.
func (c *Client) UserSeqs(ctx context.Context, userID string, field UserSeqField, convIDs []string) ([]int64, error) {
	if len(convIDs) == 0 {
		return []int64{}, nil
	}
	if field < UserMinSeq || field > UserReadSeq {
		return nil, errorf(CodeInvalidArgument, "unknown user seq field %d", field)
	}
	var head enc
	head.str(userID)
	head.u8(uint8(field))
	res, err := c.keyListCall(ctx, opUserSeqs, &head, convIDs)
	if err != nil {
		return nil, err
	}
	return decodeInt64List(res, "USER_SEQS", len(convIDs), "values for conversations")
}

// SetUserSeqs sets field of userID in each conversation (SET_USER_SEQS),
// all in one transaction, durable when it returns: to the value given, or,
// with raiseOnly, to the larger of it and the value stored. Values are
// >= 0; at most 1000 conversations. Retried by the retry rules (setting or
// raising the same values again is harmless).
func (c *Client) SetUserSeqs(ctx context.Context, userID string, field UserSeqField, raiseOnly bool,
	seqs map[string]int64) error {
	if len(seqs) == 0 {
		return nil
	}
	if len(seqs) > maxListItems {
		return errorf(CodeTooLarge, "more than %d conversations", maxListItems)
	}
	if field < UserMinSeq || field > UserReadSeq {
		return errorf(CodeInvalidArgument, "unknown user seq field %d", field)
	}
	var e enc
	e.str(userID)
	e.u8(uint8(field))
	e.flag(raiseOnly)
	route := e.keyValues(seqs)
	res, err := c.callEnc(ctx, route, opSetUserSeqs, &e)
	if err != nil {
		return err
	}
	return emptyResult(res, "SET_USER_SEQS")
}
