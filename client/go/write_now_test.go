package seqd

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// The reader's non-blocking write (writeNow) to a peer that reads nothing
// yet: the socket takes part of a large buffer, the writer goroutine sends
// the rest once the peer reads, and bytes the calls append meanwhile come
// after it; the peer gets every byte once, in order, and the reader never
// blocks.
func TestWriteNowHandsWhatTheSocketRefusesToTheWriter(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	cn := &conn{c: &Client{conns: map[*conn]struct{}{}}, ep: &endpoint{addr: "peer"}, nc: nc,
		done: make(chan struct{}), kick: make(chan struct{}, 1)}
	cn.raw, _ = nc.(*net.TCPConn).SyscallConn()
	go cn.writeLoop()
	defer cn.close()

	first := make([]byte, 32<<20) // far more than a socket buffer
	for i := range first {
		first[i] = byte(i % 251)
	}
	cn.mu.Lock()
	cn.wbuf = append(cn.wbuf, first...)
	start := time.Now()
	cn.writeNow() // unlocks cn.mu
	if d := time.Since(start); d > time.Second {
		t.Fatalf("writeNow blocked for %v", d)
	}
	cn.mu.Lock()
	if !cn.kicked && len(cn.wbuf) > 0 {
		t.Fatal("bytes left in wbuf with the writer idle")
	}
	cn.mu.Unlock()
	later := []byte("frames queued after the reader's write")
	cn.mu.Lock()
	cn.wbuf = append(cn.wbuf, later...)
	cn.wakeWriter() // unlocks cn.mu
	want := append(append([]byte(nil), first...), later...)
	got := make([]byte, len(want))
	peer.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.ReadFull(peer, got); err != nil {
		t.Fatalf("the peer read: %v", err)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && got[i] == want[i] {
			i++
		}
		t.Fatalf("bytes differ from offset %d of %d", i, len(want))
	}
}
