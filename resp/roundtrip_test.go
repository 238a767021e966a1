package resp

import (
	"bytes"
	"math"
	"strconv"
	"testing"
)

// roundTrip encodes v, decodes it with Parse and with a Reader, and checks
// both equal v and that re-encoding gives the same bytes.
func roundTrip(t *testing.T, v Value) []byte {
	t.Helper()
	enc := AppendValue(nil, v)
	got, n, err := Parse(enc, Limits{})
	if err != nil || n != len(enc) {
		t.Fatalf("Parse(%q) = %d, %v", enc, n, err)
	}
	if !equalValues(got, v) {
		t.Fatalf("round trip of %q:\n got  %s\n want %s", enc, dump(got), dump(v))
	}
	if again := AppendValue(nil, got); !bytes.Equal(again, enc) {
		t.Fatalf("re-encoding %q gave %q", enc, again)
	}
	r := NewReaderLimits(bytes.NewReader(enc), Limits{}, 16)
	got, err = r.Next()
	if err != nil || !equalValues(got, v) {
		t.Fatalf("Reader round trip of %q: %s, %v", enc, dump(got), err)
	}
	return enc
}

// TestRoundTripEveryType: AppendValue then decode gives back every type.
func TestRoundTripEveryType(t *testing.T) {
	values := []Value{
		simple("OK"), simple(""),
		simpleErr("ERR x"), simpleErr("EMQKIND job 7"),
		integer(0), integer(9), integer(10), integer(-1), integer(math.MaxInt64), integer(math.MinInt64),
		bulk(""), bulk("x"), bulk("a\r\nb\x00"), bulk(string(make([]byte, 1000))),
		bulkErr("ERR multi\r\nline"), bulkErr(""),
		verbatim("txt:hello"), verbatim("mkd:"),
		bigNum("-123456789012345678901234567890"),
		null(), boolean(true), boolean(false),
		array(), array(bulk("a"), integer(2), null()),
		set(), set(simple("a"), simple("b")),
		push(simple("message"), bulk("ch"), bulk("payload")),
		mapOf(), mapOf(simple("a"), integer(1), bulk("b"), array(boolean(false))),
		withAttr(integer(5), attrOf(simple("ttl"), integer(10))),
		withAttr(integer(5), &Value{Type: Attribute, Elems: []Value{simple("b"), integer(2)}, Attr: attrOf(simple("a"), integer(1))}),
		array(withAttr(bulk("x"), attrOf()), mapOf(simple("k"), withAttr(null(), attrOf(simple("z"), integer(0))))),
		array(array(array(array(mapOf(set(), push()))))),
	}
	for _, v := range values {
		roundTrip(t, v)
	}
}

// TestRoundTripDouble: doubles built from a float (no text) are written by
// AppendDouble and come back with the same value, NaN and -0 included.
func TestRoundTripDouble(t *testing.T) {
	for _, f := range []float64{
		0, math.Copysign(0, -1), 1.5, -1.5, 1e10, 1e300, -1e-300, math.SmallestNonzeroFloat64,
		math.MaxFloat64, math.Pi, 0.1, math.Inf(1), math.Inf(-1), math.NaN(),
	} {
		v := Value{Type: Double, Int: int64(math.Float64bits(f))}
		enc := roundTrip(t, v)
		if want := string(AppendDouble(nil, f)); string(enc) != want {
			t.Fatalf("AppendValue(%v) = %q, AppendDouble %q", f, enc, want)
		}
	}
	for f, want := range map[float64]string{math.Inf(1): ",inf\r\n", math.Inf(-1): ",-inf\r\n", 1.5: ",1.5\r\n", 1e21: ",1e+21\r\n"} {
		if got := string(AppendDouble(nil, f)); got != want {
			t.Errorf("AppendDouble(%v) = %q, want %q", f, got, want)
		}
	}
	if got := string(AppendDouble(nil, math.NaN())); got != ",nan\r\n" {
		t.Errorf("AppendDouble(NaN) = %q", got)
	}
}

// TestAppendEncoders checks each encoder's exact bytes and that they decode.
func TestAppendEncoders(t *testing.T) {
	cases := []struct {
		got  []byte
		want string
	}{
		{AppendArrayHeader(nil, 0), "*0\r\n"},
		{AppendArrayHeader(nil, 12), "*12\r\n"},
		{AppendBulk(nil, []byte("a\r\n")), "$3\r\na\r\n\r\n"},
		{AppendBulk(nil, nil), "$0\r\n\r\n"},
		{AppendBulkString(nil, "hello"), "$5\r\nhello\r\n"},
		{AppendSimpleString(nil, "OK"), "+OK\r\n"},
		{AppendError(nil, "ERR no"), "-ERR no\r\n"},
		{AppendBulkError(nil, []byte("ERR a\r\nb")), "!8\r\nERR a\r\nb\r\n"},
		{AppendInt(nil, -42), ":-42\r\n"},
		{AppendInt(nil, 7), ":7\r\n"},
		{AppendNull(nil), "_\r\n"},
		{AppendBool(nil, true), "#t\r\n"},
		{AppendBool(nil, false), "#f\r\n"},
		{AppendBigNumber(nil, []byte("-99999999999999999999")), "(-99999999999999999999\r\n"},
		{AppendVerbatim(nil, "txt", []byte("hi")), "=6\r\ntxt:hi\r\n"},
		{AppendAggregateHeader(nil, Map, 2), "%2\r\n"},
		{AppendAggregateHeader(nil, Push, 10), ">10\r\n"},
		{AppendAggregateHeader(nil, Attribute, 1), "|1\r\n"},
		{AppendCommand(nil, "SET", "k", "v"), "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"},
		{AppendCommand(nil), "*0\r\n"},
		{AppendCommandBytes(nil, []byte("GET"), nil), "*2\r\n$3\r\nGET\r\n$0\r\n\r\n"},
		{AppendBulk([]byte("prefix"), []byte("x")), "prefix$1\r\nx\r\n"},
	}
	for _, tc := range cases {
		if string(tc.got) != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestAppendBulkInt: every integer, the 0–9 fast path and negatives
// included, is the bulk string of its decimal text.
func TestAppendBulkInt(t *testing.T) {
	ns := []int64{math.MinInt64, math.MinInt64 + 1, -1000, -10, -9, -1, 10, 99, 100, 12345, math.MaxInt64 - 1, math.MaxInt64}
	for i := int64(0); i <= 9; i++ {
		ns = append(ns, i)
	}
	for _, n := range ns {
		enc := AppendBulkInt([]byte("x"), n)
		want := "x" + string(AppendBulkString(nil, strconv.FormatInt(n, 10)))
		if string(enc) != want {
			t.Errorf("AppendBulkInt(%d) = %q, want %q", n, enc, want)
		}
		v, _, err := Parse(enc[1:], Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := v.AsInt(); err != nil || got != n {
			t.Errorf("AppendBulkInt(%d) decodes to %d, %v", n, got, err)
		}
	}
}

// TestCommandRoundTrip: the command encoders give arrays of bulks that
// decode to the arguments, binary ones included.
func TestCommandRoundTrip(t *testing.T) {
	sha := "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
	args := []string{"EVALSHA", sha, "2", "key1", "key2", "arg1", "a\r\nb\x00"}
	enc := AppendCommand(nil, args...)
	v, n, err := Parse(enc, Limits{})
	if err != nil || n != len(enc) || v.Type != Array || v.Len() != len(args) {
		t.Fatalf("Parse: %s, %d, %v", dump(v), n, err)
	}
	for i, a := range args {
		if e := v.Elems[i]; e.Type != BulkString || !e.Equal(a) {
			t.Errorf("arg %d = %s, want %q", i, dump(e), a)
		}
	}

	bargs := [][]byte{[]byte("SET"), []byte("\x00\xff"), {}, bytes.Repeat([]byte("\r\n"), 100)}
	enc = AppendCommandBytes(nil, bargs...)
	v, _, err = Parse(enc, Limits{})
	if err != nil || v.Len() != len(bargs) {
		t.Fatalf("Parse: %s, %v", dump(v), err)
	}
	for i, a := range bargs {
		if !bytes.Equal(v.Elems[i].Str, a) {
			t.Errorf("arg %d = %q, want %q", i, v.Elems[i].Str, a)
		}
	}

	// Built piece by piece, the same command encodes the same way.
	var b []byte
	b = AppendArrayHeader(b, 4)
	b = AppendBulkString(b, "EVALSHA")
	b = AppendBulkString(b, sha)
	b = AppendBulkInt(b, 1)
	b = AppendBulk(b, []byte("k"))
	if want := AppendCommand(nil, "EVALSHA", sha, "1", "k"); !bytes.Equal(b, want) {
		t.Fatalf("piecewise %q, want %q", b, want)
	}
}
