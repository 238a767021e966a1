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
// limit is accepted, the limit plus one is not. MaxLine is a protocol
// error; every other limit skips the reply, which Parse and a Reader
// return as a TooLarge value naming the limit, the Reader then decoding
// the next reply. A bad header alone is incomplete: the skip waits for
// the rest.
func TestLimitsEdges(t *testing.T) {
	cases := []struct {
		name    string
		lim     Limits
		ok, bad string
		limit   string // the limit skipped, "" for a protocol error
	}{
		{"MaxBulk bulk", Limits{MaxBulk: 10}, "$10\r\n0123456789\r\n", "$11\r\n0123456789a\r\n", "MaxBulk"},
		{"MaxBulk bulk error", Limits{MaxBulk: 10}, "!10\r\n0123456789\r\n", "!11\r\n0123456789a\r\n", "MaxBulk"},
		{"MaxBulk verbatim", Limits{MaxBulk: 10}, "=10\r\ntxt:456789\r\n", "=11\r\ntxt:456789a\r\n", "MaxBulk"},
		{"MaxBulk header only", Limits{MaxBulk: 10}, "", "$11\r\n", "MaxBulk"},
		{"MaxAggregate array", Limits{MaxAggregate: 3}, ints(Array, 3), ints(Array, 4), "MaxAggregate"},
		{"MaxAggregate set", Limits{MaxAggregate: 3}, ints(Set, 3), ints(Set, 4), "MaxAggregate"},
		{"MaxAggregate push", Limits{MaxAggregate: 3}, ints(Push, 3), ints(Push, 4), "MaxAggregate"},
		{"MaxAggregate map pairs", Limits{MaxAggregate: 3}, ints(Map, 3), ints(Map, 4), "MaxAggregate"},
		{"MaxAggregate attribute pairs", Limits{MaxAggregate: 3}, ints(Attribute, 3), ints(Attribute, 4), "MaxAggregate"},
		{"MaxAggregate header only", Limits{MaxAggregate: 3}, "", "*4\r\n", "MaxAggregate"},
		{"MaxDepth 1", Limits{MaxDepth: 1}, nested(1), nested(2), "MaxDepth"},
		{"MaxDepth 3", Limits{MaxDepth: 3}, nested(3), nested(4), "MaxDepth"},
		{"MaxDepth 3 header only", Limits{MaxDepth: 3}, "", strings.Repeat("*1\r\n", 4), "MaxDepth"},
		{"MaxDepth map", Limits{MaxDepth: 2}, "%1\r\n:1\r\n%1\r\n:2\r\n:3\r\n", "%1\r\n:1\r\n%1\r\n:2\r\n*1\r\n:3\r\n", "MaxDepth"},
		// An attribute holds its pairs and the value after it: one level.
		{"MaxDepth attribute", Limits{MaxDepth: 2}, "*1\r\n|0\r\n:1\r\n", "*1\r\n*1\r\n|0\r\n:1\r\n", "MaxDepth"},
		{"MaxDepth empty array holds nothing", Limits{MaxDepth: 1}, "*1\r\n*0\r\n", "*1\r\n*1\r\n*0\r\n", "MaxDepth"},
		{"MaxLine simple", Limits{MaxLine: 5}, "+12345\r\n", "+123456\r\n", ""},
		{"MaxLine error", Limits{MaxLine: 5}, "-ERR 1\r\n", "-ERR 12\r\n", ""},
		{"MaxLine integer", Limits{MaxLine: 5}, ":12345\r\n", ":123456\r\n", ""},
		{"MaxLine header", Limits{MaxLine: 2}, "$10\r\n0123456789\r\n", "$100\r\n", ""},
		{"MaxLine no CRLF yet", Limits{MaxLine: 5}, "", "+1234567", ""},
		{"MaxValues flat", Limits{MaxValues: 4}, ints(Array, 3), ints(Array, 4), "MaxValues"},
		{"MaxValues nested", Limits{MaxValues: 4}, "*1\r\n*1\r\n*1\r\n:1\r\n", "*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", "MaxValues"},
		{"MaxValues attribute", Limits{MaxValues: 4}, "|1\r\n+a\r\n+b\r\n+v\r\n", "|1\r\n+a\r\n+b\r\n*1\r\n+v\r\n", "MaxValues"},
		// MaxReplyBytes counts every aggregate element at valueSize bytes.
		{"MaxReplyBytes flat", Limits{MaxReplyBytes: 3 * valueSize}, ints(Array, 3), ints(Array, 4), "MaxReplyBytes"},
		{"MaxReplyBytes one byte short", Limits{MaxReplyBytes: 3*valueSize - 1}, ints(Array, 2), ints(Array, 3), "MaxReplyBytes"},
		{"MaxReplyBytes nulls", Limits{MaxReplyBytes: 3 * valueSize}, "*3\r\n_\r\n_\r\n_\r\n", "*4\r\n_\r\n_\r\n_\r\n_\r\n", "MaxReplyBytes"},
		{"MaxReplyBytes set", Limits{MaxReplyBytes: 3 * valueSize}, ints(Set, 3), ints(Set, 4), "MaxReplyBytes"},
		{"MaxReplyBytes push", Limits{MaxReplyBytes: 3 * valueSize}, ints(Push, 3), ints(Push, 4), "MaxReplyBytes"},
		{"MaxReplyBytes nested", Limits{MaxReplyBytes: 4 * valueSize}, "*2\r\n*2\r\n:1\r\n:2\r\n:3\r\n", "*2\r\n*3\r\n:1\r\n:2\r\n:3\r\n:4\r\n", "MaxReplyBytes"},
		{"MaxReplyBytes map", Limits{MaxReplyBytes: 4 * valueSize}, ints(Map, 2), "%2\r\n:0\r\n*1\r\n:1\r\n:2\r\n:3\r\n", "MaxReplyBytes"},
		// An attribute counts its pairs and a Value of its own.
		{"MaxReplyBytes attribute", Limits{MaxReplyBytes: 3 * valueSize}, "|1\r\n+a\r\n+b\r\n+v\r\n", "|1\r\n+a\r\n+b\r\n*1\r\n+v\r\n", "MaxReplyBytes"},
		{"MaxReplyBytes header only", Limits{MaxReplyBytes: 3 * valueSize}, "", "*4\r\n", "MaxReplyBytes"},
		{"MaxReplyBytes scalars free", Limits{MaxReplyBytes: 1}, "$5\r\nhello\r\n", "*1\r\n$5\r\nhello\r\n", "MaxReplyBytes"},
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
			v, n, err := Parse([]byte(tc.bad), tc.lim)
			r := NewReaderLimits(strings.NewReader(tc.bad+"+OK\r\n"), tc.lim, 16)
			rv, rerr := r.Next()
			switch {
			case tc.limit == "":
				checkProtocolError(t, "Parse", tc.bad, err, -1)
				checkProtocolError(t, "Next", tc.bad, rerr, -1)
				return
			case strings.Contains(tc.name, "header only"):
				if err != ErrIncomplete || rerr != nil && rerr != io.ErrUnexpectedEOF {
					t.Fatalf("header only: Parse %v, Next %v", err, rerr)
				}
				return
			}
			if err != nil || n != len(tc.bad) {
				t.Fatalf("Parse(%q) = %d, %v; want the whole reply skipped", tc.bad, n, err)
			}
			checkTooLarge(t, "Parse", v, tc.limit, len(tc.bad))
			if rerr != nil {
				t.Fatalf("Next(%q): %v", tc.bad, rerr)
			}
			checkTooLarge(t, "Next", rv, tc.limit, len(tc.bad))
			if rv.Text() != v.Text() {
				t.Errorf("Parse says %q, Next %q", v.Text(), rv.Text())
			}
			if next, err := r.Next(); err != nil || !next.Equal("OK") {
				t.Fatalf("the reply after the skipped one: %v, %v", next, err)
			}
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
	// Past the hard bounds, MaxBulk and MaxAggregate are lowered to them.
	if got := (Limits{MaxBulk: math.MaxInt, MaxAggregate: math.MaxInt}).withDefaults(); math.MaxInt > HardMaxBulk &&
		(int64(got.MaxBulk) != HardMaxBulk || int64(got.MaxAggregate) != HardMaxAggregate) {
		t.Fatalf("huge limits became %d, %d", got.MaxBulk, got.MaxAggregate)
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

// TestDeepNestingSkipped: 10,000 nested arrays break the default depth:
// Parse and a Reader skip the reply, without a deep recursion or a stack
// as deep, and the Reader decodes the reply after it.
func TestDeepNestingSkipped(t *testing.T) {
	deep := nested(10000)
	v, n, err := Parse([]byte(deep), Limits{})
	if err != nil || n != len(deep) {
		t.Fatalf("Parse: %d, %v", n, err)
	}
	e := checkTooLarge(t, "Parse", v, "MaxDepth", len(deep))
	if e.Size != DefaultMaxDepth+1 || e.Type != Array {
		t.Errorf("Parse: %+v", e)
	}
	r := NewReader(strings.NewReader(deep + ":7\r\n"))
	v, err = r.Next()
	if err != nil {
		t.Fatal(err)
	}
	checkTooLarge(t, "Next", v, "MaxDepth", len(deep))
	if cap(r.sc.stack) > DefaultMaxDepth+1 {
		t.Errorf("scanner stack of %d for a skipped reply", cap(r.sc.stack))
	}
	if v, err := r.Next(); err != nil || v.Int != 7 {
		t.Fatalf("next reply: %v, %v", v, err)
	}

	// At the default depth exactly it decodes.
	v, _, err = Parse([]byte(nested(DefaultMaxDepth)), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for range DefaultMaxDepth {
		v = v.Elems[0]
	}
	checkDecoded(t, "nested", v, integer(1))

	// With the depth raised, 10,000 levels decode.
	if v, _, err := Parse([]byte(deep), Limits{MaxDepth: 10000}); err != nil || v.Type != Array {
		t.Fatal(v.Type, err)
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
