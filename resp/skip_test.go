package resp

import (
	"errors"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// skipCases are well-formed replies over a limit: nested aggregates,
// attributes, every scalar type inside, bulk strings over MaxBulk.
var skipCases = []struct {
	name  string
	lim   Limits
	wire  string
	limit string
	typ   Type // the reply's own type
}{
	{"array over MaxAggregate", Limits{MaxAggregate: 2}, ints(Array, 3), "MaxAggregate", Array},
	{"nested over MaxReplyBytes", Limits{MaxReplyBytes: 4 * valueSize},
		"*2\r\n*3\r\n$3\r\nabc\r\n_\r\n,1.5\r\n%1\r\n+k\r\n*2\r\n#t\r\n(123\r\n", "MaxReplyBytes", Array},
	{"every scalar inside", Limits{MaxValues: 3},
		"*9\r\n+s\r\n-ERR e\r\n:1\r\n$-1\r\n_\r\n#f\r\n,inf\r\n(-5\r\n=7\r\ntxt:abc\r\n", "MaxValues", Array},
	{"RESP2 nulls inside", Limits{MaxValues: 2}, "*3\r\n*-1\r\n$-1\r\n:1\r\n", "MaxValues", Array},
	{"map over MaxAggregate", Limits{MaxAggregate: 1}, ints(Map, 2), "MaxAggregate", Map},
	{"deep over MaxDepth", Limits{MaxDepth: 2}, nested(6), "MaxDepth", Array},
	{"attribute then push", Limits{MaxReplyBytes: 4 * valueSize},
		"|1\r\n+ttl\r\n:3\r\n>3\r\n+message\r\n+ch\r\n$5\r\nhello\r\n", "MaxReplyBytes", Push},
	{"attributes chained then map", Limits{MaxValues: 4},
		"|0\r\n|1\r\n+a\r\n*2\r\n:1\r\n:2\r\n%1\r\n+k\r\n+v\r\n", "MaxValues", Map},
	{"attribute inside", Limits{MaxValues: 3}, "*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n", "MaxValues", Array},
	{"push over MaxBulk", Limits{MaxBulk: 4}, ">3\r\n+message\r\n+ch\r\n$5\r\nhello\r\n", "MaxBulk", Push},
	{"bulk over MaxBulk", Limits{MaxBulk: 10}, "$300\r\n" + strings.Repeat("b", 300) + "\r\n", "MaxBulk", BulkString},
	{"bulk error over MaxBulk", Limits{MaxBulk: 3}, "!7\r\nERR big\r\n", "MaxBulk", BulkError},
	{"verbatim over MaxBulk", Limits{MaxBulk: 4}, "=8\r\ntxt:abcd\r\n", "MaxBulk", Verbatim},
	{"bulks over MaxBulk inside", Limits{MaxBulk: 2},
		"*3\r\n$3\r\nabc\r\n$0\r\n\r\n=6\r\nmkd:xy\r\n", "MaxBulk", Array},
}

// TestSkipAcrossBufferEdges: every reply of skipCases, delivered one byte
// at a time, through buffers of 1 to 64 bytes (every edge falls inside
// headers, data and CRLFs), is skipped exactly as Parse skips it, and the
// reply after it decodes.
func TestSkipAcrossBufferEdges(t *testing.T) {
	for _, tc := range skipCases {
		t.Run(tc.name, func(t *testing.T) {
			wire := tc.wire
			pv, n, err := Parse([]byte(wire), tc.lim)
			if err != nil || n != len(wire) {
				t.Fatalf("Parse: %d, %v", n, err)
			}
			pe := checkTooLarge(t, "Parse", pv, tc.limit, len(wire))
			if pe.Type != tc.typ {
				t.Fatalf("Parse: type %v, want %v", pe.Type, tc.typ)
			}
			// Unskipped, with the default limits, the reply decodes.
			if v, _, err := Parse([]byte(wire), Limits{}); err != nil || v.Type != tc.typ {
				t.Fatalf("Parse with default limits: %v, %v", v.Type, err)
			}
			for _, size := range []int{1, 2, 3, 5, 7, 16, 64} {
				in := wire + "+next\r\n" + wire + ":9\r\n"
				r := NewReaderLimits(iotest.OneByteReader(strings.NewReader(in)), tc.lim, size)
				for i, want := range []string{"skip", "next", "skip", "9"} {
					v, err := r.Next()
					if err != nil {
						t.Fatalf("size %d, reply %d: %v", size, i, err)
					}
					if want == "skip" {
						re := checkTooLarge(t, "Next", v, tc.limit, len(wire))
						if *re != *pe {
							t.Fatalf("size %d: Next %+v, Parse %+v", size, re, pe)
						}
						continue
					}
					if v.String() != want {
						t.Fatalf("size %d, reply %d: %v, want %s", size, i, v, want)
					}
				}
				if _, err := r.Next(); err != io.EOF {
					t.Fatalf("size %d: end %v", size, err)
				}
			}
		})
	}
}

// TestSkipMalformedInside: a malformed byte in the part of a reply being
// skipped is still a protocol error (sticky), at the same frame offset
// from Parse and from a Reader fed a byte at a time, whose buffer has
// dropped the bytes before it.
func TestSkipMalformedInside(t *testing.T) {
	cases := []struct {
		name string
		lim  Limits
		wire string
		off  int
	}{
		{"bad integer", Limits{MaxAggregate: 1}, "*3\r\n:1\r\n:x\r\n:3\r\n", 8},
		{"bulk without CRLF", Limits{MaxBulk: 2}, "*2\r\n:1\r\n$5\r\nhelloXY:1\r\n", 17},
		{"verbatim without colon", Limits{MaxBulk: 4}, "*2\r\n:1\r\n=8\r\ntxtXabcd\r\n", 8},
		{"verbatim too short", Limits{MaxBulk: 1}, "*2\r\n:1\r\n=3\r\ntxt\r\n", 8},
		{"unknown type", Limits{MaxValues: 1}, "*2\r\n:1\r\n@\r\n", 8},
		{"line without CR", Limits{MaxValues: 1}, "*2\r\n:1\r\n:2\n", 10},
		{"line too long", Limits{MaxValues: 1, MaxLine: 8}, "*2\r\n:1\r\n+0123456789\r\n", 8},
		{"length past the hard bound", Limits{MaxValues: 1}, "*2\r\n:1\r\n$1099511627777\r\n", 8},
		{"aggregate past the hard bound", Limits{MaxValues: 1}, "*2\r\n:1\r\n%4294967297\r\n", 8},
		{"streamed", Limits{MaxValues: 1}, "*2\r\n:1\r\n$?\r\n", 8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, perr := Parse([]byte(tc.wire), tc.lim)
			checkProtocolError(t, "Parse", tc.wire, perr, tc.off)
			r := NewReaderLimits(iotest.OneByteReader(strings.NewReader(tc.wire+"+OK\r\n")), tc.lim, 4)
			_, rerr := r.Next()
			checkProtocolError(t, "Next", tc.wire, rerr, tc.off)
			if _, err := r.Next(); err != rerr {
				t.Fatalf("not sticky: %v", err)
			}
		})
	}
}

// TestSkipMemoryBounded: skipping replies of megabytes leaves the Reader's
// buffer at its starting size and allocates next to nothing: an array of
// 100,000 bulk strings over MaxReplyBytes, a bulk string of 8 MiB over
// MaxBulk, an array nested past MaxDepth holding 1 MiB of bulks.
func TestSkipMemoryBounded(t *testing.T) {
	var arr []byte
	arr = AppendArrayHeader(arr, 100000)
	for i := range 100000 {
		arr = AppendBulkString(arr, strconv.Itoa(i)+strings.Repeat("v", 90))
	}
	bulk := AppendBulkString(nil, strings.Repeat("x", 8<<20))
	deep := []byte(strings.Repeat("*1\r\n", 200) + "*1024\r\n")
	for range 1024 {
		deep = AppendBulkString(deep, strings.Repeat("d", 1024))
	}
	for _, tc := range []struct {
		name  string
		wire  []byte
		limit string
	}{
		{"100,000 bulks", arr, "MaxReplyBytes"},
		{"8 MiB bulk", bulk, "MaxBulk"},
		{"deep", deep, "MaxDepth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := Limits{MaxReplyBytes: 1000 * valueSize, MaxBulk: 1 << 20}
			in := append(append([]byte(nil), tc.wire...), "+OK\r\n"...)
			const size = 4096
			r := NewReaderLimits(&chunkReader{data: in, sizes: []int{1000, 4096, 1, 7000}}, lim, size)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			v, err := r.Next()
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			checkTooLarge(t, "Next", v, tc.limit, len(tc.wire))
			if len(r.buf) != size || cap(r.arena) != 0 {
				t.Fatalf("buffer %d (started at %d), arena %d, for a skipped reply of %d bytes", len(r.buf), size, cap(r.arena), len(tc.wire))
			}
			if a := after.TotalAlloc - before.TotalAlloc; a > 64<<10 {
				t.Fatalf("skipping %d bytes allocated %d bytes", len(tc.wire), a)
			}
			if v, err := r.Next(); err != nil || v.String() != "OK" {
				t.Fatalf("next: %v, %v", v, err)
			}
		})
	}
}

// TestSkipInterrupted: a read deadline in the middle of a skip is not a
// fault: the next call resumes the skip where it stopped.
func TestSkipInterrupted(t *testing.T) {
	wire := AppendBulkString(nil, strings.Repeat("x", 5000))
	in := &deadlineReader{data: append(wire, "+OK\r\n"...), every: 3}
	r := NewReaderLimits(in, Limits{MaxBulk: 100}, 512)
	var v Value
	var err error
	interrupts := 0
	for {
		v, err = r.Next()
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		interrupts++
	}
	if err != nil || interrupts == 0 {
		t.Fatalf("%v after %d interrupts", err, interrupts)
	}
	checkTooLarge(t, "Next", v, "MaxBulk", len(wire))
	if v, err := r.Next(); err != nil || v.String() != "OK" {
		t.Fatalf("next: %v, %v", v, err)
	}
}

// TestTooLargeValue: a TooLarge value is an error value that survives a
// Clone and an Arena, prints its error, and encodes as a simple error.
func TestTooLargeValue(t *testing.T) {
	v, _, err := Parse([]byte(ints(Array, 5)), Limits{MaxAggregate: 4})
	if err != nil {
		t.Fatal(err)
	}
	e := checkTooLarge(t, "Parse", v, "MaxAggregate", len(ints(Array, 5)))
	if e.Size != 5 || e.Max != 4 || e.Type != Array {
		t.Fatalf("%+v", e)
	}
	var a Arena
	for _, c := range []Value{v.Clone(), a.Retain(v)} {
		if ce := checkTooLarge(t, "copy", c, "MaxAggregate", -1); *ce != *e {
			t.Fatalf("copy %+v, want %+v", ce, e)
		}
	}
	if s := v.String(); s != "(error) "+e.Error() {
		t.Fatalf("String %q", s)
	}
	enc := AppendValue(nil, v)
	back, _, err := Parse(enc, Limits{})
	if err != nil || back.Type != Error || back.Text() != e.Error() {
		t.Fatalf("encoded %q: %v, %v", enc, back, err)
	}
	if TooLarge.String() != "reply too large" {
		t.Fatal(TooLarge.String())
	}
	want := "resp: reply too large: an aggregate of 5 elements, over Limits.MaxAggregate of 4; the reply of " +
		strconv.Itoa(len(ints(Array, 5))) + " bytes was skipped and the stream kept (raise resp.Limits.MaxAggregate, conn.Options.Limits, to receive it)"
	if e.Error() != want {
		t.Fatalf("Error()\n%s\nwant\n%s", e.Error(), want)
	}
}

// deadlineReader hands over 100 bytes at a time and fails every every-th
// read with a deadline error.
type deadlineReader struct {
	data  []byte
	every int
	n     int
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	d.n++
	if d.n%d.every == 0 {
		return 0, os.ErrDeadlineExceeded
	}
	if len(d.data) == 0 {
		return 0, io.EOF
	}
	k := copy(p, d.data[:min(100, len(d.data))])
	d.data = d.data[k:]
	return k, nil
}
