package seqd

// The cluster shard map (docs/protocol.md, "Cluster ops") and the key hash
// (docs/cluster.md, "Shards"). Pure functions: no I/O.

const (
	fnvOffsetBasis uint64 = 0xcbf29ce484222325
	fnvPrime       uint64 = 0x100000001b3
	// noOwner in a CLUSTER_MAP owner list: the shard has no owner now.
	noOwner uint16 = 0xFFFF
)

// fnv1a64 is FNV-1a-64 of the key's bytes (the server's and the C++
// client's proto::Fnv1a64).
func fnv1a64(key string) uint64 {
	h := fnvOffsetBasis
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= fnvPrime
	}
	return h
}

// ShardOf is the shard of key in a cluster of `shards` shards:
// FNV-1a-64(key bytes) mod shards, as the server computes it (the C++
// client's seqd::client::ShardOf). shards must be at least 1.
func ShardOf(key string, shards uint32) uint32 {
	return uint32(fnv1a64(key) % uint64(shards))
}

// clusterMember is one instance of a CLUSTER_MAP answer.
type clusterMember struct {
	instance  string // member id
	advertise string // its binary-protocol "host:port"
	live      bool
}

// clusterMap is a decoded CLUSTER_MAP answer. owners is empty before the
// server read the map, else one entry per shard: an index into members or
// noOwner.
type clusterMap struct {
	shards  uint32
	members []clusterMember
	owners  []uint16
}

// parseClusterMap decodes CLUSTER_MAP's OK result:
//
//	u32 shards
//	u16 n, n × (str instance, str advertise, u8 live)
//	u32 m, m × u16 owner   (m = shards, or 0)
//
// Anything else (short, bytes left over, live not 0/1, m neither 0 nor
// shards, an owner index past the members) is CodeProtocol, as the C++
// client's ParseClusterMapResult refuses it.
func parseClusterMap(b []byte) (*clusterMap, error) {
	d := dec{b: b}
	m := &clusterMap{shards: d.u32()}
	n := int(d.u16())
	if d.bad || n >= int(noOwner) || n*5 > len(d.b) {
		return nil, errorf(CodeProtocol, "malformed CLUSTER_MAP result")
	}
	m.members = make([]clusterMember, 0, n)
	for i := 0; i < n && !d.bad; i++ {
		mem := clusterMember{instance: d.str(), advertise: d.str()}
		live := d.u8()
		if live > 1 {
			return nil, errorf(CodeProtocol, "malformed CLUSTER_MAP result")
		}
		mem.live = live == 1
		m.members = append(m.members, mem)
	}
	count := d.u32()
	if d.bad || (count != 0 && count != m.shards) || uint64(count)*2 != uint64(len(d.b)) {
		return nil, errorf(CodeProtocol, "malformed CLUSTER_MAP result")
	}
	m.owners = make([]uint16, count)
	for i := range m.owners {
		o := d.u16()
		if o != noOwner && int(o) >= n {
			return nil, errorf(CodeProtocol, "malformed CLUSTER_MAP result")
		}
		m.owners[i] = o
	}
	if err := d.done("CLUSTER_MAP"); err != nil {
		return nil, err
	}
	return m, nil
}

// ownerAddrs is, per shard, the advertise address of its owner when that
// owner is live, else "". nil when the map has no owners yet (shards 0 or
// an empty owner list): nothing can be routed.
func (m *clusterMap) ownerAddrs() []string {
	if m.shards == 0 || len(m.owners) != int(m.shards) {
		return nil
	}
	out := make([]string, m.shards)
	for s, o := range m.owners {
		if o == noOwner || !m.members[o].live {
			continue
		}
		out[s] = m.members[o].advertise
	}
	return out
}
