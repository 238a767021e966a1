package resp

import (
	"errors"
	"strings"
	"testing"
)

// invalidWire holds malformed frames; each must give a *ProtocolError from
// Parse and from a Reader, however much more input could follow.
var invalidWire = []struct {
	name string
	wire string
	off  int // Offset of the ProtocolError, or -1 when not checked
}{
	// Framing.
	{"LF without CR simple", "+OK\n", 3},
	{"LF without CR int", ":1\n", 2},
	{"LF without CR header", "$3\nfoo\r\n", 2},
	{"lone LF", "\n", 0},
	{"empty line", "\r\n", 0},
	{"unknown type @", "@foo\r\n", 0},
	{"unknown type NUL", "\x00\r\n", 0},
	{"unknown type x", "x\r\n", 0},
	{"HTTP response", "HTTP/1.1 400 Bad Request\r\n", 0},
	{"chunk outside stream", ";4\r\nHell\r\n", 0},
	{"stream end outside stream", ".\r\n", 0},
	{"unknown type nested", "*2\r\n:1\r\n@x\r\n", 8},

	// Streamed RESP3 types are refused.
	{"streamed string", "$?\r\n;4\r\nHell\r\n;0\r\n", 0},
	{"streamed array", "*?\r\n:1\r\n.\r\n", 0},
	{"streamed map", "%?\r\n+a\r\n:1\r\n.\r\n", 0},
	{"streamed set", "~?\r\n.\r\n", 0},
	{"streamed push", ">?\r\n.\r\n", 0},
	{"streamed attribute", "|?\r\n.\r\n", 0},
	{"streamed bulk error", "!?\r\n", 0},
	{"streamed verbatim", "=?\r\n", 0},
	{"streamed nested", "*1\r\n$?\r\n;1\r\na\r\n;0\r\n", 4},

	// Integers.
	{"int empty", ":\r\n", 0},
	{"int plus", ":+1\r\n", 0},
	{"int leading space", ": 1\r\n", 0},
	{"int trailing space", ":1 \r\n", 0},
	{"int minus only", ":-\r\n", 0},
	{"int double minus", ":--1\r\n", 0},
	{"int fraction", ":1.5\r\n", 0},
	{"int letters", ":abc\r\n", 0},
	{"int overflow max+1", ":9223372036854775808\r\n", 0},
	{"int overflow min-1", ":-9223372036854775809\r\n", 0},
	{"int 20 digits", ":12345678901234567890\r\n", 0},
	{"int huge", ":99999999999999999999999\r\n", 0},
	{"int malformed inside incomplete array", "*3\r\n:x\r\n", 4},

	// Bulk strings.
	{"bulk length mismatch long", "$3\r\nabcd\r\n", 7},
	{"bulk length mismatch short", "$3\r\nab\r\n+OK\r\n", 7},
	{"bulk bad terminator", "$3\r\nabcXY", 7},
	{"bulk LF CR terminator", "$3\r\nabc\n\r", 7},
	{"bulk CR CR terminator", "$3\r\nabc\r\r", 7},
	{"bulk no terminator", "$0\r\nxx", 4},
	{"bulk negative", "$-2\r\n", 0},
	{"bulk -0", "$-0\r\n", 0},
	{"bulk -01", "$-01\r\n", 0},
	{"bulk -0 with a body", "$-0\r\n\r\n", 0},
	{"bulk -00 with a body", "$-00\r\n\r\n", 0},
	{"bulk 01 with a body", "$01\r\nx\r\n", 0},
	{"bulk +1 with a body", "$+1\r\nx\r\n", 0},
	{"bulk leading zero", "$01\r\na\r\n", 0},
	{"bulk 00", "$00\r\n\r\n", 0},
	{"bulk empty length", "$\r\n", 0},
	{"bulk plus length", "$+1\r\na\r\n", 0},
	{"bulk space length", "$ 1\r\na\r\n", 0},
	{"bulk trailing garbage", "$1x\r\na\r\n", 0},
	{"bulk 20-digit length", "$12345678901234567890\r\n", 0},
	{"bulk min int length", "$-9223372036854775808\r\n", 0},
	// Past the hard bounds: no server sends these (below them, a length
	// over the Limits is skipped, see limits_test.go).
	{"bulk over the hard bound", "$1099511627777\r\n", 0},
	{"bulk of issue 15", "$9999999999999\r\n", 0},
	{"aggregate over the hard bound", "*4294967297\r\n", 0},
	{"map over the hard bound", "%4294967297\r\n", 0},
	{"nested bulk over the hard bound", "*2\r\n$1099511627777\r\n", 4},

	// Aggregates.
	{"array negative", "*-2\r\n", 0},
	{"array -0", "*-0\r\n", 0},
	{"array leading zero", "*01\r\n:1\r\n", 0},
	{"array letters", "*x\r\n", 0},
	{"array 2^62", "*4611686018427387904\r\n", 0},
	{"array 20-digit", "*12345678901234567890\r\n", 0},
	{"array bad element", "*2\r\n:1\r\n:x\r\n", 8},
	{"map null", "%-1\r\n", 0},
	{"map 2^61 pairs", "%2305843009213693952\r\n", 0},
	{"set null", "~-1\r\n", 0},
	{"push null", ">-1\r\n", 0},
	{"attribute null", "|-1\r\n", 0},

	// Null, booleans.
	{"null with content", "_x\r\n", 0},
	{"boolean upper", "#T\r\n", 0},
	{"boolean empty", "#\r\n", 0},
	{"boolean long", "#tt\r\n", 0},
	{"boolean digit", "#1\r\n", 0},

	// Doubles.
	{"double empty", ",\r\n", 0},
	{"double garbage", ",abc\r\n", 0},
	{"double hex", ",0x1p3\r\n", 0},
	{"double hex int", ",0x10\r\n", 0},
	{"double Inf", ",Inf\r\n", 0},
	{"double infinity", ",infinity\r\n", 0},
	{"double NaN", ",NaN\r\n", 0},
	{"double underscore", ",1_0\r\n", 0},
	{"double two dots", ",1.5.5\r\n", 0},
	{"double space", ", 1\r\n", 0},
	{"double out of range", ",1e400\r\n", 0},
	{"double long", "," + strings.Repeat("1", 513) + "\r\n", 0},

	// Big numbers.
	{"bignum empty", "(\r\n", 0},
	{"bignum minus only", "(-\r\n", 0},
	{"bignum letters", "(12a\r\n", 0},
	{"bignum fraction", "(1.5\r\n", 0},

	// Bulk errors, verbatim strings.
	{"bulk error null", "!-1\r\n", 0},
	{"bulk error mismatch", "!3\r\nabcd\r\n", 7},
	{"verbatim too short", "=3\r\ntxt\r\n", 0},
	{"verbatim empty", "=0\r\n\r\n", 0},
	{"verbatim no colon", "=5\r\ntxtxa\r\n", 0},
	{"verbatim null", "=-1\r\n", 0},
}

func TestWireInvalid(t *testing.T) {
	for _, tc := range invalidWire {
		t.Run(tc.name, func(t *testing.T) {
			_, n, err := Parse([]byte(tc.wire), Limits{})
			checkProtocolError(t, "Parse", tc.wire, err, tc.off)
			if n != 0 {
				t.Errorf("Parse consumed %d bytes of a malformed frame", n)
			}
			// A Reader reports it too, and keeps reporting it.
			r := NewReader(strings.NewReader(tc.wire + "+OK\r\n"))
			_, err = r.Next()
			checkProtocolError(t, "Reader.Next", tc.wire, err, tc.off)
			if _, err2 := r.Next(); err2 != err || r.Err() != err {
				t.Errorf("error not sticky: then %v, Err() %v", err2, r.Err())
			}
		})
	}
}

func checkProtocolError(t *testing.T, who, wire string, err error, off int) {
	t.Helper()
	var pe *ProtocolError
	if !errors.As(err, &pe) || !errors.Is(err, ErrProtocol) {
		t.Fatalf("%s(%q): err %v, want a *ProtocolError", who, wire, err)
	}
	if errors.Is(err, ErrIncomplete) {
		t.Fatalf("%s(%q): %v is also ErrIncomplete", who, wire, err)
	}
	if off >= 0 && pe.Offset != off {
		t.Errorf("%s(%q): offset %d, want %d (%v)", who, wire, pe.Offset, off, err)
	}
	if !strings.HasPrefix(pe.Error(), "resp: protocol error at frame offset ") || pe.Msg == "" {
		t.Errorf("%s(%q): message %q", who, wire, pe.Error())
	}
}

// TestWireInvalidAfterValid: the error offset is relative to the frame, and
// the frames before it still decode.
func TestWireInvalidAfterValid(t *testing.T) {
	r := NewReader(strings.NewReader("+OK\r\n:1\r\n*2\r\n:1\r\n@\r\n+never\r\n"))
	for _, want := range []Value{simple("OK"), integer(1)} {
		v, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		checkDecoded(t, "", v, want)
	}
	_, err := r.Next()
	checkProtocolError(t, "Next", "*2\\r\\n:1\\r\\n@\\r\\n", err, 8)
}

func TestStreamedErrorMessage(t *testing.T) {
	_, _, err := Parse([]byte("*?\r\n"), Limits{})
	if err == nil || !strings.Contains(err.Error(), "streamed") {
		t.Fatalf("err %v, want it to name streamed types", err)
	}
}
