package openim

import (
	"context"

	seqd "seqd.dev/go"
)

// UserSeqStore is what SeqUserCache needs from seqd. *seqd.Client
// satisfies it; tests use a fake.
type UserSeqStore interface {
	// UserSeqs: field of userID in each conversation (at most 1000), 0 if
	// never set.
	UserSeqs(ctx context.Context, userID string, field seqd.UserSeqField, convIDs []string) ([]int64, error)
	// SetUserSeqs: sets (or, raiseOnly, raises) field of userID in each
	// conversation (at most 1000), durably, in one transaction.
	SetUserSeqs(ctx context.Context, userID string, field seqd.UserSeqField, raiseOnly bool,
		seqs map[string]int64) error
}

var _ UserSeqStore = (*seqd.Client)(nil)

// SeqUserCache is OpenIM's per-user seq cache (open-im-server,
// pkg/common/storage/cache/seq_user.go, SeqUser) on seqd: each user's min,
// max and read seq per conversation, in seqd's table seqd_user_seq, so
// OpenIM needs neither Redis nor Mongo's seq_user collection for them.
//
// Semantics, method by method (OpenIM's):
//   - every Get answers 0 for what was never set;
//   - SetUserReadSeq and SetUserReadSeqToDB only raise the read seq (a
//     lower value is ignored), as OpenIM's Mongo path does;
//   - SetUserMaxSeq, SetUserMinSeq(s) and SetUserReadSeqs overwrite;
//   - every value is durable when the call returns (OpenIM's Redis path
//     keeps read seqs only in Redis until SetUserReadSeqToDB);
//   - the map calls go in requests of 1000 conversations, each request
//     one transaction (a failure in a later request leaves the earlier
//     ones written; OpenIM's callers retry the whole map).
//
// Conversation ids become keys as SeqCache's do (the same rules and
// WithKeyFunc). A value below 0 is refused before anything is sent.
//
// Thread safety: safe for concurrent use when its UserSeqStore is.
type SeqUserCache struct {
	s      UserSeqStore
	keyFor func(conversationID string) (string, error)
}

// NewSeqUser is OpenIM's SeqUser on seqd. Options: WithKeyFunc (the same
// function as the SeqCache's, so both name a conversation alike).
func NewSeqUser(s UserSeqStore, opts ...Option) *SeqUserCache {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	return &SeqUserCache{s: s, keyFor: cfg.keyFor}
}

// keys reuses SeqCache's mapping of ids to keys.
func (u *SeqUserCache) keys(ids []string) ([]string, map[string]string, error) {
	return (&SeqCache[SeqTime]{keyFor: u.keyFor}).keys(ids)
}

func (u *SeqUserCache) get(ctx context.Context, conversationID, userID string, f seqd.UserSeqField) (int64, error) {
	keys, _, err := u.keys([]string{conversationID})
	if err != nil {
		return 0, err
	}
	v, err := u.s.UserSeqs(ctx, userID, f, keys)
	if err != nil {
		return 0, err
	}
	if len(v) != 1 {
		return 0, &seqd.Error{Code: seqd.CodeProtocol, Message: "openim: wrong number of answers"}
	}
	return v[0], nil
}

// set writes seqs (conversation id -> value) of userID in requests of 1000.
func (u *SeqUserCache) set(ctx context.Context, userID string, f seqd.UserSeqField, raise bool,
	seqs map[string]int64) error {
	byKey := make(map[string]int64, len(seqs))
	for id, v := range seqs {
		if v < 0 {
			return &seqd.Error{Code: seqd.CodeInvalidArgument, Message: "openim: a seq must not be negative"}
		}
		keys, _, err := u.keys([]string{id})
		if err != nil {
			return err
		}
		if _, dup := byKey[keys[0]]; dup {
			return &ConversationIDError{ID: id, Reason: "maps to the same key as another id"}
		}
		byKey[keys[0]] = v
	}
	part := make(map[string]int64, min(batch, len(byKey)))
	for k, v := range byKey {
		part[k] = v
		if len(part) == batch {
			if err := u.s.SetUserSeqs(ctx, userID, f, raise, part); err != nil {
				return err
			}
			part = make(map[string]int64, batch)
		}
	}
	if len(part) > 0 {
		return u.s.SetUserSeqs(ctx, userID, f, raise, part)
	}
	return nil
}

// GetUserMaxSeq is userID's max seq in conversationID (0 if never set).
func (u *SeqUserCache) GetUserMaxSeq(ctx context.Context, conversationID string, userID string) (int64, error) {
	return u.get(ctx, conversationID, userID, seqd.UserMaxSeq)
}

// SetUserMaxSeq sets userID's max seq in conversationID.
func (u *SeqUserCache) SetUserMaxSeq(ctx context.Context, conversationID string, userID string, seq int64) error {
	return u.set(ctx, userID, seqd.UserMaxSeq, false, map[string]int64{conversationID: seq})
}

// GetUserMinSeq is userID's min seq in conversationID (0 if never set).
func (u *SeqUserCache) GetUserMinSeq(ctx context.Context, conversationID string, userID string) (int64, error) {
	return u.get(ctx, conversationID, userID, seqd.UserMinSeq)
}

// SetUserMinSeq sets userID's min seq in conversationID.
func (u *SeqUserCache) SetUserMinSeq(ctx context.Context, conversationID string, userID string, seq int64) error {
	return u.set(ctx, userID, seqd.UserMinSeq, false, map[string]int64{conversationID: seq})
}

// GetUserReadSeq is userID's read seq in conversationID (0 if never set).
func (u *SeqUserCache) GetUserReadSeq(ctx context.Context, conversationID string, userID string) (int64, error) {
	return u.get(ctx, conversationID, userID, seqd.UserReadSeq)
}

// SetUserReadSeq raises userID's read seq in conversationID to seq (a
// lower seq changes nothing), durably.
func (u *SeqUserCache) SetUserReadSeq(ctx context.Context, conversationID string, userID string, seq int64) error {
	return u.set(ctx, userID, seqd.UserReadSeq, true, map[string]int64{conversationID: seq})
}

// SetUserReadSeqToDB is SetUserReadSeq: every value is in the database
// already.
func (u *SeqUserCache) SetUserReadSeqToDB(ctx context.Context, conversationID string, userID string, seq int64) error {
	return u.SetUserReadSeq(ctx, conversationID, userID, seq)
}

// SetUserMinSeqs sets userID's min seq in each conversation.
func (u *SeqUserCache) SetUserMinSeqs(ctx context.Context, userID string, seqs map[string]int64) error {
	return u.set(ctx, userID, seqd.UserMinSeq, false, seqs)
}

// SetUserReadSeqs sets userID's read seq in each conversation (overwrites,
// as OpenIM's Redis path does).
func (u *SeqUserCache) SetUserReadSeqs(ctx context.Context, userID string, seqs map[string]int64) error {
	return u.set(ctx, userID, seqd.UserReadSeq, false, seqs)
}

// GetUserReadSeqs is userID's read seq in each distinct conversation (0 if
// never set), in requests of 1000.
func (u *SeqUserCache) GetUserReadSeqs(ctx context.Context, userID string, conversationIDs []string) (map[string]int64, error) {
	keys, idOf, err := u.keys(conversationIDs)
	if err != nil {
		return nil, err
	}
	return batched(ctx, keys, idOf, func(ctx context.Context, part []string) ([]int64, error) {
		return u.s.UserSeqs(ctx, userID, seqd.UserReadSeq, part)
	})
}
