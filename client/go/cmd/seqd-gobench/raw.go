package main

// --raw: the Go ceiling, not the client. One goroutine per connection
// speaks the binary protocol itself, in seqbench's shape: it keeps
// --pipeline NEXT_IDS frames in flight and, after each read, sends one
// new frame per answer in a single write. No seqd.Client, no channels, no
// retries, no allocation per call. What the Go runtime and the kernel cost
// per ID with nothing of the client in the way; bench/go_client.sh prints
// it beside the client, so the client's own share is measured.

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"
)

const (
	rawHeader   = 12
	rawNextIDs  = 0x02
	rawResponse = 0x0001
)

// runRaw is one connection's loop until stop; conn numbers the connection
// (for --new-keys names).
func (w *worker) runRaw(cfg config, conn int, stop *atomic.Bool, warmEnd time.Time) error {
	nc, err := net.Dial("tcp", cfg.addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	_ = nc.(*net.TCPConn).SetNoDelay(true)
	if cfg.token != "" {
		return fmt.Errorf("--raw does not send a token")
	}
	prefix := cfg.newKeys + strconv.Itoa(conn) + "_"
	var counter int64
	sent := make([]time.Time, cfg.pipeline) // by request id - 1
	var wbuf []byte
	appendCall := func(id uint32) {
		key := cfg.key
		if cfg.newKeys != "" {
			counter++
			key = prefix + strconv.FormatInt(counter, 10)
		}
		n := 2 + len(key) + 4
		wbuf = binary.BigEndian.AppendUint32(wbuf, uint32(8+n))
		wbuf = append(wbuf, 1, rawNextIDs, 0, 0)
		wbuf = binary.BigEndian.AppendUint32(wbuf, id)
		wbuf = binary.BigEndian.AppendUint16(wbuf, uint16(len(key)))
		wbuf = append(wbuf, key...)
		wbuf = binary.BigEndian.AppendUint32(wbuf, uint32(cfg.count))
		sent[id-1] = time.Now()
	}
	for id := 1; id <= cfg.pipeline; id++ {
		appendCall(uint32(id))
	}
	if _, err := nc.Write(wbuf); err != nil {
		return err
	}
	inFlight := cfg.pipeline
	rbuf := make([]byte, 64*1024)
	have := 0
	for inFlight > 0 {
		n, err := nc.Read(rbuf[have:])
		if err != nil {
			if err == io.EOF {
				return fmt.Errorf("seqd closed the connection")
			}
			return err
		}
		have += n
		wbuf = wbuf[:0]
		off := 0
		for have-off >= 4 {
			length := int(binary.BigEndian.Uint32(rbuf[off:]))
			if have-off < 4+length {
				break
			}
			frame := rbuf[off : off+4+length]
			off += 4 + length
			id := binary.BigEndian.Uint32(frame[8:12])
			if binary.BigEndian.Uint16(frame[6:8]) != rawResponse || id < 1 || int(id) > cfg.pipeline {
				return fmt.Errorf("unexpected frame")
			}
			inFlight--
			if status := binary.BigEndian.Uint16(frame[12:14]); status != 0 {
				w.errs[strconv.Itoa(int(status))]++
			} else {
				// u32 count, then (first, last) pairs.
				ranges := int(binary.BigEndian.Uint32(frame[14:18]))
				for i := 0; i < ranges; i++ {
					p := frame[18+16*i:]
					w.ids += int64(binary.BigEndian.Uint64(p[8:])-binary.BigEndian.Uint64(p)) + 1
				}
				if t0 := sent[id-1]; t0.Before(warmEnd) {
					w.warmup++
				} else {
					w.lat = append(w.lat, time.Since(t0))
				}
			}
			if !stop.Load() {
				appendCall(id)
				inFlight++
			}
		}
		copy(rbuf, rbuf[off:have])
		have -= off
		if len(wbuf) > 0 {
			if _, err := nc.Write(wbuf); err != nil {
				return err
			}
		}
	}
	return nil
}
