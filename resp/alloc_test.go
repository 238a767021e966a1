package resp

import (
	"bytes"
	"testing"
)

// Allocation budgets: in steady state a Reader over a stream of replies
// that fit its buffer allocates nothing per reply, and the encoders
// allocate nothing into a buffer with room.

// testSHA is a script digest as EVALSHA takes it.
const testSHA = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"

// bulks64 is an array of n 64-byte bulks.
func bulks64(n int) []byte {
	b := AppendArrayHeader(nil, n)
	for range n {
		b = AppendBulk(b, bytes.Repeat([]byte("v"), 64))
	}
	return b
}

// map10 is a RESP3 map of 10 pairs, as HELLO or XINFO send.
func map10() []byte {
	b := AppendAggregateHeader(nil, Map, 10)
	for i := range 10 {
		b = AppendBulkString(b, "field"+string(rune('0'+i)))
		if i%2 == 0 {
			b = AppendInt(b, int64(i))
		} else {
			b = AppendBulk(b, bytes.Repeat([]byte("m"), 16))
		}
	}
	return b
}

var decodeBudgets = []struct {
	name  string
	frame []byte
}{
	{"+OK", []byte("+OK\r\n")},
	{"integer", []byte(":1234567\r\n")},
	{"64-byte bulk", AppendBulk(nil, bytes.Repeat([]byte("v"), 64))},
	{"100 bulks", bulks64(100)},
	{"RESP3 map", map10()},
	{"attribute", []byte("|1\r\n+ttl\r\n:10\r\n*2\r\n:1\r\n_\r\n")},
	{"null", []byte("$-1\r\n")},
	{"double", []byte(",3.141\r\n")},
}

func TestAllocsDecode(t *testing.T) {
	for _, tc := range decodeBudgets {
		r := NewReader(&replayReader{data: tc.frame})
		var err error
		n := testing.AllocsPerRun(1000, func() {
			_, err = r.Next()
		})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if n != 0 {
			t.Errorf("decoding %s: %v allocs per reply, want 0", tc.name, n)
		}
	}
}

func TestAllocsEncode(t *testing.T) {
	buf := make([]byte, 0, 1024)
	val := bytes.Repeat([]byte("v"), 64)
	budgets := []struct {
		name string
		fn   func()
	}{
		{"EVALSHA AppendCommand", func() {
			buf = AppendCommand(buf[:0], "EVALSHA", testSHA, "2", "key1", "key2", "arg1", "arg2")
		}},
		{"EVALSHA piecewise", func() {
			buf = AppendArrayHeader(buf[:0], 7)
			buf = AppendBulkString(buf, "EVALSHA")
			buf = AppendBulkString(buf, testSHA)
			buf = AppendBulkInt(buf, 2)
			buf = AppendBulkString(buf, "key1")
			buf = AppendBulkString(buf, "key2")
			buf = AppendBulkString(buf, "arg1")
			buf = AppendBulkString(buf, "arg2")
		}},
		{"SET bytes", func() { buf = AppendCommandBytes(buf[:0], []byte("SET"), []byte("key"), val) }},
		{"AppendBulkInt negative", func() { buf = AppendBulkInt(buf[:0], -1234567890123) }},
		{"AppendBulkInt small", func() { buf = AppendBulkInt(buf[:0], 7) }},
		{"AppendDouble", func() { buf = AppendDouble(buf[:0], 3.141) }},
		{"AppendValue map", func() {
			buf = AppendValue(buf[:0], Value{Type: Map, Elems: []Value{{Type: SimpleString, Str: val}, {Type: Integer, Int: 1}}})
		}},
	}
	for _, b := range budgets {
		if n := testing.AllocsPerRun(1000, b.fn); n != 0 {
			t.Errorf("%s: %v allocs, want 0", b.name, n)
		}
	}
}

func TestAllocsArenaRetain(t *testing.T) {
	v, _, err := Parse(bulks64(100), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var a Arena
	a.Retain(v) // warm-up
	if n := testing.AllocsPerRun(1000, func() {
		a.Reset()
		a.Retain(v)
	}); n != 0 {
		t.Errorf("Arena.Retain of 100 elements: %v allocs, want 0", n)
	}
}

func TestAllocsAccessors(t *testing.T) {
	v, _, _ := Parse(map10(), Limits{})
	var ok bool
	if n := testing.AllocsPerRun(1000, func() {
		_, ok = v.Lookup("field9")
		ok = ok && v.MapKey(0).Equal("field0")
	}); n != 0 || !ok {
		t.Errorf("Lookup/Equal: %v allocs, found %v", n, ok)
	}
}
