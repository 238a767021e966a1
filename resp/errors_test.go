package resp

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestServerErrorCode(t *testing.T) {
	cases := []struct {
		msg, code string
	}{
		{"ERR unknown command 'FOO'", CodeErr},
		{"NOSCRIPT No matching script. Please use EVAL.", CodeNoScript},
		{"MOVED 3999 127.0.0.1:6381", CodeMoved},
		{"ASK 3999 127.0.0.1:6381", CodeAsk},
		{"WRONGPASS invalid username-password pair", CodeWrongPass},
		{"NOAUTH Authentication required.", CodeNoAuth},
		{"NOPROTO unsupported protocol version", CodeNoProto},
		{"BUSY Redis is busy running a script.", CodeBusy},
		{"LOADING Redis is loading the dataset in memory", CodeLoading},
		{"READONLY You can't write against a read only replica.", CodeReadOnly},
		{"EMQKIND job 12 is not a delayed job", CodeEMQKind},
		{"ERR", "ERR"},
		{"", ""},
		{" leading space", ""},
	}
	for _, tc := range cases {
		e := &ServerError{Msg: tc.msg}
		if got := e.Code(); got != tc.code {
			t.Errorf("Code(%q) = %q, want %q", tc.msg, got, tc.code)
		}
		if !e.HasCode(tc.code) || e.HasCode(tc.code+"X") {
			t.Errorf("HasCode(%q) wrong for %q", tc.code, tc.msg)
		}
		if e.Error() != tc.msg {
			t.Errorf("Error() = %q, want %q", e.Error(), tc.msg)
		}
		wrapped := fmt.Errorf("emq: push: %w", fmt.Errorf("conn: %w", e))
		if !IsCode(wrapped, tc.code) || IsCode(wrapped, "OTHER") {
			t.Errorf("IsCode through %%w wrapping wrong for %q", tc.msg)
		}
		if !IsCode(errors.Join(io.EOF, e), tc.code) {
			t.Errorf("IsCode through errors.Join wrong for %q", tc.msg)
		}
	}
	if IsCode(nil, CodeErr) || IsCode(io.EOF, CodeErr) || IsCode(&ProtocolError{Msg: "ERR"}, CodeErr) {
		t.Error("IsCode true for a non-server error")
	}
}

// TestValueErrByteForByte: the server's text reaches the caller unchanged,
// from a simple error and from a bulk error, whatever bytes it holds.
func TestValueErrByteForByte(t *testing.T) {
	texts := []string{
		"ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' ",
		"EMQKIND job 12 \xff\x00 is gone",
		"WRONGTYPE Operation against a key holding the wrong kind of value",
		"",
		"  two  spaces  ",
	}
	for _, text := range texts {
		simpleWire := AppendError(nil, text)
		bulkWire := AppendBulkError(nil, []byte(text+"\r\nsecond line"))
		for wire, want := range map[string]string{string(simpleWire): text, string(bulkWire): text + "\r\nsecond line"} {
			v, _, err := Parse([]byte(wire), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if !v.IsError() {
				t.Fatalf("%q: not an error", wire)
			}
			e := v.Err()
			var se *ServerError
			if !errors.As(e, &se) || se.Msg != want || e.Error() != want {
				t.Errorf("%q: Err() = %q, want %q", wire, e, want)
			}
			if _, err := v.AsInt(); err == nil || err.Error() != want {
				t.Errorf("%q: AsInt err %v, want the server error", wire, err)
			}
		}
	}
	if (Value{Type: SimpleString, Str: []byte("ERR x")}).Err() != nil {
		t.Error("a simple string is not an error")
	}
}

// TestErrorKindsApart: a ProtocolError is never ErrIncomplete and
// ErrIncomplete is never a protocol error.
func TestErrorKindsApart(t *testing.T) {
	pe := &ProtocolError{Msg: "bad", Offset: 3}
	if !errors.Is(pe, ErrProtocol) || errors.Is(pe, ErrIncomplete) || errors.Is(ErrIncomplete, ErrProtocol) {
		t.Fatal("error kinds mixed up")
	}
	if !errors.Is(fmt.Errorf("conn: %w", pe), ErrProtocol) {
		t.Fatal("wrapped ProtocolError not ErrProtocol")
	}
	if got := pe.Error(); got != "resp: protocol error at frame offset 3: bad" {
		t.Fatalf("Error() = %q", got)
	}
	te := &TypeError{Want: "integer", Got: Array}
	if got := te.Error(); got != "resp: unexpected reply type: want integer, got array" {
		t.Fatalf("TypeError = %q", got)
	}
}

func TestTypeString(t *testing.T) {
	names := map[Type]string{
		SimpleString: "simple string", Error: "simple error", Integer: "integer",
		BulkString: "bulk string", Array: "array", Null: "null", Boolean: "boolean",
		Double: "double", BigNumber: "big number", BulkError: "bulk error",
		Verbatim: "verbatim string", Map: "map", Set: "set", Attribute: "attribute",
		Push: "push", Type('@'): `type("@")`, Type(0): `type("\x00")`,
	}
	for typ, want := range names {
		if got := typ.String(); got != want {
			t.Errorf("%q.String() = %q, want %q", byte(typ), got, want)
		}
	}
}

// TestValueAccessors covers the helpers callers read replies with.
func TestValueAccessors(t *testing.T) {
	m := mapOf(simple("first"), integer(1), bulk("second"), array(bulk("x")))
	if v, ok := m.Lookup("second"); !ok || v.Type != Array || v.Len() != 1 {
		t.Errorf("Lookup(second) = %s, %v", dump(v), ok)
	}
	if _, ok := m.Lookup("third"); ok {
		t.Error("Lookup(third) found")
	}
	if _, ok := array(simple("first"), integer(1)).Lookup("first"); ok {
		t.Error("Lookup on an array found")
	}
	if v, ok := attrOf(simple("ttl"), integer(3)).Lookup("ttl"); !ok || v.Int != 3 {
		t.Errorf("Lookup on an attribute = %s, %v", dump(v), ok)
	}
	if m.Len() != 2 || !m.MapKey(1).Equal("second") || m.MapValue(0).Int != 1 {
		t.Errorf("map accessors wrong on %s", dump(m))
	}

	vb := verbatim("txt:Some string")
	if vb.VerbatimFormat() != "txt" || string(vb.VerbatimText()) != "Some string" {
		t.Errorf("verbatim %q %q", vb.VerbatimFormat(), vb.VerbatimText())
	}
	if bulk("txt:x").VerbatimFormat() != "" || string(bulk("txt:x").VerbatimText()) != "txt:x" {
		t.Error("verbatim accessors on a bulk")
	}
	if short := verbatim("tx"); short.VerbatimFormat() != "" || string(short.VerbatimText()) != "tx" {
		t.Error("verbatim accessors on a short verbatim")
	}

	checks := []struct {
		name string
		ok   bool
	}{
		{"null IsNull", null().IsNull()},
		{"bulk not IsNull", !bulk("").IsNull()},
		{"simple error IsError", simpleErr("E").IsError()},
		{"bulk error IsError", bulkErr("E").IsError()},
		{"bulk not IsError", !bulk("E").IsError()},
		{"aggregates", array().IsAggregate() && set().IsAggregate() && push().IsAggregate() && mapOf().IsAggregate() && attrOf().IsAggregate()},
		{"scalars not aggregates", !bulk("").IsAggregate() && !null().IsAggregate()},
		{"Len string", bulk("abc").Len() == 3 && integer(5).Len() == 0},
		{"Bool", boolean(true).Bool() && !boolean(false).Bool() && integer(2).Bool() && !integer(0).Bool() && !bulk("1").Bool()},
		{"Float", double("1.5", 1.5).Float() == 1.5 && integer(3).Float() == 3 && bulk("2").Float() == 0},
		{"Text/Bytes", bulk("ab").Text() == "ab" && string(bulk("ab").Bytes()) == "ab"},
	}
	for _, c := range checks {
		if !c.ok {
			t.Error(c.name)
		}
	}

	for _, tc := range []struct {
		v    Value
		want int64
		ok   bool
	}{
		{integer(-5), -5, true}, {bulk("42"), 42, true}, {simple("-7"), -7, true},
		{bigNum("12"), 12, true}, {bulk("4x"), 0, false}, {array(), 0, false}, {null(), 0, false},
	} {
		n, err := tc.v.AsInt()
		if (err == nil) != tc.ok || n != tc.want {
			t.Errorf("AsInt(%s) = %d, %v", dump(tc.v), n, err)
		}
		var te *TypeError
		if !tc.ok && !errors.As(err, &te) {
			t.Errorf("AsInt(%s): %v, want a *TypeError", dump(tc.v), err)
		}
	}
}

func TestValueString(t *testing.T) {
	v := array(bulk("a"), integer(-2), null(), boolean(true), double("1.5", 1.5),
		mapOf(simple("k"), simpleErr("ERR x")), verbatim("txt:hi"), bigNum("9"), bulkErr("E b"))
	want := "[a -2 (nil) true 1.5 {k: (error) ERR x} hi 9 (error) E b]"
	if got := v.String(); got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	if !strings.Contains(mapOf(simple("a"), integer(1), simple("b"), integer(2)).String(), "a: 1, b: 2") {
		t.Fatal("map String")
	}
}
