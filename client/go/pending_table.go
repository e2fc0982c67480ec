package seqd

// callTable is a connection's calls in flight by request id: a ring of
// slots indexed by the id's low bits, so entering, finding and removing a
// call hash nothing. Ids grow; an id whose slot is still taken (a call
// slower than the ring's size of later ones) is skipped, and when every
// slot is taken the ring doubles. Ids of the calls in it are distinct
// modulo the ring's size, so they stay distinct modulo twice it.
//
// Thread safety: none; the connection's mu guards it.
type callTable struct {
	slots []tableSlot // len is a power of two; nil until the first add
	next  uint32      // the next id to try; never 0
	n     int         // calls in the table
}

type tableSlot struct {
	id uint32
	pc *pendingCall // nil: free
}

const tableFirstSize = 64

// add enters pc under a fresh id (never 0, never one in the table) and
// returns it.
func (t *callTable) add(pc *pendingCall) uint32 {
	if t.slots == nil {
		t.slots = make([]tableSlot, tableFirstSize)
	}
	if t.n == len(t.slots) {
		t.grow()
	}
	mask := uint32(len(t.slots) - 1)
	for {
		id := t.next
		t.next++
		if t.next == 0 {
			t.next = 1
		}
		if id == 0 {
			continue
		}
		s := &t.slots[id&mask]
		if s.pc == nil {
			s.id, s.pc = id, pc
			t.n++
			return id
		}
	}
}

// grow doubles the ring, every call keeping its id.
func (t *callTable) grow() {
	old := t.slots
	t.slots = make([]tableSlot, 2*len(old))
	mask := uint32(len(t.slots) - 1)
	for _, s := range old {
		if s.pc != nil {
			t.slots[s.id&mask] = s
		}
	}
}

// take removes and returns the call with id, nil if none.
func (t *callTable) take(id uint32) *pendingCall {
	if t.n == 0 {
		return nil
	}
	s := &t.slots[id&uint32(len(t.slots)-1)]
	if s.pc == nil || s.id != id {
		return nil
	}
	pc := s.pc
	s.pc = nil
	t.n--
	return pc
}

// remove removes the call with id if it is pc; false if it is not there.
func (t *callTable) remove(id uint32, pc *pendingCall) bool {
	if t.n == 0 {
		return false
	}
	s := &t.slots[id&uint32(len(t.slots)-1)]
	if s.pc != pc || s.id != id {
		return false
	}
	s.pc = nil
	t.n--
	return true
}

// len is the number of calls in the table.
func (t *callTable) len() int { return t.n }

// removeIf removes and returns, in no order, the calls f says true of.
func (t *callTable) removeIf(f func(*pendingCall) bool) []*pendingCall {
	var out []*pendingCall
	for i := range t.slots {
		if s := &t.slots[i]; s.pc != nil && f(s.pc) {
			out = append(out, s.pc)
			s.pc = nil
			t.n--
		}
	}
	return out
}
