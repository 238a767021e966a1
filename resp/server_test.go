package resp_test

import (
	"bytes"
	"errors"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
)

var srv *servertest.Server

func TestMain(m *testing.M) {
	os.Exit(servertest.Main(m, &srv, servertest.Options{Debug: true}))
}

// rawConn is a TCP connection to the test server with a resp.Reader over
// it that also records the raw bytes each reply arrived as.
type rawConn struct {
	t   *testing.T
	c   net.Conn
	raw bytes.Buffer
	r   *resp.Reader
}

func dial(t *testing.T, bufsize int) *rawConn {
	t.Helper()
	servertest.Need(t, srv)
	c, err := net.DialTimeout("tcp", srv.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	rc := &rawConn{t: t, c: c}
	rc.r = resp.NewReaderLimits(io.TeeReader(c, &rc.raw), resp.Limits{}, bufsize)
	return rc
}

// do sends one command and returns its reply and the bytes it came in.
func (rc *rawConn) do(args ...string) (resp.Value, string) {
	rc.t.Helper()
	rc.send(args...)
	return rc.next()
}

func (rc *rawConn) send(args ...string) {
	rc.t.Helper()
	if _, err := rc.c.Write(resp.AppendCommand(nil, args...)); err != nil {
		rc.t.Fatal(err)
	}
}

// next reads one reply; the raw bytes are exact when replies are read one
// round trip at a time.
func (rc *rawConn) next() (resp.Value, string) {
	rc.t.Helper()
	v, err := rc.r.Next()
	if err != nil {
		rc.t.Fatalf("Next: %v", err)
	}
	raw := rc.raw.String()
	rc.raw.Reset()
	return v, raw
}

// hello3 switches the connection to RESP3 and checks the HELLO map.
func (rc *rawConn) hello3() {
	rc.t.Helper()
	v, _ := rc.do("HELLO", "3")
	if v.Type != resp.Map {
		rc.t.Fatalf("HELLO 3: %s %s", v.Type, v)
	}
	if p, ok := v.Lookup("proto"); !ok || p.Type != resp.Integer || p.Int != 3 {
		rc.t.Fatalf("HELLO 3: proto %v", p)
	}
	if s, ok := v.Lookup("server"); !ok || (s.Text() != "redis" && s.Text() != "valkey") {
		rc.t.Fatalf("HELLO 3: server %v", s)
	}
}

// checkValue checks a string-like value's type and text.
func checkValue(t *testing.T, what string, got resp.Value, typ resp.Type, text string) {
	t.Helper()
	if got.Type != typ || got.Text() != text {
		t.Errorf("%s = %s %q, want %s %q", what, got.Type, got.Str, typ, text)
	}
}

// checkInts checks an aggregate of integers.
func checkInts(t *testing.T, what string, got resp.Value, typ resp.Type, ints ...int64) {
	t.Helper()
	if got.Type != typ || len(got.Elems) != len(ints) {
		t.Fatalf("%s = %s %s, want %s of %d", what, got.Type, got, typ, len(ints))
	}
	for i, n := range ints {
		if e := got.Elems[i]; e.Type != resp.Integer || e.Int != n {
			t.Errorf("%s[%d] = %s %s, want integer %d", what, i, e.Type, e, n)
		}
	}
}

// TestServerDebugProtocolRESP3 decodes every type DEBUG PROTOCOL sends
// over RESP3 (Redis 7.0 offers string, integer, double, bignum, null,
// array, set, map, attrib, push, verbatim, true and false).
func TestServerDebugProtocolRESP3(t *testing.T) {
	rc := dial(t, 0)
	rc.hello3()
	debug := func(typ string) (resp.Value, string) { return rc.do("DEBUG", "PROTOCOL", typ) }

	v, _ := debug("string")
	checkValue(t, "string", v, resp.BulkString, "Hello World")
	v, _ = debug("integer")
	if v.Type != resp.Integer || v.Int != 12345 {
		t.Errorf("integer = %s %s", v.Type, v)
	}
	v, raw := debug("double")
	if v.Type != resp.Double || v.Float() != 3.141 || v.Text() != "3.141" || raw != ",3.141\r\n" {
		t.Errorf("double = %s %s (%q)", v.Type, v, raw)
	}
	v, _ = debug("bignum")
	checkValue(t, "bignum", v, resp.BigNumber, "1234567999999999999999999999999999999")
	v, raw = debug("null")
	if !v.IsNull() || raw != "_\r\n" {
		t.Errorf("null = %s (%q)", v.Type, raw)
	}
	v, _ = debug("array")
	checkInts(t, "array", v, resp.Array, 0, 1, 2)
	v, _ = debug("set")
	checkInts(t, "set", v, resp.Set, 0, 1, 2)

	v, _ = debug("map") // {0: false, 1: true, 2: false}
	if v.Type != resp.Map || v.Len() != 3 {
		t.Fatalf("map = %s %s", v.Type, v)
	}
	for i := range 3 {
		k, val := v.MapKey(i), v.MapValue(i)
		if k.Type != resp.Integer || k.Int != int64(i) || val.Type != resp.Boolean || val.Bool() != (i == 1) {
			t.Errorf("map pair %d = %s: %s", i, k, val)
		}
	}

	// attrib: |1 key-popularity → [key:123, 90], then the bulk reply.
	v, _ = debug("attrib")
	checkValue(t, "attrib reply", v, resp.BulkString, "Some real reply following the attribute")
	if v.Attr == nil || v.Attr.Type != resp.Attribute || v.Attr.Len() != 1 {
		t.Fatalf("attrib: Attr %v", v.Attr)
	}
	pop, ok := v.Attr.Lookup("key-popularity")
	if !ok || pop.Type != resp.Array || pop.Len() != 2 ||
		pop.Elems[0].Type != resp.BulkString || pop.Elems[0].Text() != "key:123" ||
		pop.Elems[1].Type != resp.Integer || pop.Elems[1].Int != 90 {
		t.Errorf("attrib: key-popularity = %s", pop)
	}

	// push: a push frame and the command's own reply, two frames in either
	// order (Redis 7.0 sends the push first, Valkey 8 the reply first).
	// Each must come exactly once: the next command gets its own reply.
	var pushes, replies int
	rc.send("DEBUG", "PROTOCOL", "push")
	for range 2 {
		v, _ := rc.next()
		switch v.Type {
		case resp.Push:
			pushes++
			if v.Len() != 2 || v.Elems[0].Text() != "server-cpu-usage" ||
				v.Elems[1].Type != resp.Integer || v.Elems[1].Int != 42 {
				t.Errorf("push = %s", v)
			}
		default:
			replies++
			checkValue(t, "push's reply", v, resp.BulkString, "Some real reply following the push reply")
		}
	}
	if pushes != 1 || replies != 1 {
		t.Errorf("DEBUG PROTOCOL push: %d push frames and %d replies, want one of each", pushes, replies)
	}

	v, _ = debug("verbatim")
	if v.Type != resp.Verbatim || v.VerbatimFormat() != "txt" || string(v.VerbatimText()) != "This is a verbatim\nstring" {
		t.Errorf("verbatim = %s %q", v.Type, v.Str)
	}
	v, raw = debug("true")
	if v.Type != resp.Boolean || !v.Bool() || raw != "#t\r\n" {
		t.Errorf("true = %s %s", v.Type, v)
	}
	v, _ = debug("false")
	if v.Type != resp.Boolean || v.Bool() {
		t.Errorf("false = %s %s", v.Type, v)
	}
	if rc.r.Buffered() != 0 {
		t.Errorf("%d bytes left unread", rc.r.Buffered())
	}
}

// TestServerDebugProtocolRESP2: the same types as a RESP2 connection gets
// them: nulls as $-1, booleans as integers, doubles and big numbers as
// bulks, attributes dropped.
func TestServerDebugProtocolRESP2(t *testing.T) {
	rc := dial(t, 0)
	for _, tc := range []struct {
		typ, raw string
		want     resp.Type
		text     string
	}{
		{"null", "$-1\r\n", resp.Null, ""},
		{"true", ":1\r\n", resp.Integer, ""},
		{"false", ":0\r\n", resp.Integer, ""},
		{"double", "$5\r\n3.141\r\n", resp.BulkString, "3.141"},
		{"bignum", "$37\r\n1234567999999999999999999999999999999\r\n", resp.BulkString, "1234567999999999999999999999999999999"},
		{"attrib", "$39\r\nSome real reply following the attribute\r\n", resp.BulkString, "Some real reply following the attribute"},
		{"verbatim", "$25\r\nThis is a verbatim\nstring\r\n", resp.BulkString, "This is a verbatim\nstring"},
		{"set", "*3\r\n:0\r\n:1\r\n:2\r\n", resp.Array, ""},
	} {
		v, raw := rc.do("DEBUG", "PROTOCOL", tc.typ)
		if raw != tc.raw || v.Type != tc.want || v.Text() != tc.text || v.Attr != nil {
			t.Errorf("RESP2 %s = %s %s (%q), want %s %q (%q)", tc.typ, v.Type, v, raw, tc.want, tc.text, tc.raw)
		}
	}
}

// TestServerRESP2Shapes: null bulk, null array, integers and error text
// byte for byte from ordinary commands.
func TestServerRESP2Shapes(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	rc := dial(t, 0)

	if v, raw := rc.do("GET", "nokey"); !v.IsNull() || raw != "$-1\r\n" {
		t.Errorf("GET missing = %s (%q), want null from $-1", v.Type, raw)
	}
	if v, raw := rc.do("BLPOP", "nokey", "0.01"); !v.IsNull() || raw != "*-1\r\n" {
		t.Errorf("BLPOP timeout = %s (%q), want null from *-1", v.Type, raw)
	}
	if v, raw := rc.do("INCR", "counter"); v.Type != resp.Integer || v.Int != 1 || raw != ":1\r\n" {
		t.Errorf("INCR = %s %s (%q)", v.Type, v, raw)
	}
	if v, _ := rc.do("INCRBY", "counter", strconv.FormatInt(math.MaxInt64-1, 10)); v.Int != math.MaxInt64 {
		t.Errorf("INCRBY to max = %s", v)
	}
	if v, raw := rc.do("SET", "k", "v"); v.Type != resp.SimpleString || !v.Equal("OK") || raw != "+OK\r\n" {
		t.Errorf("SET = %s %s (%q)", v.Type, v, raw)
	}
	if v, _ := rc.do("MGET", "k", "nokey"); v.Type != resp.Array || v.Len() != 2 || !v.Elems[0].Equal("v") || !v.Elems[1].IsNull() {
		t.Errorf("MGET = %s", v)
	}

	// Error text reaches the caller byte for byte.
	v, raw := rc.do("NOSUCH", "a", "b")
	err := v.Err()
	if err == nil || "-"+err.Error()+"\r\n" != raw {
		t.Fatalf("unknown command: Err() %q, wire %q", err, raw)
	}
	if !strings.HasPrefix(err.Error(), "ERR unknown command 'NOSUCH'") || !resp.IsCode(err, resp.CodeErr) {
		t.Errorf("unknown command error %q", err)
	}
	v, raw = rc.do("LPUSH", "k", "x")
	if err := v.Err(); !resp.IsCode(err, "WRONGTYPE") || "-"+err.Error()+"\r\n" != raw {
		t.Errorf("WRONGTYPE: %q (%q)", err, raw)
	}
	v, _ = rc.do("EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0")
	if err := v.Err(); !resp.IsCode(err, resp.CodeNoScript) {
		t.Errorf("EVALSHA unknown: %v", err)
	}
	var se *resp.ServerError
	if !errors.As(v.Err(), &se) || se.Code() != "NOSCRIPT" {
		t.Errorf("EVALSHA: %#v", se)
	}
}

// TestServerBinaryAndLarge: binary values round-trip through the server,
// read through a small buffer, sizes swept around its edge.
func TestServerBinaryAndLarge(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	const bufsize = 64
	rc := dial(t, bufsize)
	for _, n := range []int{0, 1, bufsize - 3, bufsize, bufsize + 3, 4*bufsize - 1, 1 << 20, 3<<20 + 3} {
		val := make([]byte, n)
		for i := range val {
			val[i] = "\r\n\x00\xffab"[i%6]
		}
		key := "bin:" + strconv.Itoa(n)
		if _, err := rc.c.Write(resp.AppendCommandBytes(nil, []byte("SET"), []byte(key), val)); err != nil {
			t.Fatal(err)
		}
		if v, _ := rc.next(); !v.Equal("OK") {
			t.Fatalf("SET %d bytes: %s", n, v)
		}
		v, _ := rc.do("GET", key)
		if v.Type != resp.BulkString || !bytes.Equal(v.Str, val) {
			t.Fatalf("GET %d bytes: %s of %d bytes", n, v.Type, v.Len())
		}
	}
}

// TestServerPipelined: a thousand pipelined commands, replies read through
// a small buffer as TCP delivers them.
func TestServerPipelined(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	rc := dial(t, 32)
	var buf []byte
	for i := range 1000 {
		buf = resp.AppendCommand(buf, "RPUSH", "list", strconv.Itoa(i))
	}
	buf = resp.AppendCommand(buf, "LRANGE", "list", "0", "-1")
	if _, err := rc.c.Write(buf); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		v, err := rc.r.Next()
		if err != nil || v.Type != resp.Integer || v.Int != int64(i+1) {
			t.Fatalf("reply %d: %s, %v", i, v, err)
		}
	}
	v, err := rc.r.Next()
	if err != nil || v.Len() != 1000 {
		t.Fatalf("LRANGE: %d elements, %v", v.Len(), err)
	}
	for i, e := range v.Elems {
		if !e.Equal(strconv.Itoa(i)) {
			t.Fatalf("element %d = %s", i, e)
		}
	}
}
