package cmds_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
)

// TestNegativeDurationsNeverZero: a negative duration shorter than its
// unit is written negative (rounded away from zero; BLPOP's in whole
// seconds, since the servers read "-0.001" as 0), never 0, which BLPOP,
// XREAD BLOCK and WAIT read as "block for ever": -1ns as BLPOP's
// timeout used to be sent "0" and hang its connection instead of being
// refused.
func TestNegativeDurationsNeverZero(t *testing.T) {
	var b Builder
	for _, c := range []struct {
		cmd  func() Command
		want string
	}{
		{func() Command { return b.Blpop([]string{"l"}, -time.Nanosecond).Build() }, "BLPOP l -1"},
		{func() Command { return b.Blpop([]string{"l"}, -1500*time.Millisecond).Build() }, "BLPOP l -2"},
		{func() Command { return b.Bzpopmin([]string{"z"}, -999*time.Microsecond).Build() }, "BZPOPMIN z -1"},
		{func() Command {
			return b.Xread([]string{"s"}, "$").Block(-500 * time.Microsecond).Build()
		}, "XREAD BLOCK -1 STREAMS s $"},
		{func() Command { return b.Wait(1, -time.Nanosecond).Build() }, "WAIT 1 -1"},
		{func() Command { return b.Expire("k", -500*time.Millisecond).Build() }, "EXPIRE k -1"},
		{func() Command { return b.Pexpire("k", -time.Nanosecond).Build() }, "PEXPIRE k -1"},
		{func() Command { return b.Pexpire("k", math.MinInt64).Build() }, "PEXPIRE k -9223372036855"},
		// Positive ones round up as before; 0 stays 0.
		{func() Command { return b.Blpop([]string{"l"}, time.Nanosecond).Build() }, "BLPOP l 0.001"},
		{func() Command { return b.Blpop([]string{"l"}, 0).Build() }, "BLPOP l 0"},
		{func() Command { return b.Blpop([]string{"l"}, math.MaxInt64).Build() }, "BLPOP l 9223372036.855"},
		{func() Command { return b.Expire("k", 1500*time.Millisecond).Build() }, "EXPIRE k 2"},
	} {
		cmd := c.cmd()
		if err := cmd.Err(); err != nil {
			t.Fatalf("%s: %v", c.want, err)
		}
		if got := cmd.String(); got != c.want {
			t.Errorf("got %s, want %s", got, c.want)
		}
	}
}

// TestNegativeTimeoutRefusedByServer: on the servers, each negative
// timeout under one unit is refused at once with a *resp.ServerError,
// and the connection goes on to its next command; before, BLPOP, XREAD
// BLOCK and WAIT 1 were sent with 0 and blocked until the backstop.
func TestNegativeTimeoutRefusedByServer(t *testing.T) {
	servertest.Need(t, Srv())
	for _, proto := range []int{2, 3} {
		c := dialConn(t, proto)
		var b Builder
		for _, cmd := range []func() Command{
			func() Command { return b.Blpop([]string{"neg:l"}, -time.Nanosecond).Build() },
			func() Command { return b.Brpop([]string{"neg:l"}, -999*time.Microsecond).Build() },
			func() Command { return b.Bzpopmax([]string{"neg:z"}, -time.Nanosecond).Build() },
			func() Command { return b.Xread([]string{"neg:s"}, "$").Block(-time.Nanosecond).Build() },
			func() Command { return b.Wait(1, -time.Nanosecond).Build() },
		} {
			ctx, cancel := context.WithTimeout(context.Background(), WaitLong)
			built := cmd()
			name := built.String()
			err := c.DoFunc(ctx, built.Cmd(), func(v resp.Value) error { return v.Err() })
			cancel()
			var se *resp.ServerError
			if !errors.As(err, &se) || !strings.Contains(se.Msg, "negative") {
				t.Errorf("RESP%d %s: %v, want the server's refusal of a negative timeout", proto, name, err)
			}
		}
		if got := decode(t, c, b.Echo("after").Build(), with2(String)); got.V != "after" {
			t.Errorf("RESP%d: the next command read %q", proto, got.V)
		}
	}
}

// TestNaNRefused: a NaN score, increment or coordinate makes the
// command's Err match ErrNaN, with the zero Cmd (nothing can be sent);
// infinities are written as the server reads them. Before, NaN was
// written "NaN" and left to the server to refuse.
func TestNaNRefused(t *testing.T) {
	var b Builder
	nan := math.NaN()
	for _, build := range []func() Command{
		func() Command { return b.Zadd("z", ScoreMember{1, "a"}, ScoreMember{nan, "b"}).Build() },
		func() Command { return b.Zincrby("z", nan, "a").Build() },
		func() Command { return b.Incrbyfloat("f", nan).Build() },
		func() Command { return b.Hincrbyfloat("h", "f", nan).Build() },
		func() Command {
			return b.Geoadd("g", LongitudeLatitudeMember{Longitude: nan, Latitude: 1, Member: "m"}).Build()
		},
		func() Command { return b.Zadd("z", ScoreMember{nan, "b"}).Xx().Build() }, // an option after the NaN
	} {
		cmd := build()
		err := cmd.Err()
		if !errors.Is(err, ErrNaN) || errors.Is(err, ErrMissing) {
			t.Errorf("%s: Err %v, want ErrNaN", cmd.Name(), err)
		}
		if n := len(cmd.Cmd().Bytes()); n != 0 || cmd.Cmd().Err() == nil {
			t.Errorf("%s: Cmd of %d bytes, want the zero Cmd", cmd.Name(), n)
		}
	}
	// The next command of the same Builder is whole.
	if got := b.Zadd("z", ScoreMember{math.Inf(1), "a"}, ScoreMember{math.Inf(-1), "b"}).Build(); got.Err() != nil || got.String() != "ZADD z +inf a -inf b" {
		t.Errorf("after NaN: %s, %v", got, got.Err())
	}
}

// TestStaleCommandKeysDoNotPanic: Key, KeyPos and ShardChannel of a
// stale Command, of the zero Command, or with an index out of range
// return nil or -1; they used to panic (a nil Builder, an index out of
// range).
func TestStaleCommandKeysDoNotPanic(t *testing.T) {
	var b Builder
	stale := b.Get("a").Build()
	live := b.Spublish("ch", "msg").Build()
	var zero Command
	for _, c := range []struct {
		name string
		cmd  Command
		i    int
	}{{"stale", stale, 0}, {"zero", zero, 0}, {"out of range", live, 1}, {"negative", live, -1}} {
		if k, p, ch := c.cmd.Key(c.i), c.cmd.KeyPos(c.i), c.cmd.ShardChannel(c.i); k != nil || p != -1 || ch != nil {
			t.Errorf("%s: Key %q, KeyPos %d, ShardChannel %q; want nil, -1, nil", c.name, k, p, ch)
		}
	}
	if got := string(live.ShardChannel(0)); got != "ch" {
		t.Errorf("live ShardChannel(0) = %q", got)
	}
}

// TestOKOrNilNotOK: OKOrNil of a reply that is neither OK nor nil is
// (false, ErrNotOK), not (true, ErrNotOK).
func TestOKOrNilNotOK(t *testing.T) {
	for _, v := range []resp.Value{{Type: resp.Integer, Int: 1}, {Type: resp.SimpleString, Str: []byte("QUEUED")}} {
		if ok, err := OKOrNil(v); ok || !errors.Is(err, ErrNotOK) {
			t.Errorf("OKOrNil(%v) = %t, %v; want false, ErrNotOK", v, ok, err)
		}
	}
	if ok, err := OKOrNil(resp.Value{Type: resp.Error, Str: []byte("ERR no")}); ok || err == nil {
		t.Errorf("OKOrNil(error) = %t, %v", ok, err)
	}
}

// TestHrandfieldWithValuesBothProtocols: HRANDFIELD with a count and
// WITHVALUES reads with StringMap (its Info.Reply) to the same map under
// RESP2 (a flat array) and RESP3 (an array of pairs), where RESP3 used
// to fail ("want map, got array").
func TestHrandfieldWithValuesBothProtocols(t *testing.T) {
	servertest.Need(t, Srv())
	Srv().Flush(t)
	var b Builder
	if in := b.Hrandfield("h").Build().Info(); in.Reply != ShapeStringsOrMap {
		t.Errorf("HRANDFIELD's reply shape %d, want ShapeStringsOrMap", in.Reply)
	}
	want := map[string]string{"a": "1", "b": "2", "c": "3"}
	for _, proto := range []int{2, 3} {
		c := dialConn(t, proto)
		decode(t, c, b.Hset("h", FieldValue{"a", "1"}, FieldValue{"b", "2"}, FieldValue{"c", "3"}).Build(), Int)
		got := decode(t, c, b.Hrandfield("h").Options(3, true).Build(), StringMap)
		if len(got) != 3 || got["a"] != "1" || got["b"] != "2" || got["c"] != "3" {
			t.Errorf("RESP%d: %v, want %v", proto, got, want)
		}
		// A negative count repeats fields: each pair is one of the hash's.
		rep := decode(t, c, b.Hrandfield("h").Options(-5, true).Build(), StringMap)
		for k, v := range rep {
			if want[k] != v {
				t.Errorf("RESP%d: HRANDFIELD -5: %q=%q", proto, k, v)
			}
		}
		keys := decode(t, c, b.Hrandfield("h").Options(3, false).Build(), Strings)
		slices.Sort(keys)
		if !slices.Equal(keys, []string{"a", "b", "c"}) {
			t.Errorf("RESP%d: HRANDFIELD 3: %v", proto, keys)
		}
	}
	// A RESP3 array of pairs whose element is not a pair is of another
	// shape.
	bad := resp.Value{Type: resp.Array, Elems: []resp.Value{{Type: resp.Array, Elems: []resp.Value{{Type: resp.BulkString, Str: []byte("a")}}}}}
	if _, err := StringMap(bad); !errors.Is(err, ErrShape) {
		t.Errorf("StringMap of a lone element: %v, want ErrShape", err)
	}
}

// TestIntOfDoubleBothProtocols: Int of a reply the server sends as a
// double under RESP3 and as its text under RESP2 (ZSCORE, ZINCRBY) reads
// the same under both: a whole score as its integer, any other score as
// a *resp.TypeError. Under RESP3 a whole score used to be an error too.
func TestIntOfDoubleBothProtocols(t *testing.T) {
	servertest.Need(t, Srv())
	Srv().Flush(t)
	var b Builder
	for _, proto := range []int{2, 3} {
		c := dialConn(t, proto)
		decode(t, c, b.Zadd("z", ScoreMember{2, "two"}, ScoreMember{2.5, "half"}, ScoreMember{-1e15, "low"}, ScoreMember{1e300, "huge"}).Build(), Int)
		for _, m := range []struct {
			member string
			want   int64
		}{{"two", 2}, {"low", -1e15}} {
			if got, err := decodeErr(c, b.Zscore("z", m.member).Build(), Int); err != nil || got != m.want {
				t.Errorf("RESP%d: Int(ZSCORE %s) = %d, %v; want %d", proto, m.member, got, err, m.want)
			}
		}
		for _, m := range []string{"half", "huge"} {
			var te *resp.TypeError
			if got, err := decodeErr(c, b.Zscore("z", m).Build(), Int); !errors.As(err, &te) {
				t.Errorf("RESP%d: Int(ZSCORE %s) = %d, %v; want a *resp.TypeError", proto, m, got, err)
			}
		}
		if n, ok, err := IntOrNil(resp.Value{Type: resp.Double, Int: int64(math.Float64bits(7)), Str: []byte("7")}); n != 7 || !ok || err != nil {
			t.Errorf("IntOrNil(double 7) = %d, %t, %v", n, ok, err)
		}
		decode(t, c, b.Del("z").Build(), Int)
	}
}

// TestStringOfDoubleBothProtocols: String, NullStrings and Strings of a
// reply that is a double under RESP3 and its text under RESP2 give the
// same strings under both (the double's text as sent); under RESP3 they
// were a *resp.TypeError.
func TestStringOfDoubleBothProtocols(t *testing.T) {
	servertest.Need(t, Srv())
	Srv().Flush(t)
	var b Builder
	var got [2][]string
	for i, proto := range []int{2, 3} {
		c := dialConn(t, proto)
		decode(t, c, b.Zadd("z", ScoreMember{2.5, "a"}, ScoreMember{math.Inf(1), "top"}, ScoreMember{0.1, "tenth"}).Build(), Int)
		for _, m := range []string{"a", "top", "tenth"} {
			s, err := decodeErr(c, b.Zscore("z", m).Build(), with2(String))
			if err != nil || !s.OK {
				t.Fatalf("RESP%d: String(ZSCORE %s): %v, %v", proto, m, s, err)
			}
			got[i] = append(got[i], s.V)
		}
		ns, err := decodeErr(c, b.Zmscore("z", "a", "none").Build(), NullStrings)
		if err != nil || len(ns) != 2 || !ns[0].OK || ns[1].OK {
			t.Fatalf("RESP%d: NullStrings(ZMSCORE): %v, %v", proto, ns, err)
		}
		got[i] = append(got[i], ns[0].String)
		decode(t, c, b.Del("z").Build(), Int)
	}
	if !slices.Equal(got[0], got[1]) || got[0][0] != "2.5" {
		t.Errorf("RESP2 %q, RESP3 %q: want the same, 2.5 first", got[0], got[1])
	}
}

// TestStaleCmdRefusedWithItsError: sent with DoFunc, as the package doc
// shows, a stale Command or one built wrong is refused with its own
// error (ErrStale, ErrMissing, ErrNaN), nothing sent, and the connection
// goes on; it used to be "resp: command of no arguments" for each.
func TestStaleCmdRefusedWithItsError(t *testing.T) {
	servertest.Need(t, Srv())
	c := dialConn(t, 3)
	var b Builder
	stale := b.Get("a").Build()
	b.Get("b").Build()
	ctx, cancel := context.WithTimeout(context.Background(), WaitLong)
	defer cancel()
	called := false
	fn := func(resp.Value) error { called = true; return nil }
	if err := c.DoFunc(ctx, stale.Cmd(), fn); !errors.Is(err, ErrStale) {
		t.Errorf("stale: %v, want ErrStale", err)
	}
	if err := c.DoFunc(ctx, b.Del().Build().Cmd(), fn); !errors.Is(err, ErrMissing) {
		t.Errorf("DEL of no key: %v, want ErrMissing", err)
	}
	if err := c.DoFunc(ctx, b.Zincrby("z", math.NaN(), "m").Build().Cmd(), fn); !errors.Is(err, ErrNaN) {
		t.Errorf("NaN: %v, want ErrNaN", err)
	}
	var zero Command
	if err := c.DoFunc(ctx, zero.Cmd(), fn); !errors.Is(err, resp.ErrEmptyCommand) {
		t.Errorf("zero Command: %v, want resp.ErrEmptyCommand", err)
	}
	if called {
		t.Error("a refused command had a reply")
	}
	if got := decode(t, c, b.Echo("after").Build(), with2(String)); got.V != "after" {
		t.Errorf("the next command read %q", got.V)
	}
}
