package resp

import (
	"bytes"
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
// that many Values accepts the frame, one byte less skips it, from Parse
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
		pv, n, perr := Parse([]byte(wire), short)
		if perr != nil || n != len(wire) {
			t.Fatalf("Parse(%q) short of room: %d, %v", wire, n, perr)
		}
		pe := checkTooLarge(t, "Parse", pv, "MaxReplyBytes", len(wire))
		r = NewReaderLimits(strings.NewReader(wire), short, 16)
		rv, rerr := r.Next()
		if rerr != nil {
			t.Fatalf("Next(%q) short of room: %v", wire, rerr)
		}
		re := checkTooLarge(t, "Next", rv, "MaxReplyBytes", len(wire))
		if *pe != *re || pe.Max != short.MaxReplyBytes || pe.Size <= int64(pe.Max) {
			t.Errorf("%q: Parse %+v, Reader %+v", wire, pe, re)
		}
		if cap(r.arena) != 0 {
			t.Errorf("%q: arena of %d Values for a skipped reply", wire, cap(r.arena))
		}
	}
}

// TestMaxReplyBytesEarly: the aggregate header that passes the limit is
// known as soon as it is read, though none of the elements it declares
// has arrived: from then on nothing is built and nothing is counted but
// the values still owed. The reply is skipped whole and the count starts
// afresh with the next.
func TestMaxReplyBytesEarly(t *testing.T) {
	lim := Limits{MaxReplyBytes: 6 * valueSize}
	// 2 elements, then 2 + 5 > 6 at the header "*5".
	head := "*2\r\n:1\r\n*5\r\n"
	if _, _, err := Parse([]byte(head), lim); err != ErrIncomplete {
		t.Fatalf("Parse(%q): %v, want ErrIncomplete", head, err)
	}
	full := head + ":1\r\n:2\r\n:3\r\n:4\r\n:5\r\n"
	v, n, err := Parse([]byte(full), lim)
	if err != nil || n != len(full) {
		t.Fatalf("Parse(%q): %d, %v", full, n, err)
	}
	if e := checkTooLarge(t, "Parse", v, "MaxReplyBytes", len(full)); e.Size != 7*int64(valueSize) {
		t.Errorf("size %d, want the 7 Values declared so far", e.Size)
	}
	r := NewReaderLimits(strings.NewReader(full+full), lim, 0)
	for i := range 2 {
		v, err := r.Next()
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		checkTooLarge(t, "Next", v, "MaxReplyBytes", len(full))
	}
	if cap(r.arena) != 0 {
		t.Errorf("arena of %d Values allocated for a skipped reply", cap(r.arena))
	}
	// The same reply with one element fewer decodes.
	ok := "*2\r\n:1\r\n*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n"
	if _, _, err := Parse([]byte(ok), lim); err != nil {
		t.Errorf("Parse(%q): %v", ok, err)
	}
	// The count starts afresh with each reply.
	r = NewReaderLimits(strings.NewReader(ok+full+ok+ok), lim, 0)
	for i := range 4 {
		v, err := r.Next()
		if err != nil || (i == 1) != (v.Type == TooLarge) {
			t.Fatalf("reply %d: %v, %v", i, v.Type, err)
		}
	}
}

// TestMaxReplyBytesManyNulls is finding 8: an array of 4,194,303 nulls is
// 12.6 MB on the wire and within the default MaxAggregate and MaxValues,
// but its Values would take 288 MiB. With the default limits Parse and a
// Reader skip it from its header on, alike, allocating nearly nothing: the
// Reader's buffer does not grow for it. At the default limit's edge a
// Reader's arena stays within it.
func TestMaxReplyBytesManyNulls(t *testing.T) {
	const n = 4194303
	reply := nulls(n)
	if len(reply) != 12582919 || n+1 > DefaultMaxValues || n > DefaultMaxAggregate {
		t.Fatalf("reply of %d bytes: not the reply of finding 8", len(reply))
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	pv, _, perr := Parse(reply, Limits{})
	r := NewReader(bytes.NewReader(reply))
	rv, rerr := r.Next()
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("Parse and Reader.Next of %d nulls (%d bytes): TotalAlloc delta %d bytes", n, len(reply), alloc)

	if perr != nil || rerr != nil {
		t.Fatalf("Parse: %v; Reader: %v", perr, rerr)
	}
	pe := checkTooLarge(t, "Parse", pv, "MaxReplyBytes", len(reply))
	re := checkTooLarge(t, "Next", rv, "MaxReplyBytes", len(reply))
	if *pe != *re || pe.Size != n*int64(valueSize) {
		t.Errorf("Parse: %+v; Reader: %+v", pe, re)
	}
	if alloc > 1<<20 {
		t.Errorf("skipping the reply allocated %d bytes", alloc)
	}
	if cap(r.arena) != 0 || len(r.buf) != DefaultBufferSize {
		t.Errorf("arena of %d Values, buffer of %d bytes for a skipped reply", cap(r.arena), len(r.buf))
	}

	// At the default limit's edge: the most nulls it admits decode, and
	// the Reader's arena holds them and the array, no more; one more null
	// is skipped.
	most := DefaultMaxReplyBytes / valueSize
	r = NewReader(bytes.NewReader(append(nulls(most), nulls(most+1)...)))
	v, err := r.Next()
	if err != nil || len(v.Elems) != most {
		t.Fatalf("%d nulls: %d elements, %v", most, len(v.Elems), err)
	}
	if got := cap(r.arena) * valueSize; got > DefaultMaxReplyBytes+valueSize {
		t.Errorf("Reader arena of %d bytes for %d nulls, limit %d", got, most, DefaultMaxReplyBytes)
	}
	v, err = r.Next()
	if err != nil {
		t.Fatal(err)
	}
	checkTooLarge(t, "Next", v, "MaxReplyBytes", len(nulls(most+1)))
}
