package resp

import (
	"bytes"
	"errors"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
)

// nested returns depth arrays of one element each around ":1".
func nested(depth int) string { return strings.Repeat("*1\r\n", depth) + ":1\r\n" }

// ints returns an aggregate of type t with n integers (n pairs for a map or
// attribute; an attribute is followed by the value it describes).
func ints(t Type, n int) string {
	var b []byte
	b = AppendAggregateHeader(b, t, n)
	k := n
	if t == Map || t == Attribute {
		k = 2 * n
	}
	for i := range k {
		b = AppendInt(b, int64(i))
	}
	if t == Attribute {
		b = AppendNull(b)
	}
	return string(b)
}

// TestLimitsEdges: each Limits field is enforced exactly at its edge: the
// limit is accepted, the limit plus one refused.
func TestLimitsEdges(t *testing.T) {
	cases := []struct {
		name    string
		lim     Limits
		ok, bad string
	}{
		{"MaxBulk bulk", Limits{MaxBulk: 10}, "$10\r\n0123456789\r\n", "$11\r\n0123456789a\r\n"},
		{"MaxBulk bulk error", Limits{MaxBulk: 10}, "!10\r\n0123456789\r\n", "!11\r\n0123456789a\r\n"},
		{"MaxBulk verbatim", Limits{MaxBulk: 10}, "=10\r\ntxt:456789\r\n", "=11\r\ntxt:456789a\r\n"},
		{"MaxBulk header only", Limits{MaxBulk: 10}, "", "$11\r\n"},
		{"MaxAggregate array", Limits{MaxAggregate: 3}, ints(Array, 3), ints(Array, 4)},
		{"MaxAggregate set", Limits{MaxAggregate: 3}, ints(Set, 3), ints(Set, 4)},
		{"MaxAggregate push", Limits{MaxAggregate: 3}, ints(Push, 3), ints(Push, 4)},
		{"MaxAggregate map pairs", Limits{MaxAggregate: 3}, ints(Map, 3), ints(Map, 4)},
		{"MaxAggregate attribute pairs", Limits{MaxAggregate: 3}, ints(Attribute, 3), ints(Attribute, 4)},
		{"MaxAggregate header only", Limits{MaxAggregate: 3}, "", "*4\r\n"},
		{"MaxDepth 1", Limits{MaxDepth: 1}, nested(1), nested(2)},
		{"MaxDepth 3", Limits{MaxDepth: 3}, nested(3), nested(4)},
		{"MaxDepth 3 header only", Limits{MaxDepth: 3}, "", strings.Repeat("*1\r\n", 4)},
		{"MaxDepth map", Limits{MaxDepth: 2}, "%1\r\n:1\r\n%1\r\n:2\r\n:3\r\n", "%1\r\n:1\r\n%1\r\n:2\r\n*1\r\n:3\r\n"},
		// An attribute holds its pairs and the value after it: one level.
		{"MaxDepth attribute", Limits{MaxDepth: 2}, "*1\r\n|0\r\n:1\r\n", "*1\r\n*1\r\n|0\r\n:1\r\n"},
		{"MaxDepth empty array holds nothing", Limits{MaxDepth: 1}, "*1\r\n*0\r\n", "*1\r\n*1\r\n*0\r\n"},
		{"MaxLine simple", Limits{MaxLine: 5}, "+12345\r\n", "+123456\r\n"},
		{"MaxLine error", Limits{MaxLine: 5}, "-ERR 1\r\n", "-ERR 12\r\n"},
		{"MaxLine integer", Limits{MaxLine: 5}, ":12345\r\n", ":123456\r\n"},
		{"MaxLine header", Limits{MaxLine: 2}, "$10\r\n0123456789\r\n", "$100\r\n"},
		{"MaxLine no CRLF yet", Limits{MaxLine: 5}, "", "+1234567"},
		{"MaxValues flat", Limits{MaxValues: 4}, ints(Array, 3), ints(Array, 4)},
		{"MaxValues nested", Limits{MaxValues: 4}, "*1\r\n*1\r\n*1\r\n:1\r\n", "*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n"},
		{"MaxValues attribute", Limits{MaxValues: 4}, "|1\r\n+a\r\n+b\r\n+v\r\n", "|1\r\n+a\r\n+b\r\n*1\r\n+v\r\n"},
		// MaxReplyBytes counts every aggregate element at valueSize bytes.
		{"MaxReplyBytes flat", Limits{MaxReplyBytes: 3 * valueSize}, ints(Array, 3), ints(Array, 4)},
		{"MaxReplyBytes one byte short", Limits{MaxReplyBytes: 3*valueSize - 1}, ints(Array, 2), ints(Array, 3)},
		{"MaxReplyBytes nulls", Limits{MaxReplyBytes: 3 * valueSize}, "*3\r\n_\r\n_\r\n_\r\n", "*4\r\n_\r\n_\r\n_\r\n_\r\n"},
		{"MaxReplyBytes set", Limits{MaxReplyBytes: 3 * valueSize}, ints(Set, 3), ints(Set, 4)},
		{"MaxReplyBytes push", Limits{MaxReplyBytes: 3 * valueSize}, ints(Push, 3), ints(Push, 4)},
		{"MaxReplyBytes nested", Limits{MaxReplyBytes: 4 * valueSize}, "*2\r\n*2\r\n:1\r\n:2\r\n:3\r\n", "*2\r\n*3\r\n:1\r\n:2\r\n:3\r\n:4\r\n"},
		{"MaxReplyBytes map", Limits{MaxReplyBytes: 4 * valueSize}, ints(Map, 2), "%2\r\n:0\r\n*1\r\n:1\r\n:2\r\n:3\r\n"},
		// An attribute counts its pairs and a Value of its own.
		{"MaxReplyBytes attribute", Limits{MaxReplyBytes: 3 * valueSize}, "|1\r\n+a\r\n+b\r\n+v\r\n", "|1\r\n+a\r\n+b\r\n*1\r\n+v\r\n"},
		{"MaxReplyBytes header only", Limits{MaxReplyBytes: 3 * valueSize}, "", "*4\r\n"},
		{"MaxReplyBytes scalars free", Limits{MaxReplyBytes: 1}, "$5\r\nhello\r\n", "*1\r\n$5\r\nhello\r\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.ok != "" {
				if _, n, err := Parse([]byte(tc.ok), tc.lim); err != nil || n != len(tc.ok) {
					t.Errorf("at the limit: Parse(%q) = %d, %v", tc.ok, n, err)
				}
				r := NewReaderLimits(strings.NewReader(tc.ok), tc.lim, 16)
				if _, err := r.Next(); err != nil {
					t.Errorf("at the limit: Next(%q): %v", tc.ok, err)
				}
			}
			_, _, err := Parse([]byte(tc.bad), tc.lim)
			checkProtocolError(t, "Parse", tc.bad, err, -1)
			r := NewReaderLimits(strings.NewReader(tc.bad), tc.lim, 16)
			_, err = r.Next()
			checkProtocolError(t, "Next", tc.bad, err, -1)
		})
	}
}

// TestLimitsDefaults: a zero Limits takes the documented defaults.
func TestLimitsDefaults(t *testing.T) {
	got := Limits{}.withDefaults()
	want := Limits{MaxBulk: DefaultMaxBulk, MaxAggregate: DefaultMaxAggregate,
		MaxDepth: DefaultMaxDepth, MaxLine: DefaultMaxLine, MaxValues: DefaultMaxValues,
		MaxReplyBytes: DefaultMaxReplyBytes}
	if got != want {
		t.Fatalf("defaults %+v, want %+v", got, want)
	}
	if got := (Limits{MaxBulk: -5}).withDefaults().MaxBulk; got != DefaultMaxBulk {
		t.Fatalf("negative MaxBulk became %d", got)
	}
}

// TestLimitsHuge: limits near math.MaxInt must not overflow the scanner's
// arithmetic. (Before the cap, a 2^62-pair map header panicked in build and
// a 2^63-1 bulk header indexed out of range; MaxLine = MaxInt refused every
// line.)
func TestLimitsHuge(t *testing.T) {
	huge := Limits{MaxBulk: math.MaxInt, MaxAggregate: math.MaxInt, MaxDepth: math.MaxInt,
		MaxLine: math.MaxInt, MaxValues: math.MaxInt, MaxReplyBytes: math.MaxInt}
	for _, wire := range []string{
		"$9223372036854775807\r\n",
		"$4611686018427387904\r\n",
		"!9223372036854775807\r\nab",
		"%4611686018427387904\r\n",
		"|4611686018427387904\r\n",
		"*9223372036854775807\r\n:1\r\n",
		"*1\r\n$9223372036854775806\r\n",
	} {
		_, _, err := Parse([]byte(wire), huge)
		if err != ErrIncomplete && !errors.Is(err, ErrProtocol) {
			t.Errorf("Parse(%q): %v", wire, err)
		}
		r := NewReaderLimits(strings.NewReader(wire), huge, 16)
		if _, err := r.Next(); err != io.ErrUnexpectedEOF && !errors.Is(err, ErrProtocol) {
			t.Errorf("Next(%q): %v", wire, err)
		}
	}
	for _, tc := range validWire {
		if _, _, err := Parse([]byte(tc.wire), huge); err != nil {
			t.Errorf("huge limits refuse %q: %v", tc.wire, err)
		}
	}
}

// hostileHeaders claim far more than they send.
var hostileHeaders = []string{
	"$536870912\r\n",             // 512 MiB bulk, exactly the default limit
	"!536870912\r\n",             // 512 MiB bulk error
	"=536870912\r\ntxt:",         // 512 MiB verbatim
	"*4194304\r\n",               // 2^22 elements, exactly the default limit
	"%4194304\r\n",               // 2^22 pairs
	"*1\r\n*1\r\n$536870912\r\n", // nested big bulk
	"*4611686018427387904\r\n",   // 2^62 elements
	"$12345678901234567890\r\n",  // 20-digit length
	"*12345678901234567890\r\n",
}

// TestHostileHeadersCheap: a header claiming a huge body that never comes
// returns at once and allocates nothing near the claimed size, from Parse
// and from a Reader. (Work in proportion to the claim would show in the
// allocations, or take long enough to be a hang: the time bound is only
// a hang guard, far above any loaded machine's pause.)
func TestHostileHeadersCheap(t *testing.T) {
	for _, h := range hostileHeaders {
		start := time.Now()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, _, perr := Parse([]byte(h), Limits{})
		r := NewReader(strings.NewReader(h))
		_, rerr := r.Next()
		runtime.ReadMemStats(&after)
		elapsed := time.Since(start)

		if perr != ErrIncomplete && !errors.Is(perr, ErrProtocol) {
			t.Errorf("Parse(%q): %v", h, perr)
		}
		if rerr != io.ErrUnexpectedEOF && !errors.Is(rerr, ErrProtocol) {
			t.Errorf("Next(%q): %v", h, rerr)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 256<<10 {
			t.Errorf("%q: allocated %d bytes", h, got)
		}
		if len(r.buf) != DefaultBufferSize || cap(r.arena) > 0 {
			t.Errorf("%q: buffer %d, arena %d: sized by the claim", h, len(r.buf), cap(r.arena))
		}
		if elapsed > 30*time.Second {
			t.Errorf("%q took %v", h, elapsed)
		}
		// Per call, Parse allocates at most its error message and the
		// scanner's stack: a few hundred bytes, not the claim.
		b := []byte(h)
		runtime.ReadMemStats(&before)
		for range 100 {
			_, _, _ = Parse(b, Limits{})
		}
		runtime.ReadMemStats(&after)
		if per := (after.TotalAlloc - before.TotalAlloc) / 100; per > 1024 {
			t.Errorf("Parse(%q): %d bytes per call", h, per)
		}
	}
}

// TestHostileHeaderTrickle: while the body of a huge bulk trickles in, the
// buffer grows with the bytes that arrived, never to the claimed size.
func TestHostileHeaderTrickle(t *testing.T) {
	const sent = 100 << 10
	in := append([]byte("$536870912\r\n"), bytes.Repeat([]byte{'x'}, sent)...)
	r := NewReaderLimits(&chunkReader{data: in, sizes: []int{4096}}, Limits{}, 1024)
	if _, err := r.Next(); err != io.ErrUnexpectedEOF {
		t.Fatalf("err %v, want io.ErrUnexpectedEOF", err)
	}
	if len(r.buf) > 2*len(in) {
		t.Fatalf("buffer grew to %d for %d bytes that arrived", len(r.buf), len(in))
	}
}

// TestDeepNestingRefused: 10,000 nested arrays are refused at the default
// depth, by Parse and by a Reader, without a deep recursion.
func TestDeepNestingRefused(t *testing.T) {
	deep := nested(10000)
	_, _, err := Parse([]byte(deep), Limits{})
	checkProtocolError(t, "Parse", "nested(10000)", err, DefaultMaxDepth*4)
	r := NewReader(strings.NewReader(deep))
	_, err = r.Next()
	checkProtocolError(t, "Next", "nested(10000)", err, DefaultMaxDepth*4)

	// At the default depth exactly it decodes.
	v, _, err := Parse([]byte(nested(DefaultMaxDepth)), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for range DefaultMaxDepth {
		v = v.Elems[0]
	}
	checkDecoded(t, "nested", v, integer(1))

	// With the depth raised, 10,000 levels decode.
	if _, _, err := Parse([]byte(deep), Limits{MaxDepth: 10000}); err != nil {
		t.Fatal(err)
	}
}

// TestLongLineRefusedEarly: a line with no end is refused once it passes
// MaxLine, without waiting for the CRLF that never comes.
func TestLongLineRefusedEarly(t *testing.T) {
	in := io.MultiReader(strings.NewReader("+"), &replayReader{data: []byte("a")})
	r := NewReaderLimits(in, Limits{MaxLine: 1000}, 64)
	_, err := r.Next()
	checkProtocolError(t, "Next", "+aaaa…", err, 0)
	if len(r.buf) > 4096 {
		t.Fatalf("buffer grew to %d", len(r.buf))
	}
}
