package openim

import (
	"io"
	"math/rand"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// lossyRelay forwards TCP connections to a seqd and, on a share of the
// answers, cuts the connection instead of forwarding them: the request was
// served (a block committed), but its answer never reaches the client.
type lossyRelay struct {
	ln      net.Listener
	target  string
	share   float64 // of the server's reads that are dropped, with the connection
	dropped atomic.Int64
	mu      sync.Mutex
	rng     *rand.Rand
	conns   sync.WaitGroup
}

func startLossyRelay(t *testing.T, target string, share float64, seed int64) *lossyRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &lossyRelay{ln: ln, target: target, share: share, rng: rand.New(rand.NewSource(seed))}
	go r.accept()
	t.Cleanup(func() { ln.Close(); r.conns.Wait() })
	return r
}

func (r *lossyRelay) Addr() string { return r.ln.Addr().String() }

func (r *lossyRelay) accept() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", r.target)
		if err != nil {
			c.Close()
			continue
		}
		r.conns.Add(2)
		go func() { defer r.conns.Done(); io.Copy(s, c); s.Close() }()
		go func() { defer r.conns.Done(); r.answers(c, s); c.Close() }()
	}
}

// answers copies the server's bytes to the client until a read is picked
// to be lost: then both sides are closed and that read is never sent.
func (r *lossyRelay) answers(client, server net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			if r.lose() {
				r.dropped.Add(1)
				server.Close()
				return
			}
			if _, werr := client.Write(buf[:n]); werr != nil {
				server.Close()
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (r *lossyRelay) lose() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rng.Float64() < r.share
}
