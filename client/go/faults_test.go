package seqd

import (
	"context"
	"crypto/tls"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"seqd.dev/go/internal/testseqd"
)

// pendingCalls counts the calls waiting on c's pooled connections.
func pendingCalls(c *Client) int {
	n := 0
	c.connMu.Lock()
	defer c.connMu.Unlock()
	for cn := range c.conns {
		cn.mu.Lock()
		n += cn.pending.len()
		cn.mu.Unlock()
	}
	return n
}

func TestDeadlineAndCancelWhileServerStopped(t *testing.T) {
	base := runtime.NumGoroutine()
	s := testseqd.Start(t)
	c, err := New(Options{Endpoints: []string{s.Addr()}, CallTimeout: 30 * time.Second, MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.NextID(ctxT(t, 5*time.Second), "n_a"); err != nil {
		t.Fatal(err)
	}
	s.Pause()
	defer s.Resume()

	// A deadline: the call returns at it, with TIMEOUT (and DeadlineExceeded).
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	start := time.Now()
	_, err = c.NextID(ctx, "n_a")
	took := time.Since(start)
	cancel()
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want TIMEOUT", err)
	}
	if took < 250*time.Millisecond || took > 800*time.Millisecond {
		t.Fatalf("returned after %v, want about 300ms", took)
	}

	// Cancellation: many calls in flight, cancelled: each returns CANCELLED
	// at once and frees its slot.
	ctx, cancel = context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.NextIDs(ctx, "n_a", 2)
			errs <- err
		}()
	}
	time.Sleep(200 * time.Millisecond)
	cancel()
	start = time.Now()
	wg.Wait()
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Fatalf("cancelled calls took %v to return", took)
	}
	close(errs)
	for err := range errs {
		if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want CANCELLED", err)
		}
	}
	if n := pendingCalls(c); n != 0 {
		t.Fatalf("%d calls still pending after cancellation", n)
	}

	// The server comes back: its late answers are dropped, new calls get
	// their own answers.
	s.Resume()
	for i := 0; i < 20; i++ {
		rs, err := c.NextIDs(ctxT(t, 10*time.Second), "n_a", 3)
		if err != nil || len(rs) == 0 {
			t.Fatalf("after resume: %v, %v", rs, err)
		}
	}
	c.Close()
	if _, err := c.NextID(context.Background(), "n_a"); !errors.Is(err, ErrCancelled) {
		t.Fatalf("after Close: %v, want CANCELLED", err)
	}
	waitGoroutines(t, base+2, 5*time.Second) // + the server's wait goroutine and its log copy
}

func TestStalledConnectionFailsOver(t *testing.T) {
	a := testseqd.Start(t)
	b := testseqd.Start(t)
	c := newClient(t, Options{Endpoints: []string{a.Addr(), b.Addr()}, CallTimeout: 300 * time.Millisecond,
		MaxAttempts: 3, ConnsPerEndpoint: 1})
	ctx := ctxT(t, 20*time.Second)
	// Stick to a (the current endpoint is whoever answered last).
	for {
		if _, err := c.callEP(ctx, c.eps[0], 0, opPing, 0, []byte("ping")); err != nil {
			t.Fatal(err)
		}
		c.current.Store(0)
		break
	}
	a.Pause()
	defer a.Resume()
	start := time.Now()
	for i := 0; i < 10; i++ {
		if _, err := c.NextID(ctx, "n_f"); err != nil {
			t.Fatalf("call %d with a hung first endpoint: %v", i, err)
		}
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("10 calls took %v: the stalled endpoint was not avoided", took)
	}
	// The hung connection was taken for stalled: closed, its endpoint down.
	if c.eps[0].downUntil.Load() == 0 {
		t.Fatal("the stalled endpoint was not marked down")
	}
	c.epMu.RLock()
	cn := c.eps[0].slots[0].cn
	c.epMu.RUnlock()
	if cn != nil && cn.usable() {
		t.Fatal("the stalled connection is still in use")
	}
}

func TestFailoverFirstEndpointDead(t *testing.T) {
	s := testseqd.Start(t)
	dead := "127.0.0.1:" + itoa(testseqd.FreePort(t))
	// Whatever the round-robin start, every client's calls succeed.
	for i := 0; i < 4; i++ {
		c := newClient(t, Options{Endpoints: []string{dead, s.Addr()}})
		for j := 0; j < 5; j++ {
			if _, err := c.NextID(ctxT(t, 5*time.Second), "n_f"); err != nil {
				t.Fatalf("client %d call %d: %v", i, j, err)
			}
		}
	}
	// Only dead endpoints: UNAVAILABLE after the attempts.
	c := newClient(t, Options{Endpoints: []string{dead}, MaxAttempts: 2})
	_, err := c.NextID(ctxT(t, 5*time.Second), "n_f")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v, want UNAVAILABLE", err)
	}
	// Killed mid-use: the second server takes over.
	s2 := testseqd.Start(t)
	c2 := newClient(t, Options{Endpoints: []string{s.Addr(), s2.Addr()}})
	c2.current.Store(0)
	if _, err := c2.NextID(ctxT(t, 5*time.Second), "n_f"); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	for j := 0; j < 5; j++ {
		if _, err := c2.NextID(ctxT(t, 5*time.Second), "n_f"); err != nil {
			t.Fatalf("after kill, call %d: %v", j, err)
		}
	}
}

func itoa(n int) string { return string(appendInt(nil, n)) }

func appendInt(b []byte, n int) []byte {
	if n >= 10 {
		b = appendInt(b, n/10)
	}
	return append(b, byte('0'+n%10))
}

func TestTLSAndToken(t *testing.T) {
	certs := testseqd.MakeCerts(t)
	dir := t.TempDir()
	tokens := testseqd.TokensFile(t, dir,
		testseqd.Token{ID: "app", Secret: "sqd_right_secret", Scopes: []string{"ids:n_", "snowflake"}})
	s := testseqd.StartConfig(t, testseqd.Config{Certs: certs, TokensFile: tokens})
	tlsOK := &tls.Config{RootCAs: testseqd.Pool(t, certs.CA)}
	ctx := ctxT(t, 20*time.Second)

	good := newClient(t, Options{Endpoints: []string{s.Addr()}, TLSConfig: tlsOK, Token: "sqd_right_secret"})
	if _, err := good.NextID(ctx, "n_tls"); err != nil {
		t.Fatalf("TLS + token: %v", err)
	}
	if _, err := good.NextID(ctx, "sg_outside_scope"); !errors.Is(err, ErrPermissionDenied) {
		t.Fatalf("key outside the token's scope: %v, want PERMISSION_DENIED", err)
	}
	wrong := newClient(t, Options{Endpoints: []string{s.Addr()}, TLSConfig: tlsOK, Token: "sqd_wrong"})
	if _, err := wrong.NextID(ctx, "n_tls"); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("wrong token: %v, want UNAUTHENTICATED", err)
	}
	none := newClient(t, Options{Endpoints: []string{s.Addr()}, TLSConfig: tlsOK})
	if _, err := none.NextID(ctx, "n_tls"); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("no token: %v, want UNAUTHENTICATED", err)
	}
	if err := none.Ping(ctx); err != nil {
		t.Fatalf("PING needs no token: %v", err)
	}
	otherCA := newClient(t, Options{Endpoints: []string{s.Addr()}, Token: "sqd_right_secret", MaxAttempts: 1,
		TLSConfig: &tls.Config{RootCAs: testseqd.Pool(t, certs.OtherCA)}})
	_, err := otherCA.NextID(ctx, "n_tls")
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeUnavailable {
		t.Fatalf("untrusted server: %v, want UNAVAILABLE", err)
	}
	plain := newClient(t, Options{Endpoints: []string{s.Addr()}, Token: "sqd_right_secret", MaxAttempts: 1,
		CallTimeout: 500 * time.Millisecond, ConnectTimeout: 500 * time.Millisecond})
	if _, err := plain.NextID(ctx, "n_tls"); err == nil {
		t.Fatal("plaintext to a TLS listener succeeded")
	}
}

func TestRetriesAcrossRestart(t *testing.T) {
	s := testseqd.Start(t)
	c := newClient(t, Options{Endpoints: []string{s.Addr()}, CallTimeout: time.Second, MaxAttempts: 20,
		BackoffMax: 200 * time.Millisecond})
	ctx := ctxT(t, 60*time.Second)
	if _, err := c.NextID(ctx, "n_r"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[int64]bool{}
	sends := map[string]SendResult{}
	var failures []error
	calls := 0
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				id, err := c.NextID(cctx, "n_r")
				var sr SendResult
				msgID := itoa(g) + "_" + itoa(i)
				if err == nil {
					sr, err = c.Send(cctx, OutgoingMessage{ConvID: "sg_r", SenderID: "u" + itoa(g), ClientMsgID: msgID, Payload: []byte(msgID)})
				}
				cancel()
				mu.Lock()
				calls++
				if err != nil {
					failures = append(failures, err)
				} else {
					if seen[id] {
						t.Errorf("ID %d twice", id)
					}
					seen[id] = true
					sends[msgID] = sr
				}
				mu.Unlock()
			}
		}(g)
	}
	time.Sleep(300 * time.Millisecond)
	s.Restart(true) // SIGKILL mid-load
	time.Sleep(300 * time.Millisecond)
	s.Restart(false) // SIGTERM (SHUTTING_DOWN) mid-load
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of %d calls failed across restarts, first: %v", len(failures), calls, failures[0])
	}
	// Every acknowledged send is stored once, at the seq it was answered.
	seqs := map[int64]string{}
	for id, r := range sends {
		if other, ok := seqs[r.Seq]; ok {
			t.Fatalf("seq %d answered to %s and %s", r.Seq, id, other)
		}
		seqs[r.Seq] = id
	}
	stored := map[string]int64{}
	for from := int64(1); ; {
		page, err := c.PullRange(ctx, "sg_r", PullOptions{FromSeq: from, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Messages {
			key := m.SenderID + "/" + m.ClientMsgID
			if _, dup := stored[key]; dup {
				t.Fatalf("message %s stored twice", key)
			}
			stored[key] = m.Seq
			from = m.Seq + 1
		}
		if page.IsEnd {
			break
		}
	}
	for id, r := range sends {
		g := id[:len(id)-len(id[indexByte(id, '_'):])]
		if seq, ok := stored["u"+g+"/"+id]; !ok || seq != r.Seq {
			t.Fatalf("acked send %s at seq %d: stored at %d (%v)", id, r.Seq, seq, ok)
		}
	}
	t.Logf("%d calls across two restarts, %d IDs, %d sends", calls, len(seen), len(sends))
}

func TestPrefetch(t *testing.T) {
	s := testseqd.Start(t)
	ctx := ctxT(t, 20*time.Second)
	c := newClient(t, Options{Endpoints: []string{s.Addr()}, Prefetch: 100})
	other := newClient(t, Options{Endpoints: []string{s.Addr()}})
	first, err := c.NextID(ctx, "n_p")
	if err != nil {
		t.Fatal(err)
	}
	// The batch is held by c: another client's ID lies beyond it.
	o, err := other.NextID(ctx, "n_p")
	if err != nil || o < first+100 {
		t.Fatalf("other client's ID %d, %v: want >= %d (c holds a batch of 100)", o, err, first+100)
	}
	// Served locally: with the server stopped, a call within the batch
	// returns at once.
	s.Pause()
	quick, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	next, err := c.NextID(quick, "n_p")
	cancel()
	s.Resume()
	if err != nil || next != first+1 {
		t.Fatalf("from the cache: %d, %v; want %d", next, err, first+1)
	}
	// Many IDs from many goroutines: unique.
	var mu sync.Mutex
	seen := map[int64]bool{first: true, next: true}
	parallel(8, func(int) {
		for i := 0; i < 250; i++ {
			id, err := c.NextID(ctx, "n_p")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			if seen[id] || id == o {
				t.Errorf("ID %d twice", id)
			}
			seen[id] = true
			mu.Unlock()
		}
	})
	// count > 1 goes to the server.
	rs, err := c.NextIDs(ctx, "n_p", 5)
	if err != nil || rs[len(rs)-1].Last-rs[0].First < 4 {
		t.Fatalf("NextIDs(5): %v, %v", rs, err)
	}
	// A failed refill fails its waiters with the error.
	c2 := newClient(t, Options{Endpoints: []string{s.Addr()}, Prefetch: 10})
	if _, err := c2.NextID(ctx, "nomatch_p"); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("unknown key through the cache: %v", err)
	}
	c2.cacheMu.Lock()
	n := len(c2.cache)
	c2.cacheMu.Unlock()
	if n != 0 {
		t.Fatalf("%d keys cached after a failed refill, want 0", n)
	}
}

func indexByte(s string, b byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}
