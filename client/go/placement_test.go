package seqd

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// placementPush is a PLACEMENT push frame: request id 0, RESPONSE|PUSH,
// payload status then version (or the raw payload given).
func placementPush(payload []byte) []byte {
	frame := binary.BigEndian.AppendUint32(nil, uint32(8+len(payload)))
	frame = append(frame, 1, opPlacement)
	frame = binary.BigEndian.AppendUint16(frame, flagResponse|flagPush)
	frame = binary.BigEndian.AppendUint32(frame, 0)
	return append(frame, payload...)
}

func versionPayload(status uint16, version int64) []byte {
	p := binary.BigEndian.AppendUint16(nil, status)
	return binary.BigEndian.AppendUint64(p, uint64(version))
}

// pushesOf pushes *version before the next answer on each connection
// whenever it rose above what that connection was told, as seqd does.
func pushesOf(version *atomic.Int64) func(told int64) ([]byte, int64) {
	return func(told int64) ([]byte, int64) {
		v := version.Load()
		if v <= told {
			return nil, told
		}
		return placementPush(versionPayload(0, v)), v
	}
}

// answerIDs answers PLACEMENT with *version and anything else with one ID.
func answerIDs(version *atomic.Int64) func(op byte, p []byte) (Code, []byte) {
	return func(op byte, p []byte) (Code, []byte) {
		if op == opPlacement {
			return CodeOK, binary.BigEndian.AppendUint64(nil, uint64(version.Load()))
		}
		return CodeOK, oneRangeAnswer(1, 1)
	}
}

func TestPlacementVersionRecordsTheHighestPushed(t *testing.T) {
	var version atomic.Int64
	f := startFake(t, answerIDs(&version))
	f.setPushes(pushesOf(&version))
	var mu sync.Mutex
	var seen []int64
	c := newClient(t, Options{Endpoints: []string{f.addr()}, WatchPlacement: true,
		OnPlacementVersion: func(v int64) {
			mu.Lock()
			seen = append(seen, v)
			mu.Unlock()
		}})
	ctx := ctxT(t, 5*time.Second)
	if _, err := c.NextIDs(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	if got := c.PlacementVersion(); got != 0 {
		t.Fatalf("PlacementVersion = %d before any push, want 0", got)
	}
	// The connection asked first: PLACEMENT with version 0, then the call.
	if reqs := f.requests(); len(reqs) < 2 || reqs[0].op != opPlacement ||
		binary.BigEndian.Uint64(reqs[0].payload) != 0 || reqs[1].op != opNextIDs {
		t.Fatalf("requests %v, want PLACEMENT(0) first", reqs)
	}
	for _, v := range []int64{5, 9} {
		version.Store(v)
		if _, err := c.NextIDs(ctx, "k", 1); err != nil {
			t.Fatal(err)
		}
		// The push came before the answer: recorded once the call returns.
		if got := c.PlacementVersion(); got != v {
			t.Fatalf("PlacementVersion = %d after a push of %d", got, v)
		}
	}
	// A lower version (a server behind), a refused status and a short
	// payload change nothing.
	for _, p := range [][]byte{versionPayload(0, 3), versionPayload(4, 50), {0, 0, 1}} {
		push := placementPush(p)
		f.setPushes(func(told int64) ([]byte, int64) { return push, told })
		if _, err := c.NextIDs(ctx, "k", 1); err != nil {
			t.Fatalf("a call after a push of %x: %v", p, err)
		}
		if got := c.PlacementVersion(); got != 9 {
			t.Fatalf("PlacementVersion = %d after a push of %x, want 9", got, p)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != 5 || seen[1] != 9 {
		t.Fatalf("OnPlacementVersion saw %v, want [5 9]", seen)
	}
}

func TestPlacementRiseRefreshesTheShardMap(t *testing.T) {
	var version atomic.Int64
	var maps atomic.Int32
	var addr atomic.Value
	f := startFake(t, func(op byte, p []byte) (Code, []byte) {
		if op == opPlacement {
			return CodeOK, binary.BigEndian.AppendUint64(nil, 0)
		}
		if op == opClusterMap { // one member, this server, owning the 4 shards
			maps.Add(1)
			var e enc
			e.u32(4)
			e.u16(1)
			e.str("a")
			e.str(addr.Load().(string))
			e.u8(1)
			e.u32(4)
			for i := 0; i < 4; i++ {
				e.u16(0)
			}
			return CodeOK, e.b
		}
		return CodeOK, oneRangeAnswer(1, 1)
	})
	addr.Store(f.addr())
	f.setPushes(pushesOf(&version))
	c := newClient(t, Options{Endpoints: []string{f.addr()}, RouteByShard: true})
	ctx := ctxT(t, 5*time.Second)
	waitMaps := func(n int32) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Second)
		for maps.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d CLUSTER_MAP fetches, want %d", maps.Load(), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if _, err := c.NextIDs(ctx, "k", 1); err != nil { // the first keyed call fetches the map
		t.Fatal(err)
	}
	waitMaps(1)
	time.Sleep(shardMapMinInterval + 50*time.Millisecond)
	if _, err := c.NextIDs(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if got := maps.Load(); got != 1 {
		t.Fatalf("%d CLUSTER_MAP fetches without a rise, want 1", got)
	}
	version.Store(3)
	if _, err := c.NextIDs(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	waitMaps(2)
	if got := c.PlacementVersion(); got != 3 {
		t.Fatalf("PlacementVersion = %d, want 3", got)
	}
}

func TestPlacementNotWatchedAsksNothing(t *testing.T) {
	var version atomic.Int64
	version.Store(5)
	f := startFake(t, answerIDs(&version))
	c := newClient(t, Options{Endpoints: []string{f.addr()}})
	ctx := ctxT(t, 5*time.Second)
	for i := 0; i < 3; i++ {
		if _, err := c.NextIDs(ctx, "k", 1); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range f.requests() {
		if r.op != opNextIDs {
			t.Fatalf("request op %#x from a client that does not watch the placement", r.op)
		}
	}
	if got := c.PlacementVersion(); got != 0 {
		t.Fatalf("PlacementVersion = %d, want 0", got)
	}
}

func TestPlacementAnsweredUnknownOpcodeIsIgnored(t *testing.T) {
	f := startFake(t, func(op byte, p []byte) (Code, []byte) {
		if op == opPlacement {
			return CodeUnknownOpcode, nil // a server before the op
		}
		return CodeOK, oneRangeAnswer(1, 1)
	})
	c := newClient(t, Options{Endpoints: []string{f.addr()}, WatchPlacement: true})
	ctx := ctxT(t, 5*time.Second)
	for i := 0; i < 3; i++ {
		if _, err := c.NextIDs(ctx, "k", 1); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.PlacementVersion(); got != 0 {
		t.Fatalf("PlacementVersion = %d, want 0", got)
	}
	if m := c.Metrics(); m.ConnectionsLost != 0 || m.Reconnects != 0 {
		t.Fatalf("metrics %+v: the connection should stay", m)
	}
}
