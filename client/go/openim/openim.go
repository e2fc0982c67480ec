// Package openim is seqd as OpenIM's conversation seq allocator: a type
// with the method set and the semantics of OpenIM's seq cache interface
// (open-im-server, pkg/common/storage/cache/seq_conversation.go,
// SeqConversationCache), backed by seqd instead of Redis + Lua + Mongo.
//
// It imports nothing from OpenIM. OpenIM takes it with a one-line wiring
// change (docs/openim.md in the seqd repository):
//
//	seqConversationCache := openim.NewFor[database.SeqTime](seqdClient)
//
// (or openim.New(seqdClient) for OpenIM versions whose interface has no
// *WithTime methods).
//
// NewSeqUser is OpenIM's per-user seq cache (SeqUser) on seqd the same way
// (seq_user.go).
//
// Semantics, method by method (OpenIM's, unless said otherwise):
//
//   - Malloc(ctx, conv, size) reserves size seqs of conv and returns the
//     seq just BEFORE them: the messages take ret+1 … ret+size. On a dense
//     key (seqd's default for OpenIM's prefixes, docs/dense-keys.md) the
//     blocks of a conversation are contiguous from 1, with no hole ever:
//     each Malloc is one seqd NEXT_BLOCK_ONCE under a token of its own,
//     sent again with the same token until it is answered (within the
//     context's deadline, else DefaultMallocBudget), so an answer lost on
//     the way costs no seq, and a conversation's first Malloc answers 0
//     exactly once. size 0 returns the current max seq (GetMaxSeq) and
//     reserves nothing; a negative size is an error. A block is at most
//     the server's dense_max_count (100,000 by default) seqs.
//     WithSegmentKeys is for conversations served as segment keys instead
//     (holes allowed, OpenIM's Redis path's holes and more).
//   - GetMaxSeq / GetMaxSeqs: the largest seq handed out (seqd MAX_IDS); 0
//     for a conversation never allocated. GetMaxSeqs answers every distinct
//     id asked (duplicates once), in batches of 1000 ids.
//   - GetMinSeq / SetMinSeq / SetMinSeqs: the conversation's durable min seq
//     (seqd GET_MIN_SEQS / SET_MIN_SEQS), 0 if never set. Set as given (not
//     raised only: OpenIM's controller does that check, as with Redis).
//     SetMinSeqs writes 1000 ids per request, each request atomic; a
//     failure in a later batch leaves the earlier ones written (OpenIM's
//     Redis path writes one Mongo document at a time, so callers already
//     retry the whole map).
//   - GetMaxSeqWithTime / GetMaxSeqsWithTime / GetCacheMaxSeqWithTime: the
//     max seq and the time of the conversation's last Malloc (unix ms, by
//     the database's clock, committed with the block; seqd MAX_IDS_TIMES),
//     0 for a conversation never allocated. GetCacheMaxSeqWithTime answers
//     only for the conversations seqd has a row for (allocated, or created
//     at max seq 0), as Redis answers only for cached ones. On segment keys
//     (WithSegmentKeys) the time is when the row last changed: the last
//     segment reserved, to the second on MySQL.
//
// Conversation ids become seqd keys unchanged. A key is 1..255 bytes of
// well-formed UTF-8 with no control character, and does not start with
// "seqd." (CheckKey); keys compare byte for byte, so ids that differ only
// in case or trailing spaces are two conversations, as in OpenIM. OpenIM's
// ids (si_<user>_<user>, sg_<group>, g_<group>, sn_<…>, n_<…>) fit whatever
// characters its user and group ids hold (OpenIM forbids only ':' in user
// ids) while they stay within 255 bytes: two user ids of up to 125 bytes
// each. An id that does not fit is refused before anything is sent, with
// an error matching errors.Is(err, ErrConversationID) and errors.Is(err,
// seqd.ErrInvalidArgument); no seq is allocated for it. WithKeyFunc maps
// ids differently (e.g. a hash) for deployments whose ids are longer.
//
// Thread safety: a SeqCache is safe for concurrent use when its Allocator
// is (*seqd.Client is).
package openim

import (
	"context"
	"errors"
	"math"

	seqd "seqd.dev/go"
)

// Allocator is what the adapter needs from seqd. *seqd.Client satisfies
// it; tests use a fake.
type Allocator interface {
	// NextBlock: count IDs of key with no hole, first..last.
	NextBlock(ctx context.Context, key string, count int) (first, last int64, err error)
	// NextBlockOnce: NextBlock of a dense key, the same block again for
	// the same key, count and token.
	NextBlockOnce(ctx context.Context, key string, count int, token string) (first, last int64, err error)
	// MaxIDs: per key (at most 1000), the largest ID handed out, 0 if none.
	MaxIDs(ctx context.Context, keys []string) ([]int64, error)
	// MaxIDsWithTimes: MaxIDs and each key's last allocation time (unix
	// ms, -1 for a key without a row).
	MaxIDsWithTimes(ctx context.Context, keys []string) ([]seqd.MaxIDTime, error)
	// MinSeqs: per key (at most 1000), the durable min seq, 0 if never set.
	MinSeqs(ctx context.Context, keys []string) ([]int64, error)
	// SetMinSeqs: sets each key's min seq (at most 1000 keys), durably.
	SetMinSeqs(ctx context.Context, minSeqs map[string]int64) error
}

var _ Allocator = (*seqd.Client)(nil)

// SeqTime is a max seq and the time of its allocation in unix ms (see the
// package comment). Its fields are those of OpenIM's
// database.SeqTime, so NewFor can answer in OpenIM's own type.
type SeqTime struct {
	Seq  int64
	Time int64
}

// SeqTimeType is any struct type with exactly SeqTime's fields, such as
// OpenIM's database.SeqTime.
type SeqTimeType interface {
	~struct {
		Seq  int64
		Time int64
	}
}

// batch is seqd's limit of keys per list request.
const batch = 1000

// SeqCache is OpenIM's conversation seq cache on seqd. T is the type the
// *WithTime methods answer in (SeqTime, or OpenIM's database.SeqTime).
type SeqCache[T SeqTimeType] struct {
	a           Allocator
	keyFor      func(conversationID string) (string, error)
	segmentKeys bool         // Malloc by NextBlock, with no token
	tokens      *tokenSource // Malloc's tokens
}

// Option configures a SeqCache.
type Option func(*config)

type config struct {
	keyFor      func(string) (string, error)
	segmentKeys bool
}

// WithKeyFunc maps each conversation id to its seqd key with f instead of
// using it unchanged (the default refuses ids that are not valid keys).
// f must be deterministic and must never change for a deployment: a
// conversation whose key changes starts its seqs again from 1. The keys f
// returns are still checked against seqd's key rules.
func WithKeyFunc(f func(conversationID string) (string, error)) Option {
	return func(c *config) { c.keyFor = f }
}

// WithSegmentKeys makes Malloc ask for plain blocks (NEXT_BLOCK, no token),
// for a deployment whose auto-create rules make OpenIM's conversations
// segment keys: faster, but a restart, a lost answer or a block that does
// not fit its segment leaves a hole, and GetMaxSeq after a restart may be
// above the last seq used. Without it, Malloc on a segment key fails with
// INVALID_ARGUMENT (a token needs a dense key).
func WithSegmentKeys() Option {
	return func(c *config) { c.segmentKeys = true }
}

// New is a SeqCache whose *WithTime methods answer in SeqTime.
func New(a Allocator, opts ...Option) *SeqCache[SeqTime] { return NewFor[SeqTime](a, opts...) }

// NewFor is a SeqCache whose *WithTime methods answer in T: with OpenIM's
// database.SeqTime it satisfies OpenIM's cache.SeqConversationCache.
func NewFor[T SeqTimeType](a Allocator, opts ...Option) *SeqCache[T] {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	return &SeqCache[T]{a: a, keyFor: cfg.keyFor, segmentKeys: cfg.segmentKeys, tokens: newTokenSource()}
}

// key is conversationID's seqd key, or an error matching ErrConversationID.
func (s *SeqCache[T]) key(conversationID string) (string, error) {
	k := conversationID
	if s.keyFor != nil {
		var err error
		if k, err = s.keyFor(conversationID); err != nil {
			return "", &ConversationIDError{ID: conversationID, Reason: err.Error()}
		}
	}
	if reason := CheckKey(k); reason != "" {
		return "", &ConversationIDError{ID: conversationID, Reason: reason}
	}
	return k, nil
}

// keys maps ids to keys in order, and says which key is which id.
func (s *SeqCache[T]) keys(conversationIDs []string) (keys []string, idOf map[string]string, err error) {
	keys = make([]string, 0, len(conversationIDs))
	idOf = make(map[string]string, len(conversationIDs))
	for _, id := range conversationIDs {
		k, err := s.key(id)
		if err != nil {
			return nil, nil, err
		}
		if _, dup := idOf[k]; dup {
			continue
		}
		idOf[k] = id
		keys = append(keys, k)
	}
	return keys, idOf, nil
}

// Malloc reserves size seqs of conversationID with no hole and returns the
// seq just before them (the messages use ret+1 … ret+size). size 0 is
// GetMaxSeq. See the package comment for the retries and WithSegmentKeys.
func (s *SeqCache[T]) Malloc(ctx context.Context, conversationID string, size int64) (int64, error) {
	if size < 0 {
		return 0, &seqd.Error{Code: seqd.CodeInvalidArgument, Message: "openim: Malloc size must not be negative"}
	}
	if size == 0 {
		return s.GetMaxSeq(ctx, conversationID)
	}
	if size > math.MaxUint32 {
		return 0, &seqd.Error{Code: seqd.CodeInvalidArgument, Message: "openim: Malloc size too large"}
	}
	k, err := s.key(conversationID)
	if err != nil {
		return 0, err
	}
	var first, last int64
	if s.segmentKeys {
		first, last, err = s.a.NextBlock(ctx, k, int(size))
	} else {
		first, last, err = s.mallocOnce(ctx, k, size)
	}
	if err != nil {
		return 0, err
	}
	if last-first+1 != size {
		return 0, &seqd.Error{Code: seqd.CodeProtocol, Message: "openim: block of the wrong size"}
	}
	return first - 1, nil
}

// GetMaxSeq is the largest seq handed out for conversationID, 0 if none.
func (s *SeqCache[T]) GetMaxSeq(ctx context.Context, conversationID string) (int64, error) {
	return s.one(ctx, conversationID, s.a.MaxIDs)
}

// GetMaxSeqs is GetMaxSeq for each distinct id, in requests of 1000 ids.
func (s *SeqCache[T]) GetMaxSeqs(ctx context.Context, conversationIDs []string) (map[string]int64, error) {
	return s.list(ctx, conversationIDs, s.a.MaxIDs)
}

// one asks get for the key of one id: a list call of one.
func (s *SeqCache[T]) one(ctx context.Context, id string,
	get func(context.Context, []string) ([]int64, error)) (int64, error) {
	k, err := s.key(id)
	if err != nil {
		return 0, err
	}
	v, err := get(ctx, []string{k})
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// list asks get for the keys of ids in batches and maps the answers back.
func (s *SeqCache[T]) list(ctx context.Context, ids []string,
	get func(context.Context, []string) ([]int64, error)) (map[string]int64, error) {
	keys, idOf, err := s.keys(ids)
	if err != nil {
		return nil, err
	}
	return batched(ctx, keys, idOf, get)
}

// batched asks get for keys in requests of `batch` and maps each answer
// back to its conversation id (idOf).
func batched[V any](ctx context.Context, keys []string, idOf map[string]string,
	get func(context.Context, []string) ([]V, error)) (map[string]V, error) {
	out := make(map[string]V, len(keys))
	for i := 0; i < len(keys); i += batch {
		part := keys[i:min(i+batch, len(keys))]
		vals, err := get(ctx, part)
		if err != nil {
			return nil, err
		}
		if len(vals) != len(part) {
			return nil, &seqd.Error{Code: seqd.CodeProtocol, Message: "openim: wrong number of answers"}
		}
		for j, k := range part {
			out[idOf[k]] = vals[j]
		}
	}
	return out, nil
}

// GetMinSeq is conversationID's min seq, 0 if never set.
func (s *SeqCache[T]) GetMinSeq(ctx context.Context, conversationID string) (int64, error) {
	return s.one(ctx, conversationID, s.a.MinSeqs)
}

// SetMinSeq sets conversationID's min seq (>= 0), durably.
func (s *SeqCache[T]) SetMinSeq(ctx context.Context, conversationID string, seq int64) error {
	return s.SetMinSeqs(ctx, map[string]int64{conversationID: seq})
}

// SetMinSeqs sets each conversation's min seq (>= 0), durably, 1000 ids per
// request (each request atomic). Every id and value is checked before the
// first request.
func (s *SeqCache[T]) SetMinSeqs(ctx context.Context, seqs map[string]int64) error {
	byKey := make(map[string]int64, len(seqs))
	for id, v := range seqs {
		if v < 0 {
			return &seqd.Error{Code: seqd.CodeInvalidArgument, Message: "openim: a min seq must not be negative"}
		}
		k, err := s.key(id)
		if err != nil {
			return err
		}
		if _, dup := byKey[k]; dup {
			return &ConversationIDError{ID: id, Reason: "maps to the same key as another id"}
		}
		byKey[k] = v
	}
	part := make(map[string]int64, min(batch, len(byKey)))
	for k, v := range byKey {
		part[k] = v
		if len(part) == batch {
			if err := s.a.SetMinSeqs(ctx, part); err != nil {
				return err
			}
			part = make(map[string]int64, batch)
		}
	}
	if len(part) > 0 {
		return s.a.SetMinSeqs(ctx, part)
	}
	return nil
}

// GetMaxSeqWithTime is GetMaxSeq with the time of the conversation's last
// allocation (unix ms; 0 for a conversation never allocated).
func (s *SeqCache[T]) GetMaxSeqWithTime(ctx context.Context, conversationID string) (T, error) {
	m, err := s.GetMaxSeqsWithTime(ctx, []string{conversationID})
	if err != nil {
		return T{}, err
	}
	return m[conversationID], nil
}

// GetMaxSeqsWithTime is GetMaxSeqWithTime for each distinct id, in
// requests of 1000 ids (seqd MAX_IDS_TIMES).
func (s *SeqCache[T]) GetMaxSeqsWithTime(ctx context.Context, conversationIDs []string) (map[string]T, error) {
	return s.withTimes(ctx, conversationIDs, false)
}

// GetCacheMaxSeqWithTime is GetMaxSeqsWithTime for the conversations seqd
// knows (a row exists: allocated, or created, at max seq 0 too), as
// OpenIM's Redis answers only for the conversations it has cached.
func (s *SeqCache[T]) GetCacheMaxSeqWithTime(ctx context.Context, conversationIDs []string) (map[string]T, error) {
	return s.withTimes(ctx, conversationIDs, true)
}

// withTimes asks seqd for the max seqs and times of ids in batches; known
// leaves out the conversations without a row.
func (s *SeqCache[T]) withTimes(ctx context.Context, ids []string, known bool) (map[string]T, error) {
	keys, idOf, err := s.keys(ids)
	if err != nil {
		return nil, err
	}
	got, err := batched(ctx, keys, idOf, s.a.MaxIDsWithTimes)
	if err != nil {
		return nil, err
	}
	out := make(map[string]T, len(got))
	for id, v := range got {
		if v.TimeMs < 0 { // no row
			if known {
				continue
			}
			v.TimeMs = 0
		}
		out[id] = T(SeqTime{Seq: v.MaxID, Time: v.TimeMs})
	}
	return out, nil
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

// ErrConversationID matches (errors.Is) every ConversationIDError.
var ErrConversationID = errors.New("openim: conversation id is not a valid seqd key")
