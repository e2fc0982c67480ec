package seqd

import (
	"encoding/binary"
	"math"
)

// Wire encoding (docs/protocol.md): big-endian integers, `str` = u16 length
// + bytes, `bytes` = u32 length + bytes, lists = u32 count + items.

const (
	protoVersion   = 1
	headerSize     = 12
	maxFrameSize   = 1 << 20 // header included
	maxPayloadSize = maxFrameSize - headerSize
	maxAuthSecret  = 256
	maxListItems   = 1000

	flagResponse  uint16 = 0x0001
	flagPush      uint16 = 0x0002
	flagNoForward uint16 = 0x0004
)

// Opcodes (docs/protocol.md, "Ops").
const (
	opProtocolError byte = 0x00
	opPing          byte = 0x01
	opNextIDs       byte = 0x02
	opAuth          byte = 0x03
	opNextBlock     byte = 0x05
	opMaxIDs        byte = 0x06
	opGetMinSeqs    byte = 0x07
	opSetMinSeqs    byte = 0x08
	opNextBlockOnce byte = 0x09
	opMaxIDsTimes   byte = 0x0A
	opUserSeqs      byte = 0x0B
	opSetUserSeqs   byte = 0x0C
	opSnowflake     byte = 0x10
	opSnowflakeDec  byte = 0x11
	opSend          byte = 0x20
	opPullRange     byte = 0x21
	opPullSeqs      byte = 0x22
	opMaxSeqs       byte = 0x23
	opSyncUser      byte = 0x24
	opMarkRead      byte = 0x25
	opSetMember     byte = 0x26
	opGetMember     byte = 0x27
	opSetStatus     byte = 0x28
	opSetConvMinSeq byte = 0x29
	opSubscribe     byte = 0x2A
	opUnsubscribe   byte = 0x2B
	opPushMessage   byte = 0x2C
	opPushDropped   byte = 0x2D
	opClusterMap    byte = 0x40
	opClusterNudge  byte = 0x41
	opPlacement     byte = 0x42
)

// appendHeader appends a request frame header for a payload of n bytes.
func appendHeader(b []byte, op byte, flags uint16, id uint32, n int) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(8+n))
	b = append(b, protoVersion, op)
	b = binary.BigEndian.AppendUint16(b, flags)
	return binary.BigEndian.AppendUint32(b, id)
}

// enc builds a request payload. Strings longer than a u16 set bad.
type enc struct {
	b   []byte
	bad bool
}

func (e *enc) u8(v uint8)   { e.b = append(e.b, v) }
func (e *enc) u16(v uint16) { e.b = binary.BigEndian.AppendUint16(e.b, v) }
func (e *enc) u32(v uint32) { e.b = binary.BigEndian.AppendUint32(e.b, v) }
func (e *enc) i32(v int32)  { e.u32(uint32(v)) }
func (e *enc) i64(v int64)  { e.b = binary.BigEndian.AppendUint64(e.b, uint64(v)) }
func (e *enc) str(s string) {
	if len(s) > math.MaxUint16 {
		e.bad = true
		return
	}
	e.u16(uint16(len(s)))
	e.b = append(e.b, s...)
}

// flag writes b as a u8: 1 for true, 0 for false.
func (e *enc) flag(b bool) {
	if b {
		e.u8(1)
	} else {
		e.u8(0)
	}
}
func (e *enc) bytes(p []byte) {
	e.u32(uint32(len(p)))
	e.b = append(e.b, p...)
}

// keyValues writes m as a list of (str key, i64 value) and returns one of
// its keys (a request is routed by it), "" for an empty map.
func (e *enc) keyValues(m map[string]int64) (route string) {
	e.u32(uint32(len(m)))
	for k, v := range m {
		if route == "" {
			route = k
		}
		e.str(k)
		e.i64(v)
	}
	return route
}

func (e *enc) strList(ss []string) {
	e.u32(uint32(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

// payload is the encoded bytes, or INVALID_ARGUMENT / TOO_LARGE when they
// cannot be sent.
func (e *enc) payload() ([]byte, error) {
	if e.bad {
		return nil, errorf(CodeInvalidArgument, "a string is longer than 65535 bytes")
	}
	if len(e.b) > maxPayloadSize {
		return nil, errorf(CodeTooLarge, "request larger than the 1 MiB frame limit")
	}
	return e.b, nil
}

// dec reads a result; any short read sets bad (checked once by done()).
type dec struct {
	b   []byte
	bad bool
}

func (d *dec) take(n int) []byte {
	if d.bad || n < 0 || len(d.b) < n {
		d.bad = true
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}
func (d *dec) u8() uint8 {
	if p := d.take(1); p != nil {
		return p[0]
	}
	return 0
}
func (d *dec) u16() uint16 {
	if p := d.take(2); p != nil {
		return binary.BigEndian.Uint16(p)
	}
	return 0
}
func (d *dec) u32() uint32 {
	if p := d.take(4); p != nil {
		return binary.BigEndian.Uint32(p)
	}
	return 0
}
func (d *dec) i32() int32 { return int32(d.u32()) }
func (d *dec) i64() int64 {
	if p := d.take(8); p != nil {
		return int64(binary.BigEndian.Uint64(p))
	}
	return 0
}
func (d *dec) str() string { return string(d.take(int(d.u16()))) }
func (d *dec) bytes() []byte {
	p := d.take(int(d.u32()))
	if p == nil {
		return nil
	}
	return append([]byte(nil), p...)
}

// count reads a list count, refusing one the remaining bytes cannot hold
// (each item at least min bytes).
func (d *dec) count(min int) int {
	n := int(d.u32())
	if d.bad || n*min > len(d.b) {
		d.bad = true
		return 0
	}
	return n
}

// done is nil if the whole result parsed with nothing left over.
// emptyResult checks that op's OK result is empty, as ops that answer
// nothing but their status send it.
func emptyResult(res []byte, op string) error {
	if len(res) != 0 {
		return errorf(CodeProtocol, "malformed %s result", op)
	}
	return nil
}

func (d *dec) done(what string) error {
	if d.bad || len(d.b) != 0 {
		return errorf(CodeProtocol, "malformed %s result", what)
	}
	return nil
}
