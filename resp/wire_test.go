package resp

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

// wireCase pairs raw bytes with the value they decode to. reenc is what
// AppendValue writes back when it differs from wire (RESP2 nulls become
// the RESP3 null, "-0" becomes "0", …).
type wireCase struct {
	name  string
	wire  string
	want  Value
	reenc string
}

// validWire holds at least one valid frame for every RESP2 and RESP3 type.
var validWire = []wireCase{
	// Simple strings.
	{name: "simple OK", wire: "+OK\r\n", want: simple("OK")},
	{name: "simple empty", wire: "+\r\n", want: simple("")},
	{name: "simple spaces", wire: "+hello world \r\n", want: simple("hello world ")},
	{name: "simple utf8", wire: "+h\xc3\xa9\r\n", want: simple("h\xc3\xa9")},

	// Simple errors.
	{name: "error ERR", wire: "-ERR unknown command\r\n", want: simpleErr("ERR unknown command")},
	{name: "error EMQKIND", wire: "-EMQKIND job gone\r\n", want: simpleErr("EMQKIND job gone")},
	{name: "error empty", wire: "-\r\n", want: simpleErr("")},

	// Integers.
	{name: "int 0", wire: ":0\r\n", want: integer(0)},
	{name: "int 1", wire: ":1\r\n", want: integer(1)},
	{name: "int -1", wire: ":-1\r\n", want: integer(-1)},
	{name: "int 1000", wire: ":1000\r\n", want: integer(1000)},
	{name: "int max", wire: ":9223372036854775807\r\n", want: integer(math.MaxInt64)},
	{name: "int min", wire: ":-9223372036854775808\r\n", want: integer(math.MinInt64)},
	{name: "int -0", wire: ":-0\r\n", want: integer(0), reenc: ":0\r\n"},
	{name: "int leading zeros", wire: ":007\r\n", want: integer(7), reenc: ":7\r\n"},

	// Bulk strings.
	{name: "bulk", wire: "$5\r\nhello\r\n", want: bulk("hello")},
	{name: "bulk empty", wire: "$0\r\n\r\n", want: bulk("")},
	{name: "bulk CRLF inside", wire: "$4\r\na\r\nb\r\n", want: bulk("a\r\nb")},
	{name: "bulk only CRLF", wire: "$2\r\n\r\n\r\n", want: bulk("\r\n")},
	{name: "bulk binary", wire: "$6\r\n\x00\xff\r\x01\n\x7f\r\n", want: bulk("\x00\xff\r\x01\n\x7f")},
	{name: "bulk 10", wire: "$10\r\n0123456789\r\n", want: bulk("0123456789")},
	{name: "bulk null RESP2", wire: "$-1\r\n", want: null(), reenc: "_\r\n"},

	// Arrays.
	{name: "array", wire: "*2\r\n$3\r\nfoo\r\n:1\r\n", want: array(bulk("foo"), integer(1))},
	{name: "array empty", wire: "*0\r\n", want: array()},
	{name: "array null RESP2", wire: "*-1\r\n", want: null(), reenc: "_\r\n"},
	{name: "array nested", wire: "*2\r\n*1\r\n+a\r\n*0\r\n", want: array(array(simple("a")), array())},
	{
		name: "array deep", wire: "*1\r\n*1\r\n*1\r\n*2\r\n:1\r\n:2\r\n",
		want: array(array(array(array(integer(1), integer(2))))),
	},
	{
		name: "array with nulls", wire: "*3\r\n:1\r\n*-1\r\n$-1\r\n",
		want: array(integer(1), null(), null()), reenc: "*3\r\n:1\r\n_\r\n_\r\n",
	},
	{
		name: "array mixed", wire: "*4\r\n+a\r\n-ERR b\r\n#t\r\n,2.5\r\n",
		want: array(simple("a"), simpleErr("ERR b"), boolean(true), double("2.5", 2.5)),
	},

	// Null.
	{name: "null", wire: "_\r\n", want: null()},

	// Booleans.
	{name: "true", wire: "#t\r\n", want: boolean(true)},
	{name: "false", wire: "#f\r\n", want: boolean(false)},

	// Doubles.
	{name: "double 1.5", wire: ",1.5\r\n", want: double("1.5", 1.5)},
	{name: "double 0", wire: ",0\r\n", want: double("0", 0)},
	{name: "double -0", wire: ",-0\r\n", want: double("-0", math.Copysign(0, -1))},
	{name: "double 1e10", wire: ",1e10\r\n", want: double("1e10", 1e10)},
	{name: "double -1.25E-3", wire: ",-1.25E-3\r\n", want: double("-1.25E-3", -1.25e-3)},
	{name: "double 3.141", wire: ",3.141\r\n", want: double("3.141", 3.141)},
	{name: "double int form", wire: ",10\r\n", want: double("10", 10)},
	{name: "double inf", wire: ",inf\r\n", want: double("inf", math.Inf(1))},
	{name: "double +inf", wire: ",+inf\r\n", want: double("+inf", math.Inf(1))},
	{name: "double -inf", wire: ",-inf\r\n", want: double("-inf", math.Inf(-1))},
	{name: "double nan", wire: ",nan\r\n", want: double("nan", math.NaN())},
	{name: "double -nan", wire: ",-nan\r\n", want: double("-nan", math.NaN())},

	// Big numbers.
	{name: "bignum", wire: "(3492890328409238509324850943850943825024385\r\n", want: bigNum("3492890328409238509324850943850943825024385")},
	{name: "bignum negative", wire: "(-1\r\n", want: bigNum("-1")},
	{name: "bignum zero", wire: "(0\r\n", want: bigNum("0")},

	// Bulk errors.
	{name: "bulk error", wire: "!21\r\nSYNTAX invalid syntax\r\n", want: bulkErr("SYNTAX invalid syntax")},
	{name: "bulk error CRLF", wire: "!8\r\nERR a\r\nb\r\n", want: bulkErr("ERR a\r\nb")},
	{name: "bulk error empty", wire: "!0\r\n\r\n", want: bulkErr("")},

	// Verbatim strings.
	{name: "verbatim txt", wire: "=15\r\ntxt:Some string\r\n", want: verbatim("txt:Some string")},
	{name: "verbatim mkd empty", wire: "=4\r\nmkd:\r\n", want: verbatim("mkd:")},
	{name: "verbatim newline", wire: "=29\r\ntxt:This is a verbatim\nstring\r\n", want: verbatim("txt:This is a verbatim\nstring")},

	// Maps.
	{
		name: "map", wire: "%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n",
		want: mapOf(simple("first"), integer(1), simple("second"), integer(2)),
	},
	{name: "map empty", wire: "%0\r\n", want: mapOf()},
	{
		name: "map nested", wire: "%1\r\n$1\r\nk\r\n%1\r\n:1\r\n*1\r\n#f\r\n",
		want: mapOf(bulk("k"), mapOf(integer(1), array(boolean(false)))),
	},

	// Sets.
	{name: "set", wire: "~2\r\n+a\r\n+b\r\n", want: set(simple("a"), simple("b"))},
	{name: "set empty", wire: "~0\r\n", want: set()},

	// Pushes.
	{name: "push", wire: ">3\r\n+message\r\n+chan\r\n$2\r\nhi\r\n", want: push(simple("message"), simple("chan"), bulk("hi"))},
	{name: "push empty", wire: ">0\r\n", want: push()},

	// Attributes: attached to the value that follows them.
	{
		name: "attribute top level",
		wire: "|1\r\n+key-popularity\r\n*2\r\n$1\r\na\r\n,0.1923\r\n*2\r\n:2039123\r\n:9543892\r\n",
		want: withAttr(array(integer(2039123), integer(9543892)),
			attrOf(simple("key-popularity"), array(bulk("a"), double("0.1923", 0.1923)))),
	},
	{
		name: "attribute nested",
		wire: "*2\r\n|1\r\n+ttl\r\n:3600\r\n+a\r\n+b\r\n",
		want: array(withAttr(simple("a"), attrOf(simple("ttl"), integer(3600))), simple("b")),
	},
	{name: "attribute empty", wire: "|0\r\n+v\r\n", want: withAttr(simple("v"), attrOf())},
	{
		name: "attribute on null", wire: "|1\r\n+a\r\n:1\r\n_\r\n",
		want: withAttr(null(), attrOf(simple("a"), integer(1))),
	},
	{
		name: "attributes chained",
		wire: "|1\r\n+a\r\n:1\r\n|1\r\n+b\r\n:2\r\n+v\r\n",
		want: withAttr(simple("v"), &Value{Type: Attribute, Elems: []Value{simple("b"), integer(2)},
			Attr: attrOf(simple("a"), integer(1))}),
	},
	{
		name: "attribute inside attribute",
		wire: "|1\r\n+k\r\n|1\r\n+x\r\n:1\r\n:2\r\n+v\r\n",
		want: withAttr(simple("v"), attrOf(simple("k"), withAttr(integer(2), attrOf(simple("x"), integer(1))))),
	},
	{
		name: "attribute in map value",
		wire: "%1\r\n+k\r\n|1\r\n+x\r\n:1\r\n$1\r\nv\r\n",
		want: mapOf(simple("k"), withAttr(bulk("v"), attrOf(simple("x"), integer(1)))),
	},
}

// checkDecoded fails unless got equals want.
func checkDecoded(t *testing.T, wire string, got, want Value) {
	t.Helper()
	if !equalValues(got, want) {
		t.Fatalf("decode %q:\n got  %s\n want %s", wire, dump(got), dump(want))
	}
}

func TestWireValid(t *testing.T) {
	for _, tc := range validWire {
		t.Run(tc.name, func(t *testing.T) {
			v, n, err := Parse([]byte(tc.wire), Limits{})
			if err != nil || n != len(tc.wire) {
				t.Fatalf("Parse(%q) = n %d, err %v; want n %d", tc.wire, n, err, len(tc.wire))
			}
			checkDecoded(t, tc.wire, v, tc.want)

			r := NewReader(strings.NewReader(tc.wire))
			v, err = r.Next()
			if err != nil {
				t.Fatalf("Reader.Next(%q): %v", tc.wire, err)
			}
			checkDecoded(t, tc.wire, v, tc.want)
			if _, err := r.Next(); err != io.EOF {
				t.Fatalf("Next after the frame: %v, want io.EOF", err)
			}

			want := tc.reenc
			if want == "" {
				want = tc.wire
			}
			if got := AppendValue(nil, v); string(got) != want {
				t.Fatalf("AppendValue = %q, want %q", got, want)
			}
		})
	}
}

// TestWirePrefixesIncomplete: every strict prefix of every valid frame is
// ErrIncomplete, never a protocol error and never a panic; and so is every
// valid frame followed by a strict prefix of another, for the second Parse.
func TestWirePrefixesIncomplete(t *testing.T) {
	for _, tc := range validWire {
		for i := range len(tc.wire) {
			_, n, err := Parse([]byte(tc.wire[:i]), Limits{})
			if err != ErrIncomplete || n != 0 {
				t.Errorf("%s: Parse(%q) = n %d, err %v; want ErrIncomplete", tc.name, tc.wire[:i], n, err)
			}
			if errors.Is(err, ErrProtocol) {
				t.Errorf("%s: prefix %q reported as a protocol error", tc.name, tc.wire[:i])
			}
		}
	}
}

// TestWireConcatenated decodes every valid frame back to back from one
// stream, as a pipelined connection delivers them, both with Parse and
// with a Reader.
func TestWireConcatenated(t *testing.T) {
	var all []byte
	for _, tc := range validWire {
		all = append(all, tc.wire...)
	}
	b := all
	for _, tc := range validWire {
		v, n, err := Parse(b, Limits{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		checkDecoded(t, tc.wire, v, tc.want)
		b = b[n:]
	}
	if len(b) != 0 {
		t.Fatalf("%d bytes left over", len(b))
	}
	r := NewReader(bytes.NewReader(all))
	for _, tc := range validWire {
		v, err := r.Next()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		checkDecoded(t, tc.wire, v, tc.want)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("end: %v, want io.EOF", err)
	}
}

// TestParseViewsInput: Parse's strings view the input rather than copy it.
func TestParseViewsInput(t *testing.T) {
	b := []byte("*2\r\n$3\r\nfoo\r\n+bar\r\n")
	v, _, err := Parse(b, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	b[8] = 'F'
	b[14] = 'B'
	if v.Elems[0].Text() != "Foo" || v.Elems[1].Text() != "Bar" {
		t.Fatalf("got %s, want views of the input", dump(v))
	}
	if cap(v.Elems[0].Str) != 3 {
		t.Fatalf("bulk view cap %d, want 3 so appends cannot clobber the frame", cap(v.Elems[0].Str))
	}
}
