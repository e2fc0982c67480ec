package openim

import (
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
}
