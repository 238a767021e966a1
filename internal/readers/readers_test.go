package readers

import (
	"testing"
	"time"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/replica"
)

func facts(cmdsArgs ...[]string) []cmds.Fact {
	var fs []cmds.Fact
	var keys []cmds.Span
	for _, a := range cmdsArgs {
		args := make([][]byte, len(a))
		for i, s := range a {
			args[i] = []byte(s)
		}
		fs, keys = cmds.AppendInspect(fs, keys, args)
	}
	return fs
}

// Reads are what the command table flags readonly, alone or in a batch
// of reads; a write, a blocking read, a transaction, WATCH, WAIT, a
// script run with EVALSHA or a command the table lacks keep the
// submission on the primary.
func TestReadOnly(t *testing.T) {
	for _, tc := range []struct {
		cmds [][]string
		want bool
	}{
		{[][]string{{"GET", "k"}}, true},
		{[][]string{{"GET", "k"}, {"HGETALL", "h"}, {"EVAL_RO", "return 1", "0"}}, true},
		{[][]string{{"XREAD", "STREAMS", "s", "0"}}, true},
		{[][]string{{"XREAD", "BLOCK", "10", "STREAMS", "s", "0"}}, false},
		{[][]string{{"GET", "k"}, {"SET", "k", "v"}}, false},
		{[][]string{{"BLPOP", "k", "0"}}, false},
		{[][]string{{"MULTI"}, {"GET", "k"}, {"EXEC"}}, false},
		{[][]string{{"WATCH", "k"}}, false},
		{[][]string{{"WAIT", "1", "0"}}, false},
		{[][]string{{"EVALSHA", "0123456789012345678901234567890123456789", "0"}}, false},
		{[][]string{{"EMQ.CLAIM", "q"}}, false},
		{nil, false},
	} {
		if got := ReadOnly(facts(tc.cmds...)); got != tc.want {
			t.Errorf("%v: ReadOnly %v, want %v", tc.cmds, got, tc.want)
		}
	}
}

func TestInfoZone(t *testing.T) {
	info := "# Server\r\nredis_version:7.2.4\r\navailability_zone:us-east-1a\r\nos:Linux\r\n"
	if z := InfoZone(info); z != "us-east-1a" {
		t.Errorf("InfoZone: %q", z)
	}
	if z := InfoZone("# Server\r\nvalkey_version:8.0.1\r\n"); z != "" {
		t.Errorf("InfoZone of a server without one: %q", z)
	}
}

// Pick: Latency takes the lowest round trip, or any of those within
// near of it at random; Zone the same in the zone, or anywhere when none
// is in it; no member down, undialed or skipped is picked; nil when none
// is left.
func TestPick(t *testing.T) {
	const ms = int64(time.Millisecond)
	mk := func(p *Pool, addr string, rtt int64, zone string) *Member {
		m := &Member{Addr: addr}
		m.cl.Store(&conn.Client{})
		m.rtt.Store(rtt)
		m.zone.Store(&zone)
		p.members[addr] = m
		return m
	}
	p := New(conn.Options{}, false, replica.Options{Route: replica.Latency})
	a, b := mk(p, "a", 3*ms, "z1"), mk(p, "b", 1*ms, "z2")
	mk(p, "c", ms/2, "z2").Down()
	p.members["d"] = &Member{Addr: "d"} // never dialed
	if m := p.Pick(nil, nil); m != b {
		t.Errorf("Latency picked %v, want b", m)
	}
	if m := p.Pick(nil, b); m != a {
		t.Errorf("Latency skipping b picked %v, want a", m)
	}
	if m := p.Pick([]string{"a"}, a); m != nil {
		t.Errorf("with every candidate skipped: %v", m)
	}
	p.reads = replica.Options{Route: replica.Zone, Zone: "z1"}
	if m := p.Pick(nil, nil); m != a {
		t.Errorf("Zone z1 picked %v, want a", m)
	}
	p.reads.Zone = "z9"
	if m := p.Pick(nil, nil); m != b {
		t.Errorf("Zone with none in it picked %v, want b (the lowest latency)", m)
	}
	p.reads = replica.Options{Route: replica.Random}
	if seen := picks(p); len(seen) != 2 || !seen[a] || !seen[b] {
		t.Errorf("Random picked %v, want a and b", seen)
	}
	// A replica as near as b (within NearRTT) shares b's reads; a stays out.
	e := mk(p, "e", ms+int64(NearRTT)/2, "z2")
	p.reads = replica.Options{Route: replica.Latency}
	if seen := picks(p); len(seen) != 2 || !seen[b] || !seen[e] {
		t.Errorf("Latency with b and e equally near picked %v, want b and e", seen)
	}
	p.reads = replica.Options{Route: replica.Zone, Zone: "z2"}
	if seen := picks(p); len(seen) != 2 || !seen[b] || !seen[e] {
		t.Errorf("Zone z2 with b and e equally near picked %v, want b and e", seen)
	}
}

// picks returns the members 200 picks chose.
func picks(p *Pool) map[*Member]bool {
	seen := map[*Member]bool{}
	for range 200 {
		seen[p.Pick(nil, nil)] = true
	}
	return seen
}
