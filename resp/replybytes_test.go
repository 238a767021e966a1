package resp

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

// nulls returns an array of n nulls: the densest reply in Values per wire
// byte (3 bytes on the wire, a whole Value decoded).
func nulls(n int) []byte {
	b := AppendArrayHeader(nil, n)
	return append(b, bytes.Repeat([]byte("_\r\n"), n)...)
}

// TestMaxReplyBytesIsWhatCloneCopies: for every valid frame, the Values
// that count against MaxReplyBytes are exactly the Values a Clone copies
// (footprint's count), and the limit holds at that edge: a limit of exactly
// that many Values accepts the frame, one byte less refuses it, from Parse
// and from a Reader alike.
func TestMaxReplyBytesIsWhatCloneCopies(t *testing.T) {
	frames := []string{
		ints(Array, 5), ints(Map, 3), ints(Attribute, 2), nested(5),
		"*2\r\n|1\r\n+a\r\n+b\r\n*2\r\n:1\r\n:2\r\n|1\r\n+c\r\n+d\r\n|0\r\n_\r\n",
	}
	for _, tc := range validWire {
		frames = append(frames, tc.wire)
	}
	for _, wire := range frames {
		v, _, err := Parse([]byte(wire), Limits{})
		if err != nil {
			t.Fatalf("Parse(%q): %v", wire, err)
		}
		_, nv := footprint(v)
		if nv == 0 {
			continue // a scalar counts nothing; a zero limit is the default
		}
		at := Limits{MaxReplyBytes: nv * valueSize}
		if _, _, err := Parse([]byte(wire), at); err != nil {
			t.Errorf("Parse(%q) with room for its %d Values: %v", wire, nv, err)
		}
		r := NewReaderLimits(strings.NewReader(wire), at, 16)
		if _, err := r.Next(); err != nil {
			t.Errorf("Next(%q) with room for its %d Values: %v", wire, nv, err)
		}
		if got := cap(r.arena) * valueSize; got > at.MaxReplyBytes+valueSize {
			t.Errorf("%q: Reader arena of %d bytes, limit %d", wire, got, at.MaxReplyBytes)
		}

		short := Limits{MaxReplyBytes: nv*valueSize - 1}
		_, _, perr := Parse([]byte(wire), short)
		checkProtocolError(t, "Parse", wire, perr, -1)
		r = NewReaderLimits(strings.NewReader(wire), short, 16)
		_, rerr := r.Next()
		checkProtocolError(t, "Next", wire, rerr, -1)
		var pp, rp *ProtocolError
		errors.As(perr, &pp)
		errors.As(rerr, &rp)
		if *pp != *rp {
			t.Errorf("%q: Parse %v, Reader %v", wire, perr, rerr)
		}
		if !strings.Contains(pp.Msg, "MaxReplyBytes") {
			t.Errorf("%q: message %q does not name the limit", wire, pp.Msg)
		}
	}
}

// TestMaxReplyBytesEarly: the aggregate header that passes the limit is
// refused as soon as it is read, at its own offset, though none of the
// elements it declares has arrived (the Reader's stream then fails any
// further read).
func TestMaxReplyBytesEarly(t *testing.T) {
	lim := Limits{MaxReplyBytes: 6 * valueSize}
	// 2 elements, then 2 + 5 > 6 at the header "*5", offset 8.
	head := "*2\r\n:1\r\n*5\r\n"
	_, _, err := Parse([]byte(head), lim)
	checkProtocolError(t, "Parse", head, err, 8)
	r := NewReaderLimits(io.MultiReader(strings.NewReader(head), pastHeaderReader{}), lim, 0)
	_, err = r.Next()
	checkProtocolError(t, "Next", head, err, 8)
	if cap(r.arena) != 0 {
		t.Errorf("arena of %d Values allocated for a refused reply", cap(r.arena))
	}
	// The same reply with one element fewer decodes.
	ok := "*2\r\n:1\r\n*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n"
	if _, _, err := Parse([]byte(ok), lim); err != nil {
		t.Errorf("Parse(%q): %v", ok, err)
	}
	// The count starts afresh with each reply.
	r = NewReaderLimits(strings.NewReader(ok+ok+ok), lim, 0)
	for i := range 3 {
		if _, err := r.Next(); err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
	}
}

// pastHeaderReader fails every read: a Reader that reads on past a header
// it should have refused gets an error that is not a ProtocolError.
type pastHeaderReader struct{}

func (pastHeaderReader) Read([]byte) (int, error) {
	return 0, errors.New("read past the refused header")
}

// TestMaxReplyBytesManyNulls is finding 8: an array of 4,194,303 nulls is
// 12.6 MB on the wire and within the default MaxAggregate and MaxValues,
// but its Values would take 288 MiB. With the default limits Parse and a
// Reader refuse it at its header, alike, allocating nearly nothing; at the
// default limit's edge a Reader's arena stays within it.
func TestMaxReplyBytesManyNulls(t *testing.T) {
	const n = 4194303
	reply := nulls(n)
	if len(reply) != 12582919 || n+1 > DefaultMaxValues || n > DefaultMaxAggregate {
		t.Fatalf("reply of %d bytes: not the reply of finding 8", len(reply))
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, perr := Parse(reply, Limits{})
	r := NewReader(bytes.NewReader(reply))
	_, rerr := r.Next()
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("Parse and Reader.Next of %d nulls (%d bytes): TotalAlloc delta %d bytes", n, len(reply), alloc)

	checkProtocolError(t, "Parse", "*4194303 nulls", perr, 0)
	checkProtocolError(t, "Next", "*4194303 nulls", rerr, 0)
	var pp, rp *ProtocolError
	errors.As(perr, &pp)
	errors.As(rerr, &rp)
	if *pp != *rp {
		t.Errorf("Parse: %v; Reader: %v", perr, rerr)
	}
	if alloc > 128<<20 {
		t.Errorf("refusing the reply allocated %d bytes", alloc)
	}
	if cap(r.arena) != 0 || len(r.buf) != DefaultBufferSize {
		t.Errorf("arena of %d Values, buffer of %d bytes for a refused reply", cap(r.arena), len(r.buf))
	}

	// At the default limit's edge: the most nulls it admits decode, and
	// the Reader's arena holds them and the array, no more; one more null
	// is refused.
	most := DefaultMaxReplyBytes / valueSize
	r = NewReader(bytes.NewReader(append(nulls(most), nulls(most+1)...)))
	v, err := r.Next()
	if err != nil || len(v.Elems) != most {
		t.Fatalf("%d nulls: %d elements, %v", most, len(v.Elems), err)
	}
	if got := cap(r.arena) * valueSize; got > DefaultMaxReplyBytes+valueSize {
		t.Errorf("Reader arena of %d bytes for %d nulls, limit %d", got, most, DefaultMaxReplyBytes)
	}
	_, err = r.Next()
	checkProtocolError(t, "Next", "one null too many", err, 0)
}
