package seqd

// Store groups (docs/cluster.md, "Store groups"): each shard's rows live
// in one of several databases, and the shard -> group map ("placement") is
// versioned. With Options.WatchPlacement (or RouteByShard) each connection
// asks for the version first (op PLACEMENT); a server with store groups
// answers it and tells it again before the first answer it writes after
// the version rose (a PLACEMENT push, docs/protocol.md). The client keeps
// the highest one told and, when it rises, refreshes its shard map
// (RouteByShard: a move may change owners for a moment).
//
// Thread safety: notePlacement runs on connections' reader goroutines;
// PlacementVersion may be called from any goroutine.

// placementRequestID is askPlacement's request id; its answer is told
// apart by its opcode, which no call uses.
const placementRequestID = 0xFFFFFFFF

// PlacementVersion returns the highest placement version any server told
// this client (Options.WatchPlacement); 0 before one did (servers without
// store groups tell none). Once a call's answer is returned, it is at
// least the answering server's version at the time it answered.
func (c *Client) PlacementVersion() int64 { return c.placementVersion.Load() }

// notePlacement takes a PLACEMENT push's or answer's payload (u16 status
// 0, i64 version); anything else is ignored, as an unknown push is.
func (c *Client) notePlacement(payload []byte) {
	d := dec{b: payload}
	status, version := d.u16(), d.i64()
	if status != 0 || d.done("PLACEMENT") != nil || version < 0 {
		return
	}
	for {
		held := c.placementVersion.Load()
		if version <= held {
			return
		}
		if c.placementVersion.CompareAndSwap(held, version) {
			break
		}
	}
	if c.opts.OnPlacementVersion != nil {
		c.opts.OnPlacementVersion(version)
	}
	if r, ok := c.router.(*shardRouter); ok && r != nil {
		r.fetch(true)
	}
}
