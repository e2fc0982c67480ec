package seqd

import (
	"reflect"
	"testing"
	"time"
)

// The values of tests/unit/cluster_shard_test.cc (the server's and the C++
// client's hash): a key routed by this client lands where the server
// serves it.
func TestFnv1a64KnownValues(t *testing.T) {
	for _, c := range []struct {
		key  string
		want uint64
	}{
		{"", 0xcbf29ce484222325},
		{"a", 0xaf63dc4c8601ec8c},
		{"foobar", 0x85944171f73967e8},
	} {
		if got := fnv1a64(c.key); got != c.want {
			t.Errorf("fnv1a64(%q) = %#x, want %#x", c.key, got, c.want)
		}
	}
	if got, want := ShardOf("foobar", 1024), uint32(0x85944171f73967e8%1024); got != want {
		t.Errorf("ShardOf(foobar, 1024) = %d, want %d", got, want)
	}
	if got := ShardOf("anything", 1); got != 0 {
		t.Errorf("ShardOf(anything, 1) = %d", got)
	}
	// Spread, as the C++ test checks it: 100,000 keys over 1024 shards.
	hits := make([]int, 1024)
	for i := 0; i < 100000; i++ {
		hits[ShardOf("sg_"+itoa(i), 1024)]++
	}
	for s, n := range hits {
		if n < 50 || n > 150 {
			t.Fatalf("shard %d got %d of 100000 keys", s, n)
		}
	}
}

type testMember struct {
	instance, advertise string
	live                byte
}

func encodeMap(shards uint32, members []testMember, owners []uint16) []byte {
	var e enc
	e.u32(shards)
	e.u16(uint16(len(members)))
	for _, m := range members {
		e.str(m.instance)
		e.str(m.advertise)
		e.u8(m.live)
	}
	e.u32(uint32(len(owners)))
	for _, o := range owners {
		e.u16(o)
	}
	return e.b
}

func TestParseClusterMap(t *testing.T) {
	members := []testMember{{"h-1-a", "10.0.0.1:7070", 1}, {"h-2-b", "10.0.0.2:7070", 0},
		{"h-3-c", "[::1]:7071", 1}}
	m, err := parseClusterMap(encodeMap(4, members, []uint16{0, 1, noOwner, 2}))
	if err != nil {
		t.Fatal(err)
	}
	if m.shards != 4 || len(m.members) != 3 || !m.members[0].live || m.members[1].live ||
		m.members[2].advertise != "[::1]:7071" || m.members[1].instance != "h-2-b" {
		t.Fatalf("decoded %+v", m)
	}
	// A dead owner and no owner route nowhere.
	want := []string{"10.0.0.1:7070", "", "", "[::1]:7071"}
	if got := m.ownerAddrs(); !reflect.DeepEqual(got, want) {
		t.Fatalf("ownerAddrs = %q, want %q", got, want)
	}

	// Before the server read the map: m = 0, nothing routable.
	m, err = parseClusterMap(encodeMap(1024, members, nil))
	if err != nil || m.ownerAddrs() != nil {
		t.Fatalf("empty owner list: %v %v", m, err)
	}
}

func TestParseClusterMapRefusesMalformed(t *testing.T) {
	good := encodeMap(2, []testMember{{"i", "h:1", 1}}, []uint16{0, 0})
	bad := map[string][]byte{
		"empty":            {},
		"short":            good[:len(good)-1],
		"trailing":         append(append([]byte(nil), good...), 0),
		"live 2":           encodeMap(2, []testMember{{"i", "h:1", 2}}, []uint16{0, 0}),
		"owner past":       encodeMap(2, []testMember{{"i", "h:1", 1}}, []uint16{0, 1}),
		"count != shards":  encodeMap(3, []testMember{{"i", "h:1", 1}}, []uint16{0, 0}),
		"members too many": func() []byte { var e enc; e.u32(1); e.u16(0xFFFF); return e.b }(),
	}
	for name, b := range bad {
		if _, err := parseClusterMap(b); CodeOf(err) != CodeProtocol {
			t.Errorf("%s: err = %v, want PROTOCOL", name, err)
		}
	}
}

// The router answers from the map it holds: the owner's address with
// NO_FORWARD, nothing for a shard without a live owner, and counts both.
func TestShardRouterRoutes(t *testing.T) {
	c, err := New(Options{Endpoints: []string{"127.0.0.1:1"}, RouteByShard: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := c.router.(*shardRouter)
	r.fetchedAt.Store(timeNowNanos()) // no background fetch during the test
	m, err := parseClusterMap(encodeMap(4, []testMember{{"a", "127.0.0.1:2", 1},
		{"b", "not an address", 1}}, []uint16{0, 1, noOwner, 0}))
	if err != nil {
		t.Fatal(err)
	}
	r.apply(m)
	counts := map[uint32]int{}
	for i := 0; i < 200; i++ {
		key := "k" + itoa(i)
		addr, noFwd, ok := r.route(key)
		r.sent(ok) // the call goes out on that answer
		s := ShardOf(key, 4)
		counts[s]++
		switch s {
		case 0, 3:
			if !ok || !noFwd || addr != "127.0.0.1:2" {
				t.Fatalf("key %s (shard %d): %q %v %v", key, s, addr, noFwd, ok)
			}
		default:
			if ok {
				t.Fatalf("key %s (shard %d) routed to %q", key, s, addr)
			}
		}
	}
	st := c.Stats()
	want := uint64(counts[0] + counts[3])
	if st.Direct != want || st.Unrouted != 200-want || st.MapFetches != 1 {
		t.Fatalf("stats %+v, want %d direct", st, want)
	}
	r.onWrongOwner()
	if st = c.Stats(); st.Redirected != 1 || st.Direct != want-1 {
		t.Fatalf("after a wrong owner: %+v", st)
	}
}

func timeNowNanos() int64 { return time.Now().UnixNano() }
