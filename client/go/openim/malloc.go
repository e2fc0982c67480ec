package openim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync/atomic"
	"time"

	seqd "seqd.dev/go"
)

// DefaultMallocBudget bounds a Malloc's retries when its context has no
// deadline. With a deadline, the deadline is the bound.
const DefaultMallocBudget = 10 * time.Second

// The backoff between a Malloc's attempts: from mallocBackoffMin, doubled
// each time, at most mallocBackoffMax.
const (
	mallocBackoffMin = 10 * time.Millisecond
	mallocBackoffMax = 500 * time.Millisecond
)

// tokenSource makes the tokens of one SeqCache's Mallocs: a random prefix
// drawn once, then a counter, so two processes (or two SeqCaches) never
// make the same token. Safe for concurrent use.
type tokenSource struct {
	prefix string
	n      atomic.Uint64
}

func newTokenSource() *tokenSource {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on the systems Go supports; the clock
		// keeps tokens distinct between processes if it ever does.
		return &tokenSource{prefix: "oim-t" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	}
	return &tokenSource{prefix: "oim-" + hex.EncodeToString(b[:])}
}

// next is a token no earlier call of this source made: at most 4+24+1+13
// printable ASCII bytes, within seqd's 64.
func (t *tokenSource) next() string {
	return t.prefix + "-" + strconv.FormatUint(t.n.Add(1), 36)
}

// mallocOnce asks for size seqs of key under one token until an answer
// arrives, the error is not retryable, or the budget (the context's
// deadline, else DefaultMallocBudget) is spent. Every attempt carries the
// same token, so an attempt whose answer was lost is answered again, with
// the same block, by the next: a lost answer leaves no hole.
func (s *SeqCache[T]) mallocOnce(ctx context.Context, key string, size int64) (first, last int64, err error) {
	token := s.tokens.next()
	var budget <-chan time.Time
	if _, ok := ctx.Deadline(); !ok {
		timer := time.NewTimer(DefaultMallocBudget)
		defer timer.Stop()
		budget = timer.C
	}
	wait := mallocBackoffMin
	for {
		first, last, err = s.a.NextBlockOnce(ctx, key, int(size), token)
		if err == nil || !seqd.CodeOf(err).Retryable() {
			return first, last, err
		}
		pause := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			pause.Stop()
			return 0, 0, err
		case <-budget:
			pause.Stop()
			return 0, 0, err
		case <-pause.C:
		}
		if wait *= 2; wait > mallocBackoffMax {
			wait = mallocBackoffMax
		}
	}
}
