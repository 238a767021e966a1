package cmds

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	hashslot "github.com/echomq/echomq-go/internal/slot"
	"github.com/echomq/echomq-go/resp"
)

func encoded(t *testing.T, c Command) string {
	t.Helper()
	if err := c.Err(); err != nil {
		t.Fatalf("%v", err)
	}
	return c.String()
}

// TestEncoding pins what builders send: options in the server's order
// whatever the call order, the last of a choice winning, repeated choices
// in call order, counts and units written by the builder.
func TestEncoding(t *testing.T) {
	var b Builder
	at := time.Date(2030, 1, 2, 3, 4, 5, 600e6, time.UTC)
	for _, c := range []struct {
		got  func() Command
		want string
	}{
		{func() Command { return b.Get("k").Build() }, "GET k"},
		{func() Command { return b.Set("k", "v").Ex(time.Minute).Nx().Build() }, "SET k v NX EX 60"},
		{func() Command { return b.Set("k", "v").Nx().Xx().Build() }, "SET k v XX"},
		{func() Command { return b.Set("k", "v").Ex(time.Minute).Px(1500 * time.Microsecond).Build() }, "SET k v PX 2"},
		{func() Command { return b.Set("k", "v").Keepttl().Get().Build() }, "SET k v GET KEEPTTL"},
		{func() Command { return b.Set("k", "v").Ex(1001 * time.Millisecond).Build() }, "SET k v EX 2"},
		{func() Command { return b.Set("k", "v").Exat(at).Build() }, "SET k v EXAT 1893553445"},
		{func() Command { return b.Set("k", "v").Pxat(at).Build() }, "SET k v PXAT 1893553445600"},
		{func() Command { return b.Set("k", "").Build() }, `SET k ""`},
		{func() Command { return b.Set("k", "two words").Build() }, `SET k "two words"`},
		{func() Command { return b.Blpop([]string{"a", "b"}, 1500*time.Millisecond).Build() }, "BLPOP a b 1.5"},
		{func() Command { return b.Blpop([]string{"a"}, 0).Build() }, "BLPOP a 0"},
		{func() Command { return b.Blpop([]string{"a"}, time.Microsecond).Build() }, "BLPOP a 0.001"},
		{func() Command { return b.Blpop([]string{"a"}, 2*time.Second+10*time.Millisecond).Build() }, "BLPOP a 2.01"},
		{func() Command {
			return b.Zadd("z", ScoreMember{1.5, "a"}, ScoreMember{math.Inf(-1), "b"}).Incr().Gt().Build()
		}, "ZADD z GT INCR 1.5 a -inf b"},
		{func() Command { return b.Zadd("z", ScoreMember{1e21, "a"}).Build() }, "ZADD z 1000000000000000000000 a"},
		{func() Command { return b.Zrange("z", "(1", "+inf").Withscores().Byscore().Limit(0, 10).Build() }, "ZRANGE z (1 +inf BYSCORE LIMIT 0 10 WITHSCORES"},
		{func() Command {
			return b.Xadd("s", FieldValue{"f", "v"}).AutoId().Trim(MaxLen, "100").TrimApproximately().TrimLimit(5).Nomkstream().Build()
		}, "XADD s NOMKSTREAM MAXLEN ~ 100 LIMIT 5 * f v"},
		{func() Command { return b.Xread([]string{"a", "b"}, "0", "$").Block(time.Second).Count(10).Build() }, "XREAD COUNT 10 BLOCK 1000 STREAMS a b 0 $"},
		{func() Command { return b.Eval("return 1", "k1", "k2").Arg("x").Build() }, "EVAL \"return 1\" 2 k1 k2 x"},
		{func() Command { return b.Eval("return 1").Build() }, "EVAL \"return 1\" 0"},
		{func() Command { return b.Bitfield("k").Overflow(Sat).Incrby("u8", 0, 1).Get("u8", 0).Build() }, "BITFIELD k OVERFLOW SAT INCRBY u8 0 1 GET u8 0"},
		{func() Command { return b.ClientKill().Id(7).Skipme(No).Build() }, "CLIENT KILL ID 7 SKIPME NO"},
		{func() Command { return b.Lmove("a", "b", Left, Right).Build() }, "LMOVE a b LEFT RIGHT"},
		{func() Command { return b.Sort("k").Get("#", "w_*").Store("d").Desc().Build() }, "SORT k GET # GET w_* DESC STORE d"},
		{func() Command { return b.Scan("0").Match("p*").Count(100).Build() }, "SCAN 0 MATCH p* COUNT 100"},
		{func() Command { return b.Geosearch("g").Byradius(5, Kilometers).Frommember("m").Count(3, true).Build() }, "GEOSEARCH g FROMMEMBER m BYRADIUS 5 KM COUNT 3 ANY"},
		{func() Command { return b.Migrate("h", 6379, 0, 5*time.Second).EmptyString().Keys("a", "b").Build() }, `MIGRATE h 6379 "" 0 5000 KEYS a b`},
	} {
		if got := encoded(t, c.got()); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}

// TestFacts pins what a Command knows from its build: kind, timeout,
// keys.
func TestFacts(t *testing.T) {
	var b Builder
	c := b.Xread([]string{"a", "b"}, "0", "0").Build()
	if c.Kind().Has(Blocking) || !c.Kind().Has(ReadOnly) || c.Timeout() != 0 {
		t.Errorf("XREAD without BLOCK: kind %b timeout %v", c.Kind(), c.Timeout())
	}
	if pos := c.AppendKeyPos(nil); !slices.Equal(pos, []int{2, 3}) {
		t.Errorf("XREAD keys at %v", pos)
	}
	c = b.Xread([]string{"a"}, "0").Block(1500 * time.Millisecond).Build()
	if !c.Kind().Has(Blocking) || c.Timeout() != 1500*time.Millisecond {
		t.Errorf("XREAD BLOCK: kind %b timeout %v", c.Kind(), c.Timeout())
	}
	c = b.Blpop([]string{"x", "y"}, 0).Build()
	if !c.Kind().Has(Blocking|Write) || c.Timeout() != 0 || c.Info().Timeout != DecimalSeconds {
		t.Errorf("BLPOP: kind %b timeout %v unit %v", c.Kind(), c.Timeout(), c.Info().Timeout)
	}
	if c.Keys() != 2 || string(c.Key(1)) != "y" || c.KeyPos(1) != 2 {
		t.Errorf("BLPOP keys: %d %q %d", c.Keys(), c.Key(1), c.KeyPos(1))
	}
	c = b.Subscribe("ch").Build()
	if !c.Kind().Has(ReplyModel|NoKeys|PubSub) || c.Keys() != 0 {
		t.Errorf("SUBSCRIBE: kind %b", c.Kind())
	}
	c = b.ClientReply(ReplyOff).Build()
	if c.Name() != "client|reply" || !c.Kind().Has(ReplyModel) || c.String() != "CLIENT REPLY OFF" {
		t.Errorf("CLIENT REPLY: %s %b %s", c.Name(), c.Kind(), c)
	}
	if k := b.Multi().Build().Kind(); !k.Has(TxMulti) {
		t.Errorf("MULTI: %b", k)
	}
	if k := b.Get("k").Build().Kind(); k != ReadOnly {
		t.Errorf("GET: %b", k)
	}
	c = b.Sort("k").Store("dst").Build()
	if pos := c.AppendKeyPos(nil); !slices.Equal(pos, []int{1, 3}) || !c.Kind().Has(MovableKeys) {
		t.Errorf("SORT STORE keys at %v, kind %b", pos, c.Kind())
	}
	// Keys in the arguments after options (XREAD's streams), with
	// options in order and out of order.
	for _, c := range []Command{
		b.Xread([]string{"a", "b"}, "0", "0").Count(5).Build(),
	} {
		if pos := c.AppendKeyPos(nil); !slices.Equal(pos, []int{4, 5}) || string(c.Key(0)) != "a" || string(c.Key(1)) != "b" || c.String() != "XREAD COUNT 5 STREAMS a b 0 0" {
			t.Errorf("%s: keys at %v", c, pos)
		}
	}
	c = b.Xread([]string{"a", "b"}, "0", "0").Block(time.Second).Count(5).Build()
	if pos := c.AppendKeyPos(nil); !slices.Equal(pos, []int{6, 7}) || string(c.Key(0)) != "a" || string(c.Key(1)) != "b" || c.String() != "XREAD COUNT 5 BLOCK 1000 STREAMS a b 0 0" {
		t.Errorf("%s: keys at %v", c, pos)
	}
	c = b.Migrate("h", 1, 0, time.Second).Keys("k1", "k2").Copy().EmptyString().Build()
	if pos := c.AppendKeyPos(nil); !slices.Equal(pos, []int{8, 9}) || string(c.Key(1)) != "k2" || c.String() != `MIGRATE h 1 "" 0 1000 COPY KEYS k1 k2` {
		t.Errorf("%s: keys at %v", c, pos)
	}
	// Slots, from the keys kept (CLUSTER KEYSLOT foo is 12182).
	if s, has, cross := b.Get("foo").Build().Slot(); s != 12182 || !has || cross {
		t.Errorf("GET foo: slot %d %v %v", s, has, cross)
	}
	if s, has, cross := b.Mget("{user}1", "{user}2").Build().Slot(); s != hashslot.Of("user") || !has || cross {
		t.Errorf("MGET {user}…: slot %d %v %v", s, has, cross)
	}
	if _, _, cross := b.Mget("a", "b").Build().Slot(); !cross {
		t.Error("MGET a b: not cross-slot")
	}
	if _, has, _ := b.Ping().Build().Slot(); has {
		t.Error("PING has a slot")
	}
	if s, has, _ := b.Spublish("foo", "m").Build().Slot(); s != 12182 || !has {
		t.Errorf("SPUBLISH foo: slot %d %v", s, has)
	}
	// Shard channels are routed like keys, but are not keys.
	c = b.Spublish("news", "hello").Build()
	if c.Keys() != 0 || c.ShardChannels() != 1 || string(c.ShardChannel(0)) != "news" {
		t.Errorf("SPUBLISH: %d keys, %d channels", c.Keys(), c.ShardChannels())
	}
	c = b.Sunsubscribe().Shardchannel("a", "b").Build()
	if c.ShardChannels() != 2 || string(c.ShardChannel(1)) != "b" || !c.Kind().Has(ReplyModel) {
		t.Errorf("SUNSUBSCRIBE: %d channels, kind %b", c.ShardChannels(), c.Kind())
	}
	// Options out of order: the keys move with their arguments.
	c = b.Sort("src").Store("dst").Limit(0, 5).Build()
	if pos := c.AppendKeyPos(nil); !slices.Equal(pos, []int{1, 6}) || string(c.Key(0)) != "src" || string(c.Key(1)) != "dst" {
		t.Errorf("SORT LIMIT STORE: %s keys at %v: %q %q", c, pos, c.Key(0), c.Key(1))
	}
	// STORE and STOREDIST are one choice: the last wins, its key with it.
	c = b.Georadius("g", 1, 2, 3, Meters).Storedist("sd").Withdist().Store("st").Build()
	if pos := c.AppendKeyPos(nil); !slices.Equal(pos, []int{1, 8}) || string(c.Key(1)) != "st" || c.String() != "GEORADIUS g 1 2 3 M WITHDIST STORE st" {
		t.Errorf("GEORADIUS STOREDIST then STORE: %s keys at %v", c, pos)
	}
	if c.Info().Reply != ShapeUnknown || b.Get("k").Build().Info().Reply != ShapeString {
		t.Error("reply shapes")
	}
}

// TestRefused: a command built without what it needs says why and is
// never sendable.
func TestRefused(t *testing.T) {
	var b Builder
	for _, c := range []struct {
		build func() Command
		want  error
	}{
		{func() Command { return b.Xadd("s", FieldValue{"f", "v"}).Build() }, ErrMissing},                     // no ID choice
		{func() Command { return b.Xadd("s", FieldValue{"f", "v"}).AutoId().TrimLimit(5).Build() }, ErrAlone}, // LIMIT without MAXLEN/MINID
		{func() Command { return b.Lmove("a", "b", 0, Right).Build() }, ErrMissing},
		{func() Command { return b.Del().Build() }, ErrMissing},      // no key
		{func() Command { return b.Xread(nil).Build() }, ErrMissing}, // no stream
		{func() Command { return b.Hset("h").Build() }, ErrMissing},  // no field
		{func() Command { return b.Eval("return 1").Build() }, nil},  // no key is fine                           // the zero choice
		{func() Command {
			return b.Xadd("s", FieldValue{"f", "v"}).AutoId().Trim(MaxLen, "1").TrimLimit(5).Build()
		}, nil},
		{func() Command { return b.ClusterSlotStats().Build() }, ErrMissing},                                // no filter
		{func() Command { return b.ClusterSlotStats().OrderByLimit(3).Build() }, ErrMissing},                // LIMIT, and no filter
		{func() Command { return b.ClusterSlotStats().SlotsRange(0, 9).OrderByLimit(3).Build() }, ErrAlone}, // LIMIT of ORDERBY with SLOTSRANGE
		{func() Command { return b.ClusterSlotStats().SlotsRange(0, 9).OrderByDesc().Build() }, ErrAlone},
		{func() Command {
			return b.ClusterSlotStats().OrderBy("key-count").OrderByLimit(3).SlotsRange(0, 9).Build()
		}, ErrAlone}, // ORDERBY's options outlive it
		{func() Command {
			return b.ClusterSlotStats().SlotsRange(0, 9).OrderBy("key-count").OrderByLimit(3).Build()
		}, nil}, // the last choice wins
	} {
		cmd := c.build()
		err := cmd.Err()
		if c.want == nil {
			if err != nil {
				t.Errorf("%v", err)
			}
			continue
		}
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", cmd, err, c.want)
		}
		if cmd.Cmd().Err() == nil || len(cmd.Cmd().Bytes()) != 0 || cmd.Keys() != 0 {
			t.Errorf("%v: the Cmd is sendable", err)
		}
	}
}

// TestClusterSlotStatsEncoding: CLUSTER SLOT-STATS's choice of blocks
// (SLOTSRANGE start end | ORDERBY metric [LIMIT n] [ASC|DESC]) is written
// in the syntax's order whatever the order of the calls, the last choice
// winning, and the error names the alternative an option belongs to.
func TestClusterSlotStatsEncoding(t *testing.T) {
	var b Builder
	for _, c := range []struct {
		build func() Command
		want  string
	}{
		{func() Command { return b.ClusterSlotStats().SlotsRange(0, 16383).Build() }, "CLUSTER SLOT-STATS SLOTSRANGE 0 16383"},
		{func() Command { return b.ClusterSlotStats().OrderBy("key-count").Build() }, "CLUSTER SLOT-STATS ORDERBY key-count"},
		{func() Command {
			return b.ClusterSlotStats().OrderBy("key-count").OrderByLimit(5).OrderByAsc().Build()
		}, "CLUSTER SLOT-STATS ORDERBY key-count LIMIT 5 ASC"},
		{func() Command {
			return b.ClusterSlotStats().OrderByDesc().OrderByLimit(5).OrderBy("cpu-usec").Build()
		}, "CLUSTER SLOT-STATS ORDERBY cpu-usec LIMIT 5 DESC"},
		{func() Command {
			return b.ClusterSlotStats().SlotsRange(1, 2).OrderByAsc().OrderBy("key-count").OrderByDesc().Build()
		}, "CLUSTER SLOT-STATS ORDERBY key-count DESC"},
		{func() Command {
			return b.ClusterSlotStats().OrderBy("key-count").SlotsRange(3, 4).Build()
		}, "CLUSTER SLOT-STATS SLOTSRANGE 3 4"},
	} {
		cmd := c.build()
		if err := cmd.Err(); err != nil {
			t.Errorf("%s: %v", c.want, err)
			continue
		}
		if got := strings.Join(args(t, cmd.Cmd()), " "); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
	err := b.ClusterSlotStats().SlotsRange(0, 1).OrderByLimit(2).Build().Err()
	if !errors.Is(err, ErrAlone) || !strings.Contains(err.Error(), "limit without ORDERBY") {
		t.Errorf("LIMIT with SLOTSRANGE: %v", err)
	}
	if in := Lookup("cluster|slot-stats"); in == nil || in.Policy() != AllShards {
		t.Errorf("CLUSTER SLOT-STATS: %+v, want the table's request policy all_shards", in)
	}
}

// TestAppendTo: AppendTo appends the command's bytes (those of Cmd) to a
// resp.Cmds and returns its kind; a stale command, or one built wrong,
// appends nothing and returns its Err.
func TestAppendTo(t *testing.T) {
	var b Builder
	var cs resp.Cmds
	c := b.Blpop([]string{"a", "b"}, time.Second).Build()
	want := string(c.Cmd().Bytes())
	if k, err := c.AppendTo(&cs); err != nil || k != c.Kind() || k&Blocking == 0 {
		t.Fatalf("AppendTo = %v, %v; want %v, nil", k, err, c.Kind())
	}
	if got := string(cs.Bytes()); got != want || cs.Len() != 1 {
		t.Fatalf("appended %q (%d), want %q", got, cs.Len(), want)
	}
	b.Get("k").Build() // c is stale now
	if k, err := c.AppendTo(&cs); !errors.Is(err, ErrStale) || k != 0 {
		t.Errorf("stale AppendTo = %v, %v; want 0, ErrStale", k, err)
	}
	bad := b.Xadd("s").Build() // no ID choice, no data
	if _, err := bad.AppendTo(&cs); err == nil || !errors.Is(err, bad.Err()) {
		t.Errorf("AppendTo of a command built wrong = %v, want its Err %v", err, bad.Err())
	}
	if cs.Len() != 1 || string(cs.Bytes()) != want {
		t.Errorf("after refusals: %d commands, %q", cs.Len(), cs.Bytes())
	}
}

// TestArgLengths: keys and values of every length from 0 to 130 bytes
// (one-, two- and three-digit bulk headers, in the Builder's in-place
// write and its general path) encode as resp.Command encodes them, and
// each key's span is its bytes.
func TestArgLengths(t *testing.T) {
	var b Builder
	for n := range 131 {
		key, val := strings.Repeat("k", n), strings.Repeat("v", n)
		c := b.Set(key, val).Build()
		want := string(resp.Command(nil, "SET", key, val).Bytes())
		if got := string(c.Cmd().Bytes()); got != want {
			t.Fatalf("n=%d: %q, want %q", n, got, want)
		}
		f := c.Fact()
		if len(f.Keys) != 1 || string(f.Key(c.Cmd().Bytes(), 0)) != key || string(c.Key(0)) != key {
			t.Fatalf("n=%d: key spans %v", n, f.Keys)
		}
	}
}
