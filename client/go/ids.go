package seqd

import (
	"context"
)

// Range is the IDs First..Last, both included.
type Range struct{ First, Last int64 }

// Len is the number of IDs in r.
func (r Range) Len() int64 { return r.Last - r.First + 1 }

// NextIDs returns count IDs of key (1 to the server's max_count, 10,000 by
// default) as the increasing ranges they span (NEXT_IDS). With
// Options.Prefetch > 0, NextIDs(ctx, key, 1) is served from the local
// prefetch cache (see NextID). Retried by the retry rules: the IDs of a
// lost answer are skipped, never handed out twice.
func (c *Client) NextIDs(ctx context.Context, key string, count int) ([]Range, error) {
	if ctx == nil {
		return nil, errNilContext("NEXT_IDS")
	}
	if err := checkCount(count, idsCountLimit); err != nil {
		return nil, err
	}
	if count == 1 && c.opts.Prefetch > 0 {
		id, err := c.nextFromCache(ctx, key)
		if err != nil {
			return nil, err
		}
		return []Range{{id, id}}, nil
	}
	return c.nextIDs(ctx, key, count)
}

// The protocol's largest count (a u32), and what bounds it further on
// the server, for checkCount's error.
const (
	maxCount            = 0xFFFFFFFF
	idsCountLimit       = "the server's max_count, 10,000 by default, is lower"
	snowflakeCountLimit = "the server's snowflake max count, 4,096 by default, is lower"
)

// checkCount is the error of a count outside 1..maxCount, nil for one
// inside; limit says what bounds it further on the server.
func checkCount(count int, limit string) error {
	switch {
	case count < 1:
		return errorf(CodeInvalidArgument, "count must be at least 1, got %d", count)
	case int64(count) > maxCount:
		return errorf(CodeInvalidArgument, "count must be at most %d (%s), got %d", int64(maxCount), limit, count)
	}
	return nil
}

// nextIDs is one NEXT_IDS call (never from the cache). Its first attempt
// goes the cheap way when a connection is open (firstTarget): the frame
// written straight into the connection's buffer, no payload buffer, no
// retry state; a failure continues by the retry rules (nextIDsAfter).
// REQUIRES: ctx not nil, count checked.
func (c *Client) nextIDs(ctx context.Context, key string, count int) ([]Range, error) {
	if len(key) > 0xFFFF || c.opts.RetryBudget < c.opts.CallTimeout || c.isClosed() {
		return c.nextIDsAfter(ctx, key, count, nil)
	}
	cn, ep, flags, routed := c.firstTarget(nil, key)
	if cn == nil {
		return c.nextIDsAfter(ctx, key, count, nil)
	}
	c.counters.calls.Add(1)
	res, start, err := cn.callKeyCount(ctx, c.opts.CallTimeout, opNextIDs, flags, key, uint32(count))
	if err == nil {
		if !routed && ep.index < len(c.opts.Endpoints) {
			c.current.Store(int32(ep.index))
		}
		return decodeNextIDs(res, count)
	}
	if ctx.Err() != nil {
		cs := callState{op: opNextIDs}
		return nil, c.counters.failed(c.endedError(ctx, &cs))
	}
	prior := c.afterFirst(&failedAttempt{ep: ep, routed: routed, err: err, start: start})
	if prior == nil {
		return nil, c.counters.failed(err)
	}
	return c.nextIDsAfter(ctx, key, count, prior)
}

// nextIDsAfter is nextIDs continuing after prior, a failed first attempt
// made elsewhere (async.go), when prior is set.
func (c *Client) nextIDsAfter(ctx context.Context, key string, count int, prior *failedAttempt) ([]Range, error) {
	var e enc
	e.str(key)
	e.u32(uint32(count))
	p, err := e.payload()
	if err != nil {
		return nil, err
	}
	res, err := c.invokeAfter(ctx, key, opNextIDs, p, prior)
	if err != nil {
		return nil, err
	}
	return decodeNextIDs(res, count)
}

// decodeNextIDs checks and decodes a NEXT_IDS answer for count IDs.
func decodeNextIDs(res []byte, count int) ([]Range, error) {
	d := dec{b: res}
	n := d.count(16)
	out := make([]Range, n)
	for i := range out {
		out[i] = Range{d.i64(), d.i64()}
	}
	if err := d.done("NEXT_IDS"); err != nil {
		return nil, err
	}
	var total int64
	for _, r := range out {
		if r.Last < r.First {
			return nil, errorf(CodeProtocol, "malformed NEXT_IDS result")
		}
		total += r.Len()
	}
	if n == 0 || total != int64(count) {
		return nil, errorf(CodeProtocol, "NEXT_IDS answered %d IDs for %d", total, count)
	}
	return out, nil
}

// NextID returns one ID of key. With Options.Prefetch > 0 it comes from a
// local batch of Prefetch IDs fetched with one request and refilled in the
// background once half of it is used (as the C++ client and Tinyid's do).
// That saves round trips but trades strict ordering across clients: two
// clients hold interleaved batches, so an ID handed out later by one may
// be smaller than one handed out earlier by the other. IDs stay unique;
// IDs still held when the client closes are never used.
func (c *Client) NextID(ctx context.Context, key string) (int64, error) {
	rs, err := c.NextIDs(ctx, key, 1)
	if err != nil {
		return 0, err
	}
	return rs[0].First, nil
}

// NextBlock returns count IDs of key with no hole, first..last (NEXT_BLOCK):
// never spanning two segments (IDs left in a segment too short for the
// block are skipped, never handed out). Never from the prefetch cache.
func (c *Client) NextBlock(ctx context.Context, key string, count int) (first, last int64, err error) {
	if err := checkCount(count, idsCountLimit); err != nil {
		return 0, 0, err
	}
	var e enc
	e.str(key)
	e.u32(uint32(count))
	return c.block(ctx, key, opNextBlock, &e, count)
}

// NextBlockOnce is NextBlock made idempotent by token (NEXT_BLOCK_ONCE; a
// dense key only, see docs/dense-keys.md): the same key, token and count
// always get the same first..last, so the call's own retries, and a caller
// that calls again after an error with the same token, never leave a hole.
// token is 1 to 64 printable ASCII bytes without spaces, unique per key
// (a random hex string will do).
func (c *Client) NextBlockOnce(ctx context.Context, key string, count int, token string) (first, last int64, err error) {
	if err := checkCount(count, idsCountLimit); err != nil {
		return 0, 0, err
	}
	if len(token) == 0 || len(token) > 255 {
		return 0, 0, errorf(CodeInvalidArgument, "token must be 1 to 64 printable ASCII bytes")
	}
	var e enc
	e.str(key)
	e.u32(uint32(count))
	e.u8(uint8(len(token)))
	e.b = append(e.b, token...)
	return c.block(ctx, key, opNextBlockOnce, &e, count)
}

// block calls op (NEXT_BLOCK or NEXT_BLOCK_ONCE) and reads back one block
// of exactly count IDs.
func (c *Client) block(ctx context.Context, key string, op byte, e *enc, count int) (first, last int64, err error) {
	res, err := c.callEnc(ctx, key, op, e)
	if err != nil {
		return 0, 0, err
	}
	d := dec{b: res}
	first, last = d.i64(), d.i64()
	if err := d.done(opName(op)); err != nil {
		return 0, 0, err
	}
	if last-first+1 != int64(count) {
		return 0, 0, errorf(CodeProtocol, "%s answered %d..%d for %d IDs", opName(op), first, last, count)
	}
	return first, last, nil
}

// firstKey is the key a list op is routed by (its first), "" for none.
func firstKey(keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

// int64List calls op with a list of keys and reads back one i64 per key.
func (c *Client) int64List(ctx context.Context, op byte, keys []string) ([]int64, error) {
	if len(keys) == 0 {
		return []int64{}, nil
	}
	res, err := c.keyListCall(ctx, op, nil, keys)
	if err != nil {
		return nil, err
	}
	return decodeInt64List(res, opName(op), len(keys), "values for keys")
}

// keyListCall calls op with head (the payload's fields before the list,
// may be nil) and keys (1 to 1000) as a list, routed by the first key,
// and returns the answer's result.
func (c *Client) keyListCall(ctx context.Context, op byte, head *enc, keys []string) ([]byte, error) {
	if len(keys) > maxListItems {
		return nil, errorf(CodeTooLarge, "more than %d keys", maxListItems)
	}
	var e enc
	if head != nil {
		e = *head
	}
	e.strList(keys)
	return c.callEnc(ctx, firstKey(keys), op, &e)
}

// decodeInt64List decodes an answer of `want` int64s (a u32 count, then
// the values) to op; what names them in the error for another count.
func decodeInt64List(res []byte, op string, want int, what string) ([]int64, error) {
	d := dec{b: res}
	n := d.count(8)
	out := make([]int64, n)
	for i := range out {
		out[i] = d.i64()
	}
	if err := d.done(op); err != nil {
		return nil, err
	}
	if n != want {
		return nil, errorf(CodeProtocol, "%s answered %d %s, %d asked", op, n, what, want)
	}
	return out, nil
}

// MaxIDs returns, per key in the order asked, the largest ID handed out
// (MAX_IDS): exact on one instance and in cluster mode, 0 for a key with no
// row; "at least" for Leaf-mode instances sharing one table. At most 1000
// keys (TOO_LARGE).
func (c *Client) MaxIDs(ctx context.Context, keys []string) ([]int64, error) {
	return c.int64List(ctx, opMaxIDs, keys)
}

// MaxIDTime is one key's answer to MaxIDsWithTimes.
type MaxIDTime struct {
	MaxID int64 // as MaxIDs
	// TimeMs is the unix millis of the key's last allocation: a dense
	// key's last block, to the millisecond, by the database's clock; for a
	// segment key, when its row last changed (a segment reserved), as
	// precise as the table keeps it. -1 for a key that has no row.
	TimeMs int64
}

// MaxIDsWithTimes is MaxIDs with each key's allocation time
// (MAX_IDS_TIMES), the time read after the max. At most 1000 keys.
func (c *Client) MaxIDsWithTimes(ctx context.Context, keys []string) ([]MaxIDTime, error) {
	if len(keys) == 0 {
		return []MaxIDTime{}, nil
	}
	res, err := c.keyListCall(ctx, opMaxIDsTimes, nil, keys)
	if err != nil {
		return nil, err
	}
	d := dec{b: res}
	out := make([]MaxIDTime, d.count(16))
	for i := range out {
		out[i] = MaxIDTime{MaxID: d.i64(), TimeMs: d.i64()}
	}
	if err := d.done("MAX_IDS_TIMES"); err != nil {
		return nil, err
	}
	if len(out) != len(keys) {
		return nil, errorf(CodeProtocol, "MAX_IDS_TIMES answered %d keys, %d asked", len(out), len(keys))
	}
	return out, nil
}

// MinSeqs returns each key's durable min seq (GET_MIN_SEQS), 0 for a key
// never set, in the order asked. At most 1000 keys.
func (c *Client) MinSeqs(ctx context.Context, keys []string) ([]int64, error) {
	return c.int64List(ctx, opGetMinSeqs, keys)
}

// SetMinSeqs sets each key's min seq (>= 0) durably (SET_MIN_SEQS), all in
// one transaction per owner. At most 1000 keys. Retried by the retry rules
// (setting the same values again is harmless).
func (c *Client) SetMinSeqs(ctx context.Context, minSeqs map[string]int64) error {
	if len(minSeqs) == 0 {
		return nil
	}
	if len(minSeqs) > maxListItems {
		return errorf(CodeTooLarge, "more than %d keys", maxListItems)
	}
	var e enc
	route := e.keyValues(minSeqs)
	res, err := c.callEnc(ctx, route, opSetMinSeqs, &e)
	if err != nil {
		return err
	}
	return emptyResult(res, "SET_MIN_SEQS")
}

// Snowflake returns count snowflake IDs (1 to the server's snowflake max
// count, 4096 by default), ascending (SNOWFLAKE). NOT_SERVING (no
// worker-id lease now, or the clock moved back) is retried on the next
// endpoint: the IDs of a lost answer are never issued again. After a
// failover, the next server's IDs may be smaller than the last ones seen.
func (c *Client) Snowflake(ctx context.Context, count int) ([]int64, error) {
	if err := checkCount(count, snowflakeCountLimit); err != nil {
		return nil, err
	}
	var e enc
	e.u32(uint32(count))
	res, err := c.callAny(ctx, opSnowflake, e.b)
	if err != nil {
		return nil, err
	}
	return decodeInt64List(res, "SNOWFLAKE", count, "IDs")
}

// DecodedSnowflake is a snowflake ID split by the server's layout.
type DecodedSnowflake struct {
	TimeMs   int64 // unix milliseconds
	Worker   int64
	Sequence int64 // within the millisecond
}

// DecodeSnowflake splits id by the server's layout (SNOWFLAKE_DECODE);
// INVALID_ARGUMENT for an ID outside it.
func (c *Client) DecodeSnowflake(ctx context.Context, id int64) (DecodedSnowflake, error) {
	var e enc
	e.i64(id)
	res, err := c.callAny(ctx, opSnowflakeDec, e.b)
	if err != nil {
		return DecodedSnowflake{}, err
	}
	d := dec{b: res}
	out := DecodedSnowflake{d.i64(), d.i64(), d.i64()}
	return out, d.done("SNOWFLAKE_DECODE")
}

// Ping is a PING round trip (retried like any call).
func (c *Client) Ping(ctx context.Context) error {
	res, err := c.callAny(ctx, opPing, []byte("ping"))
	if err != nil {
		return err
	}
	if string(res) != "ping" {
		return errorf(CodeProtocol, "PING answered other bytes")
	}
	return nil
}
