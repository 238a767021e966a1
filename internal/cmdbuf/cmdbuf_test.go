package cmdbuf

import "testing"

// A buffer taken and given back allocates nothing in steady state; a
// huge one is not kept.
func TestAllocsGetPut(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets are not measured under -race (sync.Pool drops items)")
	}
	if n := testing.AllocsPerRun(1000, func() {
		b := Get()
		Put(b, append(b.B, "SET k v"...))
	}); n != 0 {
		t.Errorf("Get+Put: %v allocations, want 0", n)
	}
	b := Get()
	Put(b, make([]byte, 0, 2*maxKept))
	if cap(b.B) > maxKept {
		t.Errorf("a %d-byte buffer was kept", cap(b.B))
	}
}

func BenchmarkGetPut(b *testing.B) {
	for b.Loop() {
		buf := Get()
		Put(buf, buf.B)
	}
}
