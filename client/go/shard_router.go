package seqd

// Cluster routing (Options.RouteByShard; docs/cluster.md): the router the
// transport asks for each keyed call's owner (the `router` seam of
// transport.go), as the C++ client's route_by_shard does:
//
//   - The shard map comes from CLUSTER_MAP, fetched in the background: at
//     the first keyed call, again when the one held is older than
//     shardMapRefresh (on the next keyed call), and at once (at most every
//     shardMapMinInterval) when a routed call found it wrong. One fetch at
//     a time (single flight); calls meanwhile go the ordinary way. A
//     wrong owner seen sooner than that after the last fetch schedules
//     one for when the interval has passed.
//   - A key's owner is the live member owning ShardOf(key, shards); its
//     advertise address is added to the client's endpoints. The call goes
//     there with NO_FORWARD. An owner whose endpoint is marked down, a
//     shard without a live owner or no map yet: the call goes the ordinary
//     way (an instance forwards it to the owner).
//   - WRONG_OWNER (or the owner unreachable, timed out, shutting down): the
//     transport refreshes the map through onWrongOwner and sends the call
//     again without NO_FORWARD (any instance forwards it).
//   - A server without cluster mode answers CLUSTER_MAP UNKNOWN_OPCODE: the
//     router stops asking and every call goes the ordinary way.
//
// Thread safety: every method may be called from any goroutine; route never
// blocks (it answers from the map it holds).

import (
	"context"
	"net"
	"sync/atomic"
	"time"
)

const (
	shardMapRefresh     = 10 * time.Second
	shardMapMinInterval = 100 * time.Millisecond
)

// RouteStats counts keyed calls under Options.RouteByShard (Client.Stats).
// Keyed calls are those carrying a key (IDs, blocks, max/min seqs of one
// key, message store calls of one conversation).
type RouteStats struct {
	// Direct: first attempts sent to the key's owner with NO_FORWARD and
	// not refused (no WRONG_OWNER, owner reachable).
	Direct uint64
	// Redirected: first attempts sent to the owner that came back
	// WRONG_OWNER or found the owner unreachable; the call went on the
	// ordinary way (forwarded by whichever instance got it).
	Redirected uint64
	// Unrouted: keyed calls sent the ordinary way because no map was held
	// yet, the shard had no live owner or the owner's endpoint was marked
	// down. An instance that does not own the key forwards them.
	Unrouted uint64
	// MapFetches: CLUSTER_MAP answers applied.
	MapFetches uint64
}

// Stats returns the routing counters (all zero without
// Options.RouteByShard). Safe to call at any time.
func (c *Client) Stats() RouteStats {
	r, ok := c.router.(*shardRouter)
	if !ok || r == nil {
		return RouteStats{}
	}
	routed, redirected := r.routed.Load(), r.redirected.Load()
	direct := uint64(0)
	if routed > redirected {
		direct = routed - redirected
	}
	return RouteStats{Direct: direct, Redirected: redirected, Unrouted: r.unrouted.Load(),
		MapFetches: r.fetches.Load()}
}

func init() {
	newRouter = func(c *Client) router { return &shardRouter{c: c} }
}

// routeTable is one applied map: per shard, the owner's address or "".
type routeTable struct {
	shards uint32
	owner  []string
}

type shardRouter struct {
	c *Client

	table       atomic.Pointer[routeTable] // nil: no usable map yet
	fetching    atomic.Bool
	fetchedAt   atomic.Int64 // unix nanos of the last fetch started
	unsupported atomic.Bool  // CLUSTER_MAP answered UNKNOWN_OPCODE
	deferred    atomic.Bool  // a forced fetch waits for shardMapMinInterval

	routed, redirected, unrouted, fetches atomic.Uint64
}

func (r *shardRouter) route(key string) (string, bool, bool) {
	if r.unsupported.Load() {
		return "", false, false
	}
	r.fetch(false)
	t := r.table.Load()
	if t == nil {
		return "", false, false
	}
	addr := t.owner[ShardOf(key, t.shards)]
	if addr == "" || r.c.endpointFor(addr).isDown() {
		return "", false, false
	}
	return addr, true, true
}

func (r *shardRouter) sent(routed bool) {
	if routed {
		r.routed.Add(1)
	} else {
		r.unrouted.Add(1)
	}
}

func (r *shardRouter) onWrongOwner() {
	r.redirected.Add(1)
	r.fetch(true)
}

// fetch starts a CLUSTER_MAP fetch in the background unless one is under
// way, the router gave up, or (force) one started less than
// shardMapMinInterval ago / (not force) the map held is younger than
// shardMapRefresh.
func (r *shardRouter) fetch(force bool) {
	if r.unsupported.Load() || r.fetching.Load() || r.c.isClosed() {
		return
	}
	age := time.Duration(time.Now().UnixNano() - r.fetchedAt.Load())
	if force && age < shardMapMinInterval {
		// Too soon: fetch once the interval has passed (one timer at a
		// time), so a wrong map is not kept until the next wrong owner.
		if r.deferred.CompareAndSwap(false, true) {
			time.AfterFunc(shardMapMinInterval-age, func() {
				r.deferred.Store(false)
				r.fetch(true)
			})
		}
		return
	}
	if !force && r.table.Load() != nil && age < shardMapRefresh {
		return
	}
	if !r.fetching.CompareAndSwap(false, true) {
		return
	}
	r.fetchedAt.Store(time.Now().UnixNano())
	go func() {
		defer r.fetching.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), r.c.opts.CallTimeout)
		defer cancel()
		res, err := r.c.callAny(ctx, opClusterMap, nil)
		if err != nil {
			if CodeOf(err) == CodeUnknownOpcode {
				r.unsupported.Store(true)
			}
			return
		}
		m, err := parseClusterMap(res)
		if err != nil {
			return
		}
		r.apply(m)
	}()
}

// apply makes m the routing table (owners with an address that is not
// host:port are left out, as the C++ client does).
func (r *shardRouter) apply(m *clusterMap) {
	addrs := m.ownerAddrs()
	if addrs == nil {
		return
	}
	for i, a := range addrs {
		if a == "" {
			continue
		}
		if host, port, err := net.SplitHostPort(a); err != nil || host == "" || port == "" {
			addrs[i] = ""
		}
	}
	r.table.Store(&routeTable{shards: m.shards, owner: addrs})
	r.fetches.Add(1)
}
