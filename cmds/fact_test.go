package cmds

import (
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/resp"
)

func bytesArgs(args []string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

// TestInspect: the kinds and timeouts of commands given as arguments, as
// internal/cmdinfo computed them (its cases, moved here), and the spans of
// their name and second argument in their encoding.
func TestInspect(t *testing.T) {
	const plain Kind = 0
	for _, tc := range []struct {
		args    []string
		kind    Kind // the guarded bits
		name    string
		timeout time.Duration
	}{
		{[]string{"GET", "k"}, plain, "get", 0},
		{[]string{"blpop", "a", "b", "2.5"}, Blocking, "blpop", 2500 * time.Millisecond},
		{[]string{"BRPOP", "a", "0"}, Blocking, "brpop", 0},
		{[]string{"BLMOVE", "a", "b", "LEFT", "RIGHT", "1"}, Blocking, "blmove", time.Second},
		{[]string{"BLMPOP", "3", "1", "a", "LEFT"}, Blocking, "blmpop", 3 * time.Second},
		{[]string{"BZMPOP", "0.1", "1", "z", "MIN"}, Blocking, "bzmpop", 100 * time.Millisecond},
		{[]string{"BRPOPLPUSH", "a", "b", "7"}, Blocking, "brpoplpush", 7 * time.Second},
		{[]string{"WAIT", "1", "250"}, Blocking, "wait", 250 * time.Millisecond},
		{[]string{"WAITAOF", "1", "0", "100"}, Blocking, "waitaof", 100 * time.Millisecond},
		{[]string{"XREAD", "COUNT", "2", "BLOCK", "1500", "STREAMS", "s", "$"}, Blocking, "xread", 1500 * time.Millisecond},
		{[]string{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"}, Blocking, "xreadgroup", 0},
		{[]string{"XREAD", "STREAMS", "BLOCK", "0"}, plain, "xread", 0}, // stream named BLOCK
		// A group or consumer named STREAMS or BLOCK is a name, as the
		// servers parse GROUP's two values: the first two block.
		{[]string{"XREADGROUP", "GROUP", "g", "STREAMS", "BLOCK", "0", "STREAMS", "s", ">"}, Blocking, "xreadgroup", 0},
		{[]string{"xreadgroup", "group", "streams", "c", "block", "10", "streams", "s", ">"}, Blocking, "xreadgroup", 10 * time.Millisecond},
		{[]string{"XREADGROUP", "GROUP", "BLOCK", "c", "STREAMS", "s", ">"}, plain, "xreadgroup", 0},
		{[]string{"XREAD", "COUNT", "1", "BLOCK", "5", "STREAMS", "s", "0"}, Blocking, "xread", 5 * time.Millisecond},
		{[]string{"XREAD", "COUNT", "1", "STREAMS", "s", "0"}, plain, "xread", 0},
		{[]string{"BLPOP", "a", "soon"}, Blocking, "blpop", 0},
		{[]string{"BLPOP", "a", "-1"}, Blocking, "blpop", 0},
		{[]string{"WAIT", "1", "1.5"}, Blocking, "wait", 0}, // milliseconds are whole
		{[]string{"CLIENT", "REPLY", "OFF"}, ReplyModel, "client|reply", 0},
		{[]string{"client", "reply", "skip"}, ReplyModel, "client|reply", 0},
		{[]string{"client", "reply", "on"}, plain, "client|reply", 0},
		{[]string{"CLIENT", "ID"}, plain, "client|id", 0},
		{[]string{"CLIENT", "NOSUCH"}, plain, "", 0},
		{[]string{"SCRIPT", "DEBUG", "YES"}, ReplyModel, "script|debug", 0},
		{[]string{"SCRIPT", "DEBUG", "no"}, plain, "script|debug", 0},
		{[]string{"Subscribe", "x"}, ReplyModel, "subscribe", 0},
		{[]string{"SSUBSCRIBE", "x"}, ReplyModel, "ssubscribe", 0},
		{[]string{"MONITOR"}, ReplyModel, "monitor", 0},
		{[]string{"hello", "3"}, ReplyModel, "hello", 0},
		{[]string{"SYNC"}, ReplyModel, "", 0},
		{[]string{"psync", "?", "-1"}, ReplyModel, "", 0},
		{[]string{"REPLCONF", "ACK", "0"}, ReplyModel, "", 0}, // answered with nothing
		{[]string{"replconf", "getack", "*"}, ReplyModel, "", 0},
		{[]string{"MULTI"}, TxMulti, "multi", 0},
		{[]string{"exec"}, TxEnd, "exec", 0},
		{[]string{"DISCARD"}, TxEnd, "discard", 0},
		{[]string{"WATCH", "k"}, TxWatch, "watch", 0},
		{[]string{"EMQ.ENQUEUE", "k"}, plain, "", 0},
		{[]string{"EVALSHA", "0123", "0"}, plain, "evalsha", 0},
		{[]string{"SETEX", "k", "1", "v"}, plain, "setex", 0},
		{[]string{"PINGS"}, plain, "", 0},
	} {
		const guarded = ReplyModel | Blocking | TxMulti | TxEnd | TxWatch
		args := bytesArgs(tc.args)
		f, keys := Inspect(args, nil)
		name := ""
		if f.Info != nil {
			name = f.Info.Name
		}
		if f.Kind&guarded != tc.kind || name != tc.name || f.Timeout != tc.timeout {
			t.Errorf("%v: kind %b info %q timeout %v, want %b %q %v", tc.args, f.Kind&guarded, name, f.Timeout, tc.kind, tc.name, tc.timeout)
		}
		enc := resp.AppendCommand(nil, tc.args...)
		if int(f.Size) != len(enc) {
			t.Errorf("%v: Size %d, encoded %d", tc.args, f.Size, len(enc))
		}
		if got := string(f.Name.Of(enc)); got != tc.args[0] {
			t.Errorf("%v: Name span %q", tc.args, got)
		}
		if len(tc.args) > 1 {
			if got := string(f.Arg1.Of(enc)); got != tc.args[1] {
				t.Errorf("%v: Arg1 span %q", tc.args, got)
			}
		}
		// Each key span is one whole argument (after the name) of the
		// encoding (findKeys, from the key specs, says which).
		for i, sp := range f.Keys {
			k, end := f.Key(enc, i), sp.Off+sp.Len
			whole := false
			for _, a := range tc.args[1:] {
				whole = whole || string(k) == a
			}
			if !whole || string(enc[end:end+2]) != "\r\n" || enc[sp.Off-1] != '\n' {
				t.Errorf("%v: key %d span %+v is %q, not an argument", tc.args, i, sp, k)
			}
		}
		if len(keys) != len(f.Keys) {
			t.Errorf("%v: %d spans appended, %d keys", tc.args, len(keys), len(f.Keys))
		}
	}
	if f, _ := Inspect(nil, nil); f.Info != nil || f.Kind != 0 {
		t.Errorf("no args: %+v", f)
	}
}

// TestInspectAllocs: inspecting allocates nothing.
func TestInspectAllocs(t *testing.T) {
	cmds := [][][]byte{
		bytesArgs([]string{"GET", "k"}), bytesArgs([]string{"evalsha", "abc", "1", "k"}),
		bytesArgs([]string{"subscribe", "x"}), bytesArgs([]string{"PING"}),
		bytesArgs([]string{"XREAD", "BLOCK", "10", "STREAMS", "s", "$"}), bytesArgs([]string{"EMQ.CLAIM", "q"}),
	}
	keys := make([]Span, 0, 64)
	if n := testing.AllocsPerRun(100, func() {
		for _, c := range cmds {
			_, keys = Inspect(c, keys[:0])
		}
	}); n != 0 {
		t.Fatalf("Inspect allocates %v", n)
	}
}

// TestCommandFact: a builder's Fact agrees with its Command (kind,
// timeout, keys) and its spans are where the encoding has the name, the
// second argument and the keys, in order and out of order.
func TestCommandFact(t *testing.T) {
	var b Builder
	for _, build := range []func() Command{
		func() Command { return b.Get("k1").Build() },
		func() Command { return b.Set("k2", "v").Ex(time.Second).Build() },
		func() Command { return b.Set("k3", "v").Nx().Ex(time.Second).Build() },
		func() Command { return b.Mset(KeyValue{Key: "a", Value: "1"}, KeyValue{Key: "b", Value: "2"}).Build() },
		func() Command { return b.Blpop([]string{"q1", "q2"}, 1500*time.Millisecond).Build() },
		func() Command { return b.Xread([]string{"s"}, "$").Count(1).Block(time.Second).Build() },
		func() Command { return b.Xread([]string{"s"}, "$").Block(time.Second).Count(1).Build() },
		func() Command { return b.Xread([]string{"s"}, "$").Build() },
		func() Command { return b.ClientReply(ReplyOn).Build() },
		func() Command { return b.ClientReply(ReplyOff).Build() },
		func() Command { return b.Ping().Build() },
		func() Command { return b.Zadd("z", ScoreMember{Score: 1, Member: "m"}).Gt().Ch().Build() },
	} {
		c := build()
		if err := c.Err(); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		f := c.Fact()
		enc := c.Cmd().Bytes()
		v, _, err := resp.Parse(enc, resp.Limits{})
		if err != nil {
			t.Fatalf("%q: %v", enc, err)
		}
		if f.Info != c.Info() || f.Timeout != c.Timeout() || int(f.Size) != len(enc) {
			t.Errorf("%s: fact %+v", c, f)
		}
		want := c.Kind()
		if c.Info().Name == "client|reply" && string(v.Elems[2].Str) == "ON" {
			want &^= ReplyModel
		}
		if f.Kind != want {
			t.Errorf("%s: kind %b, want %b", c, f.Kind, want)
		}
		if got := string(f.Name.Of(enc)); got != string(v.Elems[0].Str) {
			t.Errorf("%s: name %q", c, got)
		}
		if len(v.Elems) > 1 {
			if got := string(f.Arg1.Of(enc)); got != string(v.Elems[1].Str) {
				t.Errorf("%s: arg1 %q", c, got)
			}
		}
		if len(f.Keys) != c.Keys() {
			t.Fatalf("%s: %d key spans, %d keys", c, len(f.Keys), c.Keys())
		}
		for i := range f.Keys {
			if got, pos := string(f.Key(enc, i)), c.KeyPos(i); got != string(c.Key(i)) || got != string(v.Elems[pos].Str) {
				t.Errorf("%s: key %d span %q, Key %q, at %d %q", c, i, got, c.Key(i), pos, v.Elems[pos].Str)
			}
		}
	}
	// Building and taking the Fact allocate nothing once grown.
	b.Mset(KeyValue{Key: "a", Value: "1"}, KeyValue{Key: "b", Value: "2"}).Build().Fact()
	b.Set("k3", "v").Nx().Ex(time.Second).Build().Fact()
	if n := testing.AllocsPerRun(100, func() {
		sinkFact = b.Set("k3", "v").Nx().Ex(time.Second).Build().Fact()
		sinkFact = b.Get("k").Build().Fact()
	}); n != 0 && !raceEnabled {
		t.Errorf("Fact allocates %v", n)
	}
}

var sinkFact Fact

// BenchmarkInspect: the inspector's cost per command given as arguments.
func BenchmarkInspect(b *testing.B) {
	cmds := [][][]byte{
		bytesArgs([]string{"PING"}), bytesArgs([]string{"SET", "key:1", "value"}),
		bytesArgs([]string{"get", "key:1"}), bytesArgs([]string{"EVALSHA", "0123456789012345678901234567890123456789", "1", "k", "a"}),
	}
	keys := make([]Span, 0, 16)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		sinkFact, keys = Inspect(cmds[i%len(cmds)], keys[:0])
	}
}

// BenchmarkFact: a builder's Fact, per command.
func BenchmarkFact(b *testing.B) {
	var bd Builder
	c := bd.Incr("n").Build()
	b.ReportAllocs()
	for b.Loop() {
		sinkFact = c.Fact()
	}
}

// TestPlain: Plain never says true of a command that may be Guarded (with
// any arguments: the table's kind is the most a command's refined kind
// has), in any case, nor of SYNC and PSYNC; and it says true of the
// commands a pipeline sends most, so that their submissions skip the
// facts.
func TestPlain(t *testing.T) {
	for _, in := range commands {
		w := in.Words[0]
		for _, name := range []string{w, strings.ToLower(w)} {
			if Plain(name) && in.Kind&Guarded != 0 {
				t.Errorf("Plain(%q) but %v is %b", name, in.Words, in.Kind&Guarded)
			}
			if Plain([]byte(name)) != Plain(name) {
				t.Errorf("Plain(%q) differs for bytes", name)
			}
		}
	}
	for _, name := range []string{"SYNC", "psync", "REPLCONF", "replconf", "BLPOP", "xread", "XREADGROUP", "CLIENT", "SCRIPT", "MULTI", "exec", "WATCH", "WAIT", "SUBSCRIBE", "HELLO", "", "MONITOR"} {
		if Plain(name) {
			t.Errorf("Plain(%q)", name)
		}
	}
	for _, name := range []string{"PING", "SET", "get", "EVALSHA", "INCR", "HSET", "HGETALL", "ZADD", "XADD", "DEL", "MGET", "LPUSH", "EXPIRE", "FCALL", "EMQ.ENQUEUE"} {
		if !Plain(name) {
			t.Errorf("Plain(%q) is false: its submissions would be inspected", name)
		}
		if f, _ := Inspect([][]byte{[]byte(name)}, nil); f.Kind&Guarded != 0 {
			t.Errorf("%q is Guarded", name)
		}
	}
}
