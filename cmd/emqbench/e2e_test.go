package main

import (
	"testing"
	"time"
)

// TestRoundClockCoalesces: latencies recorded through a roundClock, runs
// of equal ones among them, then flushed, make the histogram that
// recording each one directly makes: the same count, the same values.
func TestRoundClockCoalesces(t *testing.T) {
	direct, coalesced := newLatencies(), newLatencies()
	c := new(roundClock)
	rec := c.recorder(coalesced)
	seq := []struct {
		shard int
		d     time.Duration
		n     int
	}{{0, time.Millisecond, 5}, {0, 2 * time.Millisecond, 1}, {1, 2 * time.Millisecond, 3}, {1, time.Millisecond, 2}, {0, time.Millisecond, 4}}
	total := 0
	for _, s := range seq {
		for range s.n {
			direct.record(s.shard, s.d)
			rec.record(s.shard, s.d)
			total++
		}
	}
	c.flush()
	c.flush() // nothing kept: records nothing
	a, b := direct.merged(), coalesced.merged()
	if a.TotalCount() != int64(total) || b.TotalCount() != a.TotalCount() {
		t.Fatalf("counts: direct %d, coalesced %d, want %d", a.TotalCount(), b.TotalCount(), total)
	}
	if !a.Equals(b) {
		t.Fatalf("coalesced histogram differs: %v vs %v", b.CumulativeDistribution(), a.CumulativeDistribution())
	}
}
