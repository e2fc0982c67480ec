package seqd

import "testing"

// The table against a map model: random adds, takes, wrong-call removes
// and sweeps; ids never 0, never one in flight, each found only by its own
// id (a late answer's id finds nothing), through growth and id wrap.
func TestCallTableAgainstAMap(t *testing.T) {
	var tb callTable
	tb.next = 0xFFFFFF00 // wraps past 2^32 (and skips 0) during the run
	model := map[uint32]*pendingCall{}
	var gone []uint32
	rnd := uint64(1)
	random := func(n int) int {
		rnd = rnd*6364136223846793005 + 1442695040888963407
		return int((rnd >> 33) % uint64(n))
	}
	for step := 0; step < 200000; step++ {
		switch op := random(10); {
		case op < 5 || len(model) == 0:
			pc := &pendingCall{}
			id := tb.add(pc)
			if id == 0 || model[id] != nil {
				t.Fatalf("step %d: id %d given twice or zero", step, id)
			}
			model[id] = pc
		case op < 8:
			for id, pc := range model {
				if got := tb.take(id); got != pc {
					t.Fatalf("step %d: take(%d) = %p, want %p", step, id, got, pc)
				}
				delete(model, id)
				gone = append(gone, id)
				break
			}
		case op < 9:
			for id, pc := range model {
				if tb.remove(id, &pendingCall{}) {
					t.Fatalf("step %d: removed %d as another call", step, id)
				}
				if !tb.remove(id, pc) {
					t.Fatalf("step %d: remove(%d) failed", step, id)
				}
				delete(model, id)
				gone = append(gone, id)
				break
			}
		default:
			if len(gone) > 0 {
				id := gone[random(len(gone))]
				if pc := tb.take(id); pc != nil && model[id] != pc {
					t.Fatalf("step %d: a late id %d found a call not its own", step, id)
				}
			}
		}
		if step%1000 == 0 && random(3) == 0 {
			// Grow to a burst, then drain by a sweep.
			for i := 0; i < 300; i++ {
				pc := &pendingCall{}
				model[tb.add(pc)] = pc
			}
			swept := tb.removeIf(func(pc *pendingCall) bool { return random(2) == 0 })
			for _, pc := range swept {
				found := false
				for id, m := range model {
					if m == pc {
						delete(model, id)
						found = true
						break
					}
				}
				if !found {
					t.Fatalf("step %d: swept a call not in the table", step)
				}
			}
		}
		if tb.len() != len(model) {
			t.Fatalf("step %d: len %d, want %d", step, tb.len(), len(model))
		}
	}
	if tb.next > 0xFFFFFF00 {
		t.Fatalf("ids did not wrap (next %d)", tb.next)
	}
	for id, pc := range model {
		if tb.take(id) != pc {
			t.Fatalf("call %d lost", id)
		}
	}
	if tb.len() != 0 {
		t.Fatalf("%d calls left", tb.len())
	}
}
