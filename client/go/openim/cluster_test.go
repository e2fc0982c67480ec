package openim

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	seqd "seqd.dev/go"
	"seqd.dev/go/internal/testseqd"
)

// OpenIM's send flow against 3 seqd in cluster mode (MariaDB), from 3
// OpenIM-like processes (clients listing the instances in different
// orders, routing by shard) x 6 goroutines on two conversations: blocks
// never overlap, grow in real-time order across instances, and tile
// 1..N exactly (dense keys); every client's GetMaxSeq is exact. Cluster mode needs MariaDB: the test runs in
// the MariaDB run (testseqd.RequireMariaDB).
func TestSendFlowClusterLive(t *testing.T) {
	testseqd.RequireMariaDB(t)
	store := testseqd.NewStore(t, t.TempDir())
	args := append([]string{"--cluster", "--cluster-lease-ms", "1000", "--snowflake", "off"}, openIMAutoKeys...)
	var nodes []*testseqd.Server
	for i := 0; i < 3; i++ {
		nodes = append(nodes, testseqd.StartConfig(t, testseqd.Config{Store: store, Args: args}))
	}
	ctx := liveCtx(t, 90*time.Second)
	convs := []string{"sg_cluster_group", "si_u1_u2"}
	var caches []*SeqCache[SeqTime]
	for i := 0; i < 3; i++ {
		eps := []string{nodes[i].Addr(), nodes[(i+1)%3].Addr(), nodes[(i+2)%3].Addr()}
		c, err := seqd.New(seqd.Options{Endpoints: eps, RouteByShard: true, CallTimeout: 3 * time.Second,
			MaxAttempts: 5})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		caches = append(caches, New(c))
	}
	// Until the instances have shared the shards out, calls may fail.
	deadline := time.Now().Add(30 * time.Second)
	var warmup []block // answered, so part of the tiling checked below
	for _, cache := range caches {
		for c, conv := range convs {
			for {
				asked := time.Now()
				start, err := cache.Malloc(ctx, conv, 1)
				if err == nil {
					warmup = append(warmup, block{c, start + 1, start + 1, asked, time.Now()})
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("cluster not serving %s: %v", conv, err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	blocks := mallocConcurrently(t, ctx, caches, convs, 6, 80, func(w, i int) int64 { return int64((w*5+i)%9 + 1) })
	if t.Failed() {
		return
	}
	blocks = append(warmup, blocks...)
	maxUsed := checkBlocks(t, convs, blocks)
	checkTiles(t, convs, blocks, maxUsed)
	for ci, cache := range caches {
		m, err := cache.GetMaxSeqs(ctx, convs)
		if err != nil {
			t.Fatal(err)
		}
		for c, id := range convs {
			if m[id] != maxUsed[c] {
				t.Fatalf("client %d: GetMaxSeqs[%s] = %d; want %d (exact in cluster mode)", ci, id, m[id], maxUsed[c])
			}
		}
	}
	t.Logf("%d blocks from 3 clients x 6 goroutines over 3 instances; max seqs %v", len(blocks), maxUsed)
	unreadThroughTakeoverAndHandoff(t, ctx, nodes, caches, convs, maxUsed)
}

// OpenIM's unread count (max - read) across the cluster's faults: the user
// has read everything; one instance is killed with SIGKILL (its shards
// are taken over once its lease ends), then another stops with SIGTERM
// (its shards handed off). After each, every client's max seq is still
// exactly the last seq used and the read seq is kept: unread stays 0, and
// the next Malloc continues right after the max.
func unreadThroughTakeoverAndHandoff(t *testing.T, ctx context.Context, nodes []*testseqd.Server,
	caches []*SeqCache[SeqTime], convs []string, maxUsed []int64) {
	t.Helper()
	users := NewSeqUser(caches[0].a.(*seqd.Client))
	read := map[string]int64{}
	for c, conv := range convs {
		read[conv] = maxUsed[c]
	}
	if err := users.SetUserReadSeqs(ctx, "reader", read); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for _, cache := range caches {
			for {
				m, err := cache.GetMaxSeqs(ctx, convs)
				if err == nil {
					for c, conv := range convs {
						if m[conv] != maxUsed[c] {
							t.Fatalf("%s: GetMaxSeqs[%s] = %d; want %d: unread %d that no message has",
								when, conv, m[conv], maxUsed[c], m[conv]-maxUsed[c])
						}
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: no max seqs: %v", when, err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		got, err := users.GetUserReadSeqs(ctx, "reader", convs)
		if err != nil || !reflect.DeepEqual(got, read) {
			t.Fatalf("%s: read seqs %v, %v; want %v", when, got, err, read)
		}
	}
	// The owner of the first conversation dies (its shard must be taken
	// over); then the owner of the second, by then, stops (handed off).
	victim := ownerOf(t, nodes, nodes, convs[0])
	nodes[victim].Kill()
	check("after SIGKILL of the first conversation's owner (takeover)")
	var live []*testseqd.Server
	for i, n := range nodes {
		if i != victim {
			live = append(live, n)
		}
	}
	nodes[ownerOf(t, nodes, live, convs[1])].Stop()
	check("after SIGTERM of the second conversation's owner (handoff)")
	for c, conv := range convs {
		start, err := caches[2].Malloc(ctx, conv, 2)
		if err != nil || start != maxUsed[c] {
			t.Fatalf("%s: Malloc after the faults = %d, %v; want %d (right after the max)", conv, start, err, maxUsed[c])
		}
	}
}

// ownerOf is the index in nodes of the instance that owns key's shard, as
// the first of `ask` that answers GET /admin/cluster sees the map (a
// shard's owner named by its advertised binary address).
func ownerOf(t *testing.T, nodes, ask []*testseqd.Server, key string) int {
	t.Helper()
	var view struct {
		Shards  uint64 `json:"shards"`
		Members []struct {
			Instance  string `json:"instance"`
			Advertise string `json:"advertise"`
		} `json:"members"`
		ShardMap []struct {
			Shard uint64 `json:"shard"`
			Owner string `json:"owner"`
		} `json:"shard_map"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, n := range ask {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/admin/cluster", n.HTTPPort))
			if err != nil {
				continue
			}
			err = json.NewDecoder(resp.Body).Decode(&view)
			resp.Body.Close()
			if err != nil || view.Shards == 0 {
				continue
			}
			h := uint64(0xcbf29ce484222325) // FNV-1a-64, the shard function (docs/cluster.md)
			for i := 0; i < len(key); i++ {
				h ^= uint64(key[i])
				h *= 0x100000001b3
			}
			shard := h % view.Shards
			for _, e := range view.ShardMap {
				if e.Shard != shard {
					continue
				}
				for _, m := range view.Members {
					if m.Instance != e.Owner {
						continue
					}
					for i, node := range nodes {
						if node.Addr() == m.Advertise {
							return i
						}
					}
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no owner of %s in any instance's map", key)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
