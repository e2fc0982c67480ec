package seqd

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"seqd.dev/go/internal/testseqd"
)

const clusterShards = 64

// startCluster starts 3 seqd in cluster mode on one fresh database and
// waits until they agree on a map with every shard owned by one of them.
// Cluster mode needs MariaDB: the tests run in the MariaDB run
// (testseqd.RequireMariaDB).
func startCluster(t *testing.T) []*testseqd.Server {
	t.Helper()
	testseqd.RequireMariaDB(t)
	store := testseqd.NewStore(t, t.TempDir())
	args := []string{"--cluster", "--cluster-lease-ms", "1000", "--cluster-shards", strconv.Itoa(clusterShards),
		"--snowflake", "off"}
	var nodes []*testseqd.Server
	for i := 0; i < 3; i++ {
		nodes = append(nodes, testseqd.StartConfig(t, testseqd.Config{Store: store, Args: args}))
	}
	waitStable(t, nodes)
	return nodes
}

type clusterView struct {
	Instance string `json:"instance"`
	Ready    bool   `json:"ready"`
	Members  []struct {
		Instance string `json:"instance"`
		Live     bool   `json:"live"`
	} `json:"members"`
	ShardMap []struct {
		Shard int    `json:"shard"`
		Owner string `json:"owner"`
	} `json:"shard_map"`
}

func getCluster(s *testseqd.Server) (clusterView, error) {
	var v clusterView
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/admin/cluster", s.HTTPPort))
	if err != nil {
		return v, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return v, fmt.Errorf("/admin/cluster: %s", resp.Status)
	}
	return v, json.NewDecoder(resp.Body).Decode(&v)
}

// waitStable: every node ready, seeing exactly these instances live, all
// showing the same map with every shard owned by one of them (as
// tests/e2e/test_cluster.py's wait_stable).
func waitStable(t *testing.T, nodes []*testseqd.Server) {
	t.Helper()
	var last string
	ok := waitFor(30*time.Second, func() bool {
		var views []clusterView
		for _, n := range nodes {
			v, err := getCluster(n)
			if err != nil {
				last = err.Error()
				return false
			}
			views = append(views, v)
		}
		want := map[string]bool{}
		for _, v := range views {
			want[v.Instance] = true
		}
		var first []string
		for i, v := range views {
			live := 0
			for _, m := range v.Members {
				if m.Live {
					if !want[m.Instance] {
						last = "a stranger is live"
						return false
					}
					live++
				}
			}
			owners := make([]string, len(v.ShardMap))
			for _, s := range v.ShardMap {
				if s.Shard < 0 || s.Shard >= len(owners) {
					return false
				}
				owners[s.Shard] = s.Owner
			}
			if !v.Ready || live != len(nodes) || len(owners) != clusterShards {
				last = fmt.Sprintf("%s: ready %v, %d live, %d shards", v.Instance, v.Ready, live, len(owners))
				return false
			}
			for _, o := range owners {
				if !want[o] {
					last = v.Instance + ": a shard without a live owner"
					return false
				}
			}
			if i == 0 {
				first = owners
			} else if strings.Join(owners, ",") != strings.Join(first, ",") {
				last = "the instances disagree on the map"
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("cluster not stable: %s", last)
	}
}

// forwards sums seqd_cluster_forwards_total (both results) over nodes.
func forwards(t *testing.T, nodes []*testseqd.Server) float64 {
	t.Helper()
	var sum float64
	for _, n := range nodes {
		sum += metric(t, n, "seqd_cluster_forwards_total", "")
	}
	return sum
}

// RouteByShard: keyed calls (IDs and sends) go straight to their owner
// for at least 95% of them, by the client's counters and by the servers'
// forward counters.
func TestClusterRoutesDirect(t *testing.T) {
	nodes := startCluster(t)
	ctx := ctxT(t, 60*time.Second)
	before := forwards(t, nodes)
	c := newClient(t, Options{Endpoints: []string{nodes[0].Addr()}, RouteByShard: true})
	const goroutines, perG, keys = 8, 150, 64
	errs := make(chan error, goroutines)
	parallel(goroutines, func(g int) {
		for i := 0; i < perG; i++ {
			k := (g*perG + i) % keys
			var err error
			if i%5 == 4 {
				_, err = c.Send(ctx, OutgoingMessage{ConvID: "sg_rt" + strconv.Itoa(k), SenderID: "u",
					ClientMsgID: fmt.Sprintf("g%d-%d", g, i), Payload: []byte("x")})
			} else {
				_, err = c.NextIDs(ctx, "n_rt"+strconv.Itoa(k), 3)
			}
			if err != nil {
				errs <- err
				return
			}
		}
	})
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := c.Stats()
	total := st.Direct + st.Redirected + st.Unrouted
	fwd := forwards(t, nodes) - before
	t.Logf("%d keyed calls: %+v; servers forwarded %.0f", total, st, fwd)
	if total != goroutines*perG {
		t.Fatalf("counted %d keyed calls, made %d", total, goroutines*perG)
	}
	if float64(st.Direct) < 0.95*float64(total) {
		t.Fatalf("direct %d of %d (< 95%%): %+v", st.Direct, total, st)
	}
	if fwd > 0.05*float64(total) {
		t.Fatalf("servers forwarded %.0f of %d requests (> 5%%)", fwd, total)
	}
	// The owners' addresses came from the map: the client knows all three.
	if len(c.eps) != 3 {
		t.Fatalf("client knows %d endpoints, want the 3 owners", len(c.eps))
	}

	// A wrong map (every shard on nodes[0]): the calls of the other
	// instances' keys come back WRONG_OWNER, go again the ordinary way
	// (and succeed), and the map is fetched again (once per 100 ms at
	// most), after which the calls go direct again.
	r := c.router.(*shardRouter)
	wrong := make([]string, clusterShards)
	for i := range wrong {
		wrong[i] = nodes[0].Addr()
	}
	r.fetchedAt.Store(time.Now().UnixNano())
	r.table.Store(&routeTable{shards: clusterShards, owner: wrong})
	st0 := c.Stats()
	for i := 0; i < 64; i++ {
		if _, err := c.NextIDs(ctx, "n_rt"+strconv.Itoa(i), 1); err != nil {
			t.Fatalf("with a wrong map: %v", err)
		}
	}
	if st := c.Stats(); st.Redirected == st0.Redirected {
		t.Fatalf("a wrong map was not refused: %+v then %+v", st0, st)
	}
	// The fetch comes once 100 ms have passed since the last one.
	if !waitFor(2*time.Second, func() bool { return c.Stats().MapFetches > st0.MapFetches }) {
		t.Fatalf("the map was not fetched again after WRONG_OWNER: %+v", c.Stats())
	}
	st1 := c.Stats()
	if st1.MapFetches-st0.MapFetches > 2 {
		t.Fatalf("map fetched %d times for 64 calls: not rate-limited", st1.MapFetches-st0.MapFetches)
	}
	for i := 0; i < 64; i++ {
		if _, err := c.NextIDs(ctx, "n_rt"+strconv.Itoa(i), 1); err != nil {
			t.Fatal(err)
		}
	}
	if st2 := c.Stats(); st2.Direct-st1.Direct < 60 {
		t.Fatalf("after the map was fetched again, %d of 64 calls direct: %+v", st2.Direct-st1.Direct, st2)
	}
	t.Logf("wrong map: %+v, then %+v", st1, c.Stats())
}

// idCall is one call's IDs and when it was made (monotonic clock).
type idCall struct {
	start, end time.Time
	ranges     []Range
}

// checkLinearizable: no ID handed out twice, and a call that started after
// another one returned got only IDs above all of that one's.
func checkLinearizable(t *testing.T, calls []idCall) {
	t.Helper()
	type iv struct{ first, last int64 }
	var all []iv
	for _, c := range calls {
		for _, r := range c.ranges {
			all = append(all, iv{r.First, r.Last})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].first < all[j].first })
	for i := 1; i < len(all); i++ {
		if all[i].first <= all[i-1].last {
			t.Fatalf("IDs handed out twice: %v and %v", all[i-1], all[i])
		}
	}
	minOf := func(c idCall) int64 { return c.ranges[0].First }
	maxOf := func(c idCall) int64 { return c.ranges[len(c.ranges)-1].Last }
	for i, a := range calls {
		for j, b := range calls {
			if i != j && a.end.Before(b.start) && minOf(b) <= maxOf(a) {
				t.Fatalf("a call started after another returned got smaller IDs: %v (returned %v) then %v (started %v)",
					a.ranges, a.end.Format(time.StampMicro), b.ranges, b.start.Format(time.StampMicro))
			}
		}
	}
}

// hammer runs fn from `per` goroutines on each client, `n` times each,
// and returns every call's IDs and times.
func hammer(t *testing.T, ctx context.Context, clients []*Client, per, n int,
	fn func(ctx context.Context, c *Client, count int) ([]Range, error)) []idCall {
	t.Helper()
	var mu sync.Mutex
	var calls []idCall
	var wg sync.WaitGroup
	errs := make(chan error, len(clients)*per)
	for ci, c := range clients {
		for g := 0; g < per; g++ {
			wg.Add(1)
			go func(c *Client, seed int64) {
				defer wg.Done()
				rng := rand.New(rand.NewSource(seed))
				for i := 0; i < n; i++ {
					start := time.Now()
					rs, err := fn(ctx, c, 1+rng.Intn(20))
					end := time.Now()
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					calls = append(calls, idCall{start, end, rs})
					mu.Unlock()
				}
			}(c, int64(ci*100+g))
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return calls
}

// clusterClients: one routing client of all instances, and one plain
// client per instance (its calls of other instances' keys are forwarded).
func clusterClients(t *testing.T, nodes []*testseqd.Server) []*Client {
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.Addr())
	}
	clients := []*Client{newClient(t, Options{Endpoints: addrs, RouteByShard: true})}
	for _, n := range nodes {
		clients = append(clients, newClient(t, Options{Endpoints: []string{n.Addr()}}))
	}
	return clients
}

// Contiguous blocks of one key from several goroutines and from clients
// of different instances never overlap and grow in real-time order.
func TestClusterBlocksNeverOverlapAndGrow(t *testing.T) {
	nodes := startCluster(t)
	ctx := ctxT(t, 60*time.Second)
	calls := hammer(t, ctx, clusterClients(t, nodes), 3, 40,
		func(ctx context.Context, c *Client, count int) ([]Range, error) {
			first, last, err := c.NextBlock(ctx, "n_block", count)
			if err == nil && last-first+1 != int64(count) {
				err = fmt.Errorf("block %d..%d for %d", first, last, count)
			}
			return []Range{{first, last}}, err
		})
	checkLinearizable(t, calls)
	t.Logf("%d blocks from 4 clients over 3 instances", len(calls))
}

// The same for NEXT_IDS ranges (a call may span several ranges).
func TestClusterIDsNeverOverlapAndGrow(t *testing.T) {
	nodes := startCluster(t)
	ctx := ctxT(t, 60*time.Second)
	calls := hammer(t, ctx, clusterClients(t, nodes), 3, 40,
		func(ctx context.Context, c *Client, count int) ([]Range, error) {
			return c.NextIDs(ctx, "n_ids", count)
		})
	checkLinearizable(t, calls)
	t.Logf("%d NEXT_IDS calls from 4 clients over 3 instances", len(calls))
}

// In cluster mode a subscription on any instance gets every conversation's
// messages (the instances relay them). Its instance is SIGKILLed mid-run:
// the subscription fails over to another instance, and every acknowledged
// message is delivered once, in order.
func TestClusterSubscriptionFailsOver(t *testing.T) {
	nodes := startCluster(t)
	ctx := ctxT(t, 90*time.Second)
	sender := newClient(t, Options{Endpoints: []string{nodes[0].Addr(), nodes[2].Addr()}, RouteByShard: true})
	subClient := newClient(t, Options{Endpoints: []string{nodes[1].Addr(), nodes[2].Addr()}})
	subClient.current.Store(0) // the subscription starts on nodes[1]
	convs := []string{"sg_cs1", "sg_cs2", "sg_cs3", "sg_cs4"}
	recs := map[string]*recorder{} // written before Subscribe, read-only after
	for _, cv := range convs {
		recs[cv] = &recorder{}
	}
	sub, err := subClient.Subscribe(ctx, convs, nil, func(m Message) { recs[m.ConvID].handle(m) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	const n = 200
	acked := map[string]map[string]int64{}
	for _, cv := range convs {
		acked[cv] = map[string]int64{}
	}
	for i := 0; i < n; i++ {
		if i == n/2 {
			nodes[1].Kill()
		}
		cv := convs[i%len(convs)]
		id := "c" + strconv.Itoa(i)
		r, err := sendUntilAcked(ctx, sender, OutgoingMessage{ConvID: cv, SenderID: "u", ClientMsgID: id, Payload: []byte(id)})
		if err != nil {
			t.Fatal(err)
		}
		acked[cv][id] = r.Seq
	}
	for _, cv := range convs {
		cv := cv
		if !waitFor(20*time.Second, func() bool { return len(recs[cv].snapshot()) >= len(acked[cv]) }) {
			t.Fatalf("%s: delivered %d of %d; %+v", cv, len(recs[cv].snapshot()), len(acked[cv]), sub.Stats())
		}
	}
	time.Sleep(200 * time.Millisecond)
	for _, cv := range convs {
		got := recs[cv].snapshot()
		if len(got) != len(acked[cv]) {
			t.Fatalf("%s: delivered %d, sent %d", cv, len(got), len(acked[cv]))
		}
		checkExactlyOnceInOrder(t, cv, 0, got, acked[cv])
	}
	if st := sub.Stats(); st.Lost < 1 || st.Resubscribes < 1 {
		t.Fatalf("the subscription did not move: %+v", st)
	}
	t.Logf("%d messages over %d conversations, subscriber's instance killed: %+v", n, len(convs), sub.Stats())
}
