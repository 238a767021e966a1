package resp

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
)

// Value constructors for the wire tables.

func simple(s string) Value     { return Value{Type: SimpleString, Str: []byte(s)} }
func simpleErr(s string) Value  { return Value{Type: Error, Str: []byte(s)} }
func bulk(s string) Value       { return Value{Type: BulkString, Str: []byte(s)} }
func bulkErr(s string) Value    { return Value{Type: BulkError, Str: []byte(s)} }
func verbatim(s string) Value   { return Value{Type: Verbatim, Str: []byte(s)} }
func bigNum(s string) Value     { return Value{Type: BigNumber, Str: []byte(s)} }
func integer(n int64) Value     { return Value{Type: Integer, Int: n} }
func null() Value               { return Value{Type: Null} }
func array(e ...Value) Value    { return Value{Type: Array, Elems: e} }
func set(e ...Value) Value      { return Value{Type: Set, Elems: e} }
func push(e ...Value) Value     { return Value{Type: Push, Elems: e} }
func mapOf(kv ...Value) Value   { return Value{Type: Map, Elems: kv} }
func attrOf(kv ...Value) *Value { return &Value{Type: Attribute, Elems: kv} }

func boolean(b bool) Value {
	if b {
		return Value{Type: Boolean, Int: 1}
	}
	return Value{Type: Boolean}
}

// double is a Double as decoded from text: both the bits and the text.
func double(text string, f float64) Value {
	return Value{Type: Double, Int: int64(math.Float64bits(f)), Str: []byte(text)}
}

// withAttr returns v with the attribute a attached.
func withAttr(v Value, a *Value) Value {
	v.Attr = a
	return v
}

// equalValues compares two values deeply. A nil and an empty slice are
// equal; doubles compare by value (NaN equals NaN, -0 differs from 0) and
// by text when both have one.
func equalValues(a, b Value) bool {
	if a.Type != b.Type {
		return false
	}
	switch a.Type {
	case Double:
		fa, fb := a.Float(), b.Float()
		if !(math.IsNaN(fa) && math.IsNaN(fb)) && math.Float64bits(fa) != math.Float64bits(fb) {
			return false
		}
		if len(a.Str) > 0 && len(b.Str) > 0 && !bytes.Equal(a.Str, b.Str) {
			return false
		}
	default:
		if a.Int != b.Int || !bytes.Equal(a.Str, b.Str) {
			return false
		}
	}
	if len(a.Elems) != len(b.Elems) {
		return false
	}
	for i := range a.Elems {
		if !equalValues(a.Elems[i], b.Elems[i]) {
			return false
		}
	}
	if (a.Attr == nil) != (b.Attr == nil) {
		return false
	}
	return a.Attr == nil || equalValues(*a.Attr, *b.Attr)
}

// dump renders v with its types, for failure messages: `*[$"a" :1]`.
func dump(v Value) string {
	var sb strings.Builder
	dumpTo(&sb, v)
	return sb.String()
}

func dumpTo(sb *strings.Builder, v Value) {
	if v.Attr != nil {
		sb.WriteString("attr(")
		dumpTo(sb, *v.Attr)
		sb.WriteString(")")
	}
	sb.WriteByte(byte(v.Type))
	switch v.Type {
	case Integer, Boolean:
		sb.WriteString(strconv.FormatInt(v.Int, 10))
	case Double:
		sb.WriteString(strconv.FormatFloat(v.Float(), 'g', -1, 64))
		sb.WriteString(strconv.Quote(string(v.Str)))
	case Null:
	default:
		if v.Elems == nil {
			sb.WriteString(strconv.Quote(string(v.Str)))
		}
	}
	if v.IsAggregate() {
		sb.WriteString("[")
		for i, e := range v.Elems {
			if i > 0 {
				sb.WriteString(" ")
			}
			dumpTo(sb, e)
		}
		sb.WriteString("]")
	}
}

// replayReader yields the same bytes forever, filling every read, like a
// server that always has the next reply ready.
type replayReader struct {
	data []byte
	off  int
}

func (r *replayReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.data[r.off:])
		n += c
		r.off = (r.off + c) % len(r.data)
	}
	return n, nil
}

// chunkReader yields data in chunks of the given sizes, cycling through
// them.
type chunkReader struct {
	data  []byte
	sizes []int
	i     int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(r.sizes[r.i%len(r.sizes)], len(p), len(r.data))
	r.i++
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// checkTooLarge checks that v stands for a skipped reply of n bytes on the
// wire that broke limit: a TooLarge error value whose Err is a
// *ReplyTooLargeError naming the limit, not a protocol error.
func checkTooLarge(t *testing.T, who string, v Value, limit string, n int) *ReplyTooLargeError {
	t.Helper()
	if v.Type != TooLarge || !v.IsError() {
		t.Fatalf("%s: got %v (%v), want a TooLarge value", who, v.Type, v)
	}
	err := v.Err()
	var e *ReplyTooLargeError
	if !errors.As(err, &e) || !errors.Is(err, ErrReplyTooLarge) || errors.Is(err, ErrProtocol) {
		t.Fatalf("%s: Err %T %v, want a *ReplyTooLargeError", who, err, err)
	}
	if e.Limit != limit || n >= 0 && e.Bytes != int64(n) {
		t.Fatalf("%s: %+v, want limit %s and %d bytes", who, e, limit, n)
	}
	if v.Text() != e.Error() || !strings.Contains(e.Error(), "resp.Limits."+limit) {
		t.Fatalf("%s: text %q, error %q", who, v.Text(), e.Error())
	}
	return e
}
