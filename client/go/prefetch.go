package seqd

// Local ID prefetch (Options.Prefetch), as the C++ client's
// (client/src/async_client_prefetch.cc): NextID takes one ID from a per-key
// cache of ranges, refilled in the background with NEXT_IDS(Prefetch) once
// half of it is used. Callers wait while the cache is empty; a refill that
// fails (after its retries) fails the callers waiting for it.

import (
	"context"
	"sync"
)

type keyCache struct {
	mu     sync.Mutex
	ranges []Range
	avail  int64
	refill *refill // the refill running, nil if none
}

type refill struct {
	done chan struct{}
	err  error // set before done closes
}

// nextFromCache is one ID of key from the cache.
func (c *Client) nextFromCache(ctx context.Context, key string) (int64, error) {
	c.cacheMu.Lock()
	kc := c.cache[key]
	if kc == nil {
		kc = &keyCache{}
		c.cache[key] = kc
	}
	c.cacheMu.Unlock()
	for {
		if c.isClosed() {
			return 0, errorf(CodeCancelled, "client closed")
		}
		kc.mu.Lock()
		if kc.avail > 0 {
			r := &kc.ranges[0]
			id := r.First
			if r.First == r.Last {
				kc.ranges = kc.ranges[1:]
			} else {
				r.First++
			}
			kc.avail--
			if kc.avail*2 <= int64(c.opts.Prefetch) && kc.refill == nil {
				c.startRefill(key, kc)
			}
			kc.mu.Unlock()
			return id, nil
		}
		if kc.refill == nil {
			c.startRefill(key, kc)
		}
		rf := kc.refill
		kc.mu.Unlock()
		select {
		case <-rf.done:
			if rf.err != nil {
				return 0, rf.err
			}
		case <-ctx.Done():
			return 0, ctxError(ctx, "NEXT_IDS (prefetch)")
		case <-c.closing:
			return 0, errorf(CodeCancelled, "client closed")
		}
	}
}

// startRefill fetches Prefetch IDs of key in the background, bounded by
// RetryBudget and by the client's life. kc.mu held.
func (c *Client) startRefill(key string, kc *keyCache) {
	rf := &refill{done: make(chan struct{})}
	kc.refill = rf
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.opts.RetryBudget)
		defer cancel()
		go func() {
			select {
			case <-c.closing:
				cancel()
			case <-ctx.Done():
			}
		}()
		rs, err := c.nextIDs(ctx, key, c.opts.Prefetch)
		kc.mu.Lock()
		if err == nil {
			for _, r := range rs {
				kc.ranges = append(kc.ranges, r)
				kc.avail += r.Len()
			}
		}
		rf.err = err
		kc.refill = nil
		forget := err != nil && kc.avail == 0
		kc.mu.Unlock()
		if forget {
			// A key that fails (e.g. an unknown one) holds no memory; gone
			// before its waiters hear of the failure.
			c.cacheMu.Lock()
			if c.cache[key] == kc {
				delete(c.cache, key)
			}
			c.cacheMu.Unlock()
		}
		close(rf.done)
	}()
}
