package cmds_test

import (
	"context"
	"fmt"
	. "github.com/echomq/echomq-go/cmds"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
)

func dialConn(t testing.TB, proto int) *conn.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitLong)
	defer cancel()
	c, err := conn.Dial(ctx, conn.Options{Addr: Srv().Addr, Protocol: proto})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// decode sends cmd on c and decodes its reply with fn.
func decode[T any](t testing.TB, c *conn.Conn, cmd Command, fn func(resp.Value) (T, error)) T {
	t.Helper()
	if err := cmd.Err(); err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	var out T
	ctx, cancel := context.WithTimeout(context.Background(), WaitLong)
	defer cancel()
	err := c.DoFunc(ctx, cmd.Cmd(), func(v resp.Value) error {
		var err error
		out, err = fn(v)
		return err
	})
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return out
}

// with2 adapts a decoder of (value, ok, error) to one of (pair, error).
type opt[T any] struct {
	V  T
	OK bool
}

func with2[T any](fn func(resp.Value) (T, bool, error)) func(resp.Value) (opt[T], error) {
	return func(v resp.Value) (opt[T], error) {
		x, ok, err := fn(v)
		return opt[T]{x, ok}, err
	}
}

func noErr(fn func(resp.Value) error) func(resp.Value) (bool, error) {
	return func(v resp.Value) (bool, error) { return true, fn(v) }
}

// TestTypedRepliesBothProtocols runs the commands of the reply table
// people use most on RESP2 and on RESP3 connections to the same data,
// and requires the same Go value from the typed decoder on both, and the
// value the data says.
func TestTypedRepliesBothProtocols(t *testing.T) {
	servertest.Need(t, Srv())
	Srv().Flush(t)
	type result struct {
		name string
		got  any
	}
	run := func(proto int) []result {
		c := dialConn(t, proto)
		var b Builder
		var out []result
		add := func(name string, v any) { out = append(out, result{name, v}) }
		p := "p" + strconv.Itoa(proto) + ":" // each protocol its own keys
		add("SET", decode(t, c, b.Set(p+"s", "v").Build(), OKOrNil))
		add("SET NX (exists)", decode(t, c, b.Set(p+"s", "w").Nx().Build(), OKOrNil))
		add("SET GET", decode(t, c, b.Set(p+"s", "w").Get().Build(), with2(String)))
		add("GET", decode(t, c, b.Get(p+"s").Build(), with2(String)))
		add("GET missing", decode(t, c, b.Get(p+"none").Build(), with2(String)))
		add("INCR", decode(t, c, b.Incr(p+"n").Build(), Int))
		add("DECR", decode(t, c, b.Decr(p+"n").Build(), Int))
		add("INCRBYFLOAT", decode(t, c, b.Incrbyfloat(p+"f", 30.5).Build(), Float))
		add("INCRBYFLOAT inf", decode(t, c, b.Set(p+"f2", "1").Build(), OKOrNil))
		add("GETDEL", decode(t, c, b.Getdel(p+"s").Build(), with2(String)))
		add("MGET", decode(t, c, b.Mget(p+"n", p+"none", p+"f").Build(), NullStrings))
		add("HSET", decode(t, c, b.Hset(p+"h", FieldValue{"a", "1"}, FieldValue{"b", "2"}).Build(), Int))
		add("HGET", decode(t, c, b.Hget(p+"h", "a").Build(), with2(String)))
		add("HGETALL", decode(t, c, b.Hgetall(p+"h").Build(), StringMap))
		add("HGETALL missing", decode(t, c, b.Hgetall(p+"none").Build(), StringMap))
		add("HMGET", decode(t, c, b.Hmget(p+"h", "a", "x").Build(), NullStrings))
		add("HEXISTS", decode(t, c, b.Hexists(p+"h", "a").Build(), Bool))
		add("HEXISTS no", decode(t, c, b.Hexists(p+"h", "x").Build(), Bool))
		add("HLEN", decode(t, c, b.Hlen(p+"h").Build(), Int))
		add("RPUSH", decode(t, c, b.Rpush(p+"l", "x", "y", "z").Build(), Int))
		add("LLEN", decode(t, c, b.Llen(p+"l").Build(), Int))
		add("LRANGE", decode(t, c, b.Lrange(p+"l", 0, -1).Build(), Strings))
		add("BLPOP", decode(t, c, b.Blpop([]string{p + "none", p + "l"}, time.Second).Build(), with2(PoppedOrNil)))
		add("BRPOP timeout", decode(t, c, b.Brpop([]string{p + "none"}, 10*time.Millisecond).Build(), with2(PoppedOrNil)))
		add("SADD", decode(t, c, b.Sadd(p+"set", "a", "b", "c").Build(), Int))
		add("SCARD", decode(t, c, b.Scard(p+"set").Build(), Int))
		add("SMEMBERS", sorted(decode(t, c, b.Smembers(p+"set").Build(), Strings)))
		add("SPOP", decode(t, c, b.Spop(p+"set").Build(), with2(String)).OK)
		add("ZADD", decode(t, c, b.Zadd(p+"z", ScoreMember{1.5, "a"}, ScoreMember{2, "b"}, ScoreMember{math.Inf(1), "c"}).Build(), Int))
		add("ZADD INCR", decode(t, c, b.Zadd(p+"z", ScoreMember{1, "a"}).Incr().Build(), with2(FloatOrNil)))
		add("ZCARD", decode(t, c, b.Zcard(p+"z").Build(), Int))
		add("ZINCRBY", decode(t, c, b.Zincrby(p+"z", 0.25, "b").Build(), Float))
		add("ZRANK", decode(t, c, b.Zrank(p+"z", "b").Build(), with2(IntOrNil)))
		add("ZRANK missing", decode(t, c, b.Zrank(p+"z", "x").Build(), with2(IntOrNil)))
		add("ZSCORE", decode(t, c, b.Zscore(p+"z", "c").Build(), with2(FloatOrNil)))
		add("ZSCORE missing", decode(t, c, b.Zscore(p+"z", "x").Build(), with2(FloatOrNil)))
		add("ZRANGE", decode(t, c, b.Zrange(p+"z", "0", "-1").Build(), Strings))
		add("ZRANGE WITHSCORES", decode(t, c, b.Zrange(p+"z", "0", "-1").Withscores().Build(), Scored))
		add("ZRANGE BYSCORE", decode(t, c, b.Zrange(p+"z", "(1", "+inf").Byscore().Withscores().Build(), Scored))
		add("ZREVRANGE WITHSCORES", decode(t, c, b.Zrevrange(p+"z", 0, 1).Withscores().Build(), Scored))
		add("ZPOPMIN", decode(t, c, b.Zpopmin(p+"z").Build(), Scored))
		add("EXPIRE", decode(t, c, b.Expire(p+"h", time.Hour).Build(), Bool))
		add("TTL", decode(t, c, b.Ttl(p+"h").Build(), Int) > 3500)
		add("PTTL missing", decode(t, c, b.Pttl(p+"none").Build(), Int))
		add("PERSIST", decode(t, c, b.Persist(p+"h").Build(), Bool))
		add("EXISTS", decode(t, c, b.Exists(p+"h", p+"none", p+"l").Build(), Int))
		add("XADD", decode(t, c, b.Xadd(p+"x", FieldValue{"f", "v"}).Id("1-1").Build(), with2(String)))
		add("XADD 2", decode(t, c, b.Xadd(p+"x", FieldValue{"f", "w"}, FieldValue{"g", "u"}).Id("2-1").Build(), with2(String)))
		add("XRANGE", decode(t, c, b.Xrange(p+"x", "-", "+").Build(), Entries))
		add("XREAD", decode(t, c, b.Xread([]string{p + "x"}, "0").Count(1).Build(), Streams))
		add("XREAD timeout", decode(t, c, b.Xread([]string{p + "x"}, "$").Block(10*time.Millisecond).Build(), Streams))
		add("XGROUP CREATE", decode(t, c, b.XgroupCreate(p+"x", "g").Id("0").Build(), noErr(OK)))
		add("XREADGROUP", decode(t, c, b.Xreadgroup("g", "c1", []string{p + "x"}, ">").Build(), Streams))
		add("XPENDING", decode(t, c, b.Xpending(p+"x", "g").Build(), PendingSummaryOf))
		entries := decode(t, c, b.Xpending(p+"x", "g").Filters("-", "+", 10).Build(), PendingEntries)
		for i := range entries {
			entries[i].IdleMillis = 0 // time passes
		}
		add("XPENDING range", entries)
		add("XDEL", decode(t, c, b.Xdel(p+"x", "1-1").Build(), Int))
		page := decode(t, c, b.Scan("0").Match(p+"*").Count(1000).Build(), ScanPageOf)
		add("SCAN", sorted(page.Items))
		hpage := decode(t, c, b.Hscan(p+"h", "0").Build(), ScanPageOf)
		add("HSCAN", hpage)
		add("DEL", decode(t, c, b.Del(p+"h", p+"l", p+"none").Build(), Int))
		return out
	}
	r2, r3 := run(2), run(3)
	for i := range r2 {
		a, b := r2[i], r3[i]
		got := a.got
		if s, ok := got.(ScanPage); ok {
			got = s.Items
		}
		// Keys are prefixed by protocol: compare with the prefix folded.
		if fmt.Sprint(fold(a.got, "p2:")) != fmt.Sprint(fold(b.got, "p3:")) {
			t.Errorf("%s: RESP2 %v, RESP3 %v", a.name, a.got, b.got)
		}
		_ = got
	}
	// And what the data says, on both.
	want := map[string]any{
		"SET": true, "SET NX (exists)": false, "SET GET": opt[string]{"v", true}, "GET": opt[string]{"w", true},
		"GET missing": opt[string]{}, "INCR": int64(1), "DECR": int64(0), "INCRBYFLOAT": 30.5,
		"HGETALL": map[string]string{"a": "1", "b": "2"}, "HGETALL missing": map[string]string{},
		"HMGET": []NullString{{"1", true}, {"", false}}, "HEXISTS": true, "HEXISTS no": false, "HLEN": int64(2),
		"LRANGE": []string{"x", "y", "z"}, "BRPOP timeout": opt[Popped]{}, "SMEMBERS": []string{"a", "b", "c"},
		"ZADD INCR": opt[float64]{2.5, true}, "ZINCRBY": 2.25, "ZRANK": opt[int64]{0, true}, "ZRANK missing": opt[int64]{},
		"ZSCORE": opt[float64]{math.Inf(1), true}, "ZSCORE missing": opt[float64]{},
		"ZRANGE":            []string{"b", "a", "c"},
		"ZRANGE WITHSCORES": []Z{{"b", 2.25}, {"a", 2.5}, {"c", math.Inf(1)}},
		"ZRANGE BYSCORE":    []Z{{"b", 2.25}, {"a", 2.5}, {"c", math.Inf(1)}},
		"ZPOPMIN":           []Z{{"b", 2.25}}, "EXPIRE": true, "TTL": true, "PTTL missing": int64(-2), "PERSIST": true,
		"EXISTS": int64(2), "XRANGE": []Entry{{"1-1", []FieldValue{{"f", "v"}}}, {"2-1", []FieldValue{{"f", "w"}, {"g", "u"}}}},
		"XREAD timeout": []Stream(nil), "XDEL": int64(1), "DEL": int64(2),
	}
	for _, r := range r3 {
		if w, ok := want[r.name]; ok && !reflect.DeepEqual(fold(r.got, "p3:"), w) {
			t.Errorf("%s: %#v, want %#v", r.name, r.got, w)
		}
	}
}

func sorted(s []string) []string { slices.Sort(s); return s }

// fold removes a key prefix from the strings of v's printed form.
func fold(v any, prefix string) any {
	switch x := v.(type) {
	case []Stream:
		var out []Stream
		for _, s := range x {
			s.Key = s.Key[len(prefix):]
			out = append(out, s)
		}
		return out
	case []string:
		var out []string
		for _, s := range x {
			if len(s) >= len(prefix) && s[:len(prefix)] == prefix {
				s = s[len(prefix):]
			}
			out = append(out, s)
		}
		return out
	case opt[Popped]:
		if x.OK {
			x.V.Key = x.V.Key[len(prefix):]
		}
		return x
	}
	return v
}

// TestScoresDifferential adds random members with random scores (inf,
// -inf, integers, fractions) to a sorted set and reads them back typed
// (Scored, FloatOrNil) under RESP2 and RESP3, against the scores decoded
// by hand from the RESP3 doubles.
func TestScoresDifferential(t *testing.T) {
	servertest.Need(t, Srv())
	Srv().Flush(t)
	rng := rand.New(rand.NewPCG(16, 1))
	c2, c3 := dialConn(t, 2), dialConn(t, 3)
	var b Builder
	want := map[string]float64{}
	for i := range 200 {
		m := "m" + strconv.Itoa(rng.IntN(50))
		var s float64
		switch rng.IntN(6) {
		case 0:
			s = math.Inf(1)
		case 1:
			s = math.Inf(-1)
		case 2:
			s = float64(rng.IntN(1000) - 500)
		default:
			s = (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(30)-15))
		}
		want[m] = s
		c := c2
		if i%2 == 1 {
			c = c3
		}
		decode(t, c, b.Zadd("z", ScoreMember{s, m}).Build(), Int)
	}
	// By hand: RESP3 doubles, one by one.
	for m, s := range want {
		var got float64
		err := c3.DoFunc(context.Background(), resp.Command(nil, "ZSCORE", "z", m), func(v resp.Value) error {
			if v.Type != resp.Double {
				return fmt.Errorf("ZSCORE %s: %v", m, v.Type)
			}
			got = v.Float()
			return nil
		})
		if err != nil || got != s {
			t.Fatalf("ZSCORE %s by hand: %v %v, want %v", m, got, err, s)
		}
		for _, c := range []*conn.Conn{c2, c3} {
			f := decode(t, c, b.Zscore("z", m).Build(), with2(FloatOrNil))
			if !f.OK || f.V != s {
				t.Errorf("ZSCORE %s typed: %v, want %v", m, f, s)
			}
		}
	}
	z2 := decode(t, c2, b.Zrange("z", "0", "-1").Withscores().Build(), Scored)
	z3 := decode(t, c3, b.Zrange("z", "0", "-1").Withscores().Build(), Scored)
	if !reflect.DeepEqual(z2, z3) || len(z3) != len(want) {
		t.Fatalf("ZRANGE WITHSCORES: RESP2 %v, RESP3 %v", z2, z3)
	}
	for _, z := range z3 {
		if want[z.Member] != z.Score {
			t.Errorf("%s: %v, want %v", z.Member, z.Score, want[z.Member])
		}
	}
}

// An Entry keeps its fields in order, repeats included; Value finds the
// first, Map keeps the last, and an entry without fields (deleted while
// pending) has a nil Map.
func TestEntryValueAndMap(t *testing.T) {
	e := Entry{ID: "1-1", Fields: []FieldValue{{Field: "a", Value: "1"}, {Field: "b", Value: "2"}, {Field: "a", Value: "3"}}}
	if v, ok := e.Value("a"); !ok || v != "1" {
		t.Fatalf("Value(a) = %q, %t", v, ok)
	}
	if v, ok := e.Value("c"); ok || v != "" {
		t.Fatalf("Value(c) = %q, %t", v, ok)
	}
	if m := e.Map(); len(m) != 2 || m["a"] != "3" || m["b"] != "2" {
		t.Fatalf("Map = %v", m)
	}
	if m := (Entry{ID: "1-2"}).Map(); m != nil {
		t.Fatalf("Map of an entry without fields = %v", m)
	}
}
