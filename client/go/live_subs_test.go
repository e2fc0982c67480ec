package seqd

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"seqd.dev/go/internal/testseqd"
)

// liveWorld records what a live-subscription run did, each event stamped
// with the next tick of one clock: messages sent (send start and ack),
// memberships (Add called and returned, Remove called and returned) and
// deliveries (the moment the subscription handed the message over, and the
// membership it belongs to: Subscription.beginHook).
type liveWorld struct {
	t     *testing.T
	clock atomic.Int64

	mu      sync.Mutex
	sent    map[string][]liveSent           // per conversation, in ack order
	bySeq   map[string]map[int64]liveSent   // per conversation
	got     map[string]map[string][]liveGot // per subscription, per conversation
	members []*liveMember
}

type liveSent struct {
	id             string
	seq            int64
	startAt, ackAt int64
}

type liveGot struct {
	m     Message
	at    int64
	epoch uint64
}

// liveMember is one conversation's time in one subscription.
type liveMember struct {
	sub, conv            string
	epoch                uint64
	from                 int64 // -1: from now
	addCalled, addReturn int64
	rmCalled, rmReturn   int64 // 0 while still a member
}

func newLiveWorld(t *testing.T) *liveWorld {
	return &liveWorld{t: t, sent: map[string][]liveSent{}, bySeq: map[string]map[int64]liveSent{},
		got: map[string]map[string][]liveGot{}}
}

// subscribe makes an empty subscription named name whose deliveries are
// recorded; its handler takes delay per message (so messages queue up).
func (w *liveWorld) subscribe(ctx context.Context, c *Client, name string, delay time.Duration) *Subscription {
	// The loop goroutine's: set by beginHook, read by the handler.
	var at int64
	var epoch uint64
	w.mu.Lock()
	w.got[name] = map[string][]liveGot{}
	w.mu.Unlock()
	s, err := c.Subscribe(ctx, nil, nil, func(m Message) {
		w.mu.Lock()
		w.got[name][m.ConvID] = append(w.got[name][m.ConvID], liveGot{m: m, at: at, epoch: epoch})
		w.mu.Unlock()
		time.Sleep(delay)
	})
	if err != nil {
		w.t.Fatalf("Subscribe %s: %v", name, err)
	}
	s.mu.Lock()
	s.beginHook = func(_ Message, e uint64) { at, epoch = w.clock.Add(1), e }
	s.mu.Unlock()
	w.t.Cleanup(func() { s.Close() })
	return s
}

// add is Add, recorded; from nil: from now. Any goroutine.
func (w *liveWorld) add(ctx context.Context, s *Subscription, name string, convs []string, from map[string]int64) error {
	called := w.clock.Add(1)
	fresh := s.notMembers(convs)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.Add(ctx, convs, from); err != nil {
		return fmt.Errorf("%s.Add(%v): %w", name, convs, err)
	}
	returned := w.clock.Add(1)
	_, epochs := s.membersOf(fresh)
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, cv := range fresh {
		f, ok := from[cv]
		if !ok {
			f = -1
		}
		w.members = append(w.members, &liveMember{sub: name, conv: cv, epoch: epochs[i], from: f,
			addCalled: called, addReturn: returned})
	}
	return nil
}

// remove is Remove, recorded. Any goroutine.
func (w *liveWorld) remove(ctx context.Context, s *Subscription, name string, convs ...string) {
	called := w.clock.Add(1)
	if err := s.Remove(ctx, convs...); err != nil {
		w.t.Errorf("%s.Remove(%v): %v", name, convs, err)
		return
	}
	returned := w.clock.Add(1)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.members {
		for _, cv := range convs {
			if m.sub == name && m.conv == cv && m.rmCalled == 0 {
				m.rmCalled, m.rmReturn = called, returned
			}
		}
	}
}

// send sends messages to conv until stop, each re-sent with its id until
// acknowledged, and records them.
func (w *liveWorld) send(ctx context.Context, c *Client, conv string, stop *atomic.Bool) error {
	for i := 0; !stop.Load(); i++ {
		id := conv + "-" + strconv.Itoa(i)
		start := w.clock.Add(1)
		r, err := sendUntilAcked(ctx, c, OutgoingMessage{ConvID: conv, SenderID: "u", ClientMsgID: id,
			ContentType: 1, Payload: []byte(id + "/payload")})
		if err != nil {
			return err
		}
		ls := liveSent{id: id, seq: r.Seq, startAt: start, ackAt: w.clock.Add(1)}
		w.mu.Lock()
		w.sent[conv] = append(w.sent[conv], ls)
		if w.bySeq[conv] == nil {
			w.bySeq[conv] = map[int64]liveSent{}
		}
		w.bySeq[conv][r.Seq] = ls
		w.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	return nil
}

// maxAcked is the highest seq of conv acknowledged so far.
func (w *liveWorld) maxAcked(conv string) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var max int64
	for _, s := range w.sent[conv] {
		if s.seq > max {
			max = s.seq
		}
	}
	return max
}

// caughtUp: every membership delivered its conversation's last message
// acknowledged (before its Remove was called, if it was).
func (w *liveWorld) caughtUp() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.members {
		var max int64
		for _, s := range w.sent[m.conv] {
			if s.seq > max && (m.rmCalled == 0 || s.ackAt < m.rmCalled) && s.seq > m.from {
				max = s.seq
			}
		}
		var last int64
		for _, g := range w.got[m.sub][m.conv] {
			if g.epoch == m.epoch {
				last = g.m.Seq
			}
		}
		if last < max {
			return false
		}
	}
	return true
}

// check asserts the contract on what was recorded (see
// TestLiveSubscriptionsAddRemoveThroughKills) and returns the number of
// deliveries.
func (w *liveWorld) check() int {
	t := w.t
	w.mu.Lock()
	defer w.mu.Unlock()
	total := 0
	for sub, byConv := range w.got {
		for conv, got := range byConv {
			total += len(got)
			for i, g := range got {
				if m := w.memberOf(sub, conv, g.epoch); m == nil || g.at < m.addCalled {
					t.Errorf("%s got %s seq %d at %d, outside its memberships %s", sub, conv, g.m.Seq, g.at, w.describe(sub, conv))
				}
				if i > 0 && g.epoch < got[i-1].epoch {
					t.Errorf("%s/%s: seq %d of an earlier membership after one of a later", sub, conv, g.m.Seq)
				}
			}
		}
	}
	for _, m := range w.members {
		w.checkMember(m)
	}
	return total
}

// memberOf: the membership of sub in conv with this epoch.
func (w *liveWorld) memberOf(sub, conv string, epoch uint64) *liveMember {
	for _, m := range w.members {
		if m.sub == sub && m.conv == conv && m.epoch == epoch {
			return m
		}
	}
	return nil
}

func (w *liveWorld) describe(sub, conv string) string {
	var out []string
	for _, m := range w.members {
		if m.sub == sub && m.conv == conv {
			out = append(out, fmt.Sprintf("[%d..%d]", m.addCalled, m.rmReturn))
		}
	}
	return strings.Join(out, " ")
}

// checkMember: the membership's deliveries are consecutive seqs, each the
// stored message, and they reached the handler after the deliveries of the
// memberships before it; they start after the Add's start; every message
// sent after Add returned and acknowledged before Remove was called is
// among them, and none sent after Remove returned; an open membership
// delivered everything.
func (w *liveWorld) checkMember(m *liveMember) {
	t := w.t
	var got []liveGot
	for _, g := range w.got[m.sub][m.conv] {
		if g.epoch == m.epoch {
			got = append(got, g)
		}
	}
	name := fmt.Sprintf("%s/%s [%d..%d]", m.sub, m.conv, m.addCalled, m.rmReturn)
	delivered := map[int64]bool{}
	for i, g := range got {
		if i > 0 && g.m.Seq != got[i-1].m.Seq+1 {
			t.Errorf("%s: seq %d after %d (hole, duplicate or disorder)", name, g.m.Seq, got[i-1].m.Seq)
			return
		}
		s, ok := w.bySeq[m.conv][g.m.Seq]
		if !ok || g.m.ClientMsgID != s.id || string(g.m.Payload) != s.id+"/payload" || g.m.ConvID != m.conv {
			t.Errorf("%s: seq %d delivered as %q %q, stored %q (present %v)", name, g.m.Seq, g.m.ClientMsgID, g.m.Payload, s.id, ok)
			return
		}
		delivered[g.m.Seq] = true
		if s := w.bySeq[m.conv][g.m.Seq]; m.rmReturn != 0 && s.startAt > m.rmReturn {
			t.Errorf("%s: seq %d sent at %d, after Remove returned, delivered", name, g.m.Seq, s.startAt)
		}
	}
	var before int64 // the highest seq acknowledged before Add was called
	for _, s := range w.sent[m.conv] {
		if s.ackAt < m.addCalled && s.seq > before {
			before = s.seq
		}
	}
	if len(got) > 0 {
		first := got[0].m.Seq
		if m.from >= 0 && first != m.from+1 {
			t.Errorf("%s: first delivery seq %d, want from+1 = %d", name, first, m.from+1)
		}
		if m.from < 0 && first <= before {
			t.Errorf("%s: delivered seq %d, acknowledged before Add was called (up to %d)", name, first, before)
		}
	}
	for _, s := range w.sent[m.conv] {
		due := s.startAt > m.addReturn || (m.from >= 0 && s.seq > m.from)
		if due && (m.rmCalled == 0 || s.ackAt < m.rmCalled) && !delivered[s.seq] {
			t.Errorf("%s: %s (seq %d, sent %d..%d) never delivered", name, s.id, s.seq, s.startAt, s.ackAt)
			return
		}
	}
}

// metric sums the samples of name whose labels contain label.
func metric(t *testing.T, s *testseqd.Server, name, label string) float64 {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", s.HTTPPort))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var sum float64
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") || !strings.Contains(line, label) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metrics line %q", line)
		}
		sum += v
	}
	return sum
}

// Three subscriptions of one client change their conversations while a
// sender writes to all of them, through two kill -9 and restarts of seqd
// (the SQLite store survives): conversations added from now and from a
// given seq, removed, added again, one added and one removed while seqd is
// down, one conversation held by all three. Per subscription and
// conversation membership, every message sent after Add returned and
// acknowledged before Remove was called is delivered once, in seq order,
// with its content; nothing from before the Add's start, nothing sent
// after Remove returned, and a membership's messages all before the next
// membership's of the same conversation. The three share one push
// connection: seqd counts 3 binary connections (sender's pool, the
// subscriber's pool, the push connection) where a connection per
// subscription makes 5, and its subscription gauge matches what the client
// holds once conversations were removed.
func TestLiveSubscriptionsAddRemoveThroughKills(t *testing.T) {
	s := testseqd.Start(t)
	ctx := ctxT(t, 60*time.Second)
	sender := newClient(t, Options{Endpoints: []string{s.Addr()}, ConnsPerEndpoint: 1})
	subClient := newClient(t, Options{Endpoints: []string{s.Addr()}, ConnsPerEndpoint: 1,
		MaxAttempts: 60, BackoffMax: 100 * time.Millisecond})
	w := newLiveWorld(t)
	convs := []string{"sg_l0", "sg_l1", "sg_l2", "sg_l3", "sg_l4", "sg_l5"}
	var stop atomic.Bool
	var senders sync.WaitGroup
	for _, cv := range convs {
		senders.Add(1)
		go func(cv string) {
			defer senders.Done()
			if err := w.send(ctx, sender, cv, &stop); err != nil {
				t.Error(err)
			}
		}(cv)
	}
	defer func() { stop.Store(true); senders.Wait() }()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// A's handler is slow: its removals find messages queued, which they
	// must still deliver up to the cut.
	a := w.subscribe(ctx, subClient, "A", 400*time.Microsecond)
	b, c := w.subscribe(ctx, subClient, "B", 0), w.subscribe(ctx, subClient, "C", 0)
	time.Sleep(100 * time.Millisecond)
	must(w.add(ctx, a, "A", []string{"sg_l0", "sg_l1", "sg_l2"}, nil))
	from3 := w.maxAcked("sg_l3") - 5 // what exists above it is pulled first
	if from3 < 0 {
		from3 = 0
	}
	must(w.add(ctx, b, "B", []string{"sg_l1", "sg_l3"}, map[string]int64{"sg_l3": from3}))
	must(w.add(ctx, c, "C", []string{"sg_l1", "sg_l5"}, nil))
	time.Sleep(150 * time.Millisecond)
	conns := metric(t, s, "seqd_open_connections", `interface="binary"`)
	if conns != 3 || subClient.pushConn().opened.Load() != 1 {
		t.Fatalf("%v binary connections, %d push connections opened: want 3 and 1 (one shared push connection)",
			conns, subClient.pushConn().opened.Load())
	}
	must(w.add(ctx, a, "A", []string{"sg_l3"}, nil))
	time.Sleep(150 * time.Millisecond)
	w.remove(ctx, a, "A", "sg_l0")
	must(w.add(ctx, b, "B", []string{"sg_l4"}, map[string]int64{"sg_l4": 0}))
	time.Sleep(150 * time.Millisecond)

	s.Kill()
	removed := make(chan struct{})
	go func() { // waits for seqd for its cut
		w.remove(ctx, b, "B", "sg_l1")
		close(removed)
	}()
	added := make(chan error, 1)
	go func() { // waits for seqd: the next connection carries it
		added <- w.add(ctx, c, "C", []string{"sg_l2"}, map[string]int64{"sg_l2": w.maxAcked("sg_l2")})
	}()
	time.Sleep(100 * time.Millisecond)
	s.Start()
	must(<-added)
	<-removed
	time.Sleep(150 * time.Millisecond)
	must(w.add(ctx, a, "A", []string{"sg_l0"}, nil)) // again, afresh
	w.remove(ctx, c, "C", "sg_l5")
	time.Sleep(150 * time.Millisecond)

	s.Restart(true)
	time.Sleep(150 * time.Millisecond)
	w.remove(ctx, a, "A", "sg_l2") // C holds it still
	w.remove(ctx, b, "B", "sg_l4") // the last: unsubscribed
	must(w.add(ctx, b, "B", []string{"sg_l1"}, nil))
	time.Sleep(200 * time.Millisecond)
	stop.Store(true)
	senders.Wait()

	if !waitFor(20*time.Second, w.caughtUp) {
		t.Errorf("not caught up: A %+v B %+v C %+v", a.Stats(), b.Stats(), c.Stats())
	}
	time.Sleep(300 * time.Millisecond) // a late duplicate would show now
	n := w.check()
	if conns := metric(t, s, "seqd_open_connections", `interface="binary"`); conns != 3 {
		t.Errorf("%v binary connections after the restarts, want 3", conns)
	}
	held := subClient.pushConn().heldConvs()
	if subs := metric(t, s, "seqd_message_subscriptions", ""); int(subs) != len(held) {
		t.Errorf("seqd holds %v subscriptions, the client %d (%v)", subs, len(held), held)
	}
	for _, sub := range []*Subscription{a, b, c} {
		if st := sub.Stats(); st.Lost < 2 || st.Resubscribes < 2 {
			t.Errorf("stats %+v: want the two kills seen", st)
		}
	}
	sort.Strings(held)
	t.Logf("%d deliveries over %d memberships, %d push connections opened; held at the end %v; A %+v B %+v C %+v",
		n, len(w.members), subClient.pushConn().opened.Load(), held, a.Stats(), b.Stats(), c.Stats())
}

// The server's per-connection cap applies to the union of a client's
// subscriptions: a conversation another subscription holds costs nothing,
// one past the cap fails with TOO_LARGE and is not added. Remove may be
// called from the handler: the conversation ends at its cut (its max seq
// then), and nothing sent after that arrives.
func TestLiveSubscriptionsCapAndRemoveFromHandler(t *testing.T) {
	s, c := startClient(t, "--tcp-max-subscriptions", "3")
	ctx := ctxT(t, 20*time.Second)
	var rec recorder
	var a *Subscription
	removed := make(chan error, 1)
	a, err := c.Subscribe(ctx, []string{"sg_c1", "sg_c2", "sg_c3"}, nil, func(m Message) {
		rec.handle(m)
		if m.ConvID == "sg_c3" && m.Seq == 1 {
			removed <- a.Remove(ctx, "sg_c3")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := c.Subscribe(ctx, []string{"sg_c1"}, nil, func(Message) {})
	if err != nil {
		t.Fatalf("a conversation already held: %v", err)
	}
	defer b.Close()
	if err := b.Add(ctx, []string{"sg_c4", "sg_c2"}, nil); CodeOf(err) != CodeTooLarge {
		t.Fatalf("past the cap: %v, want TOO_LARGE", err)
	}
	if got := b.Conversations(); len(got) != 1 || got[0] != "sg_c1" {
		t.Fatalf("after the refused Add b holds %v", got)
	}
	send := func(cv string, i int) {
		id := cv + "-" + strconv.Itoa(i)
		if _, err := c.Send(ctx, OutgoingMessage{ConvID: cv, SenderID: "u", ClientMsgID: id, Payload: []byte(id)}); err != nil {
			t.Fatal(err)
		}
	}
	send("sg_c3", 0)
	select {
	case err := <-removed:
		if err != nil {
			t.Fatalf("Remove from the handler: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's Remove did not return")
	}
	for i := 1; i < 4; i++ {
		send("sg_c3", i)
		send("sg_c2", i)
	}
	if !waitFor(5*time.Second, func() bool { return len(rec.snapshot()) >= 4 }) {
		t.Fatalf("delivered %v", rec.snapshot())
	}
	time.Sleep(200 * time.Millisecond)
	var c3 []int64
	for _, m := range rec.snapshot() {
		if m.ConvID == "sg_c3" {
			c3 = append(c3, m.Seq)
		}
	}
	if len(c3) != 1 || c3[0] != 1 {
		t.Fatalf("sg_c3 delivered %v, want [1]: its cut", c3)
	}
	if n := metric(t, s, "seqd_message_subscriptions", ""); n != 2 {
		t.Fatalf("seqd holds %v subscriptions, want 2 (sg_c1, sg_c2)", n)
	}
}
