package cmds_test

import (
	"context"
	"fmt"
	. "github.com/echomq/echomq-go/cmds"
	"math/rand/v2"
	"reflect"
	"sort"
	"strconv"
	"testing"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
)

// TestRandomTypedVsRaw runs random operations twice, on two sets of keys:
// through the typed builders and decoders, and as raw string commands
// (resp.Command) whose replies are decoded by hand here, with code of its
// own. Every result must be the same Go value, under RESP2 and RESP3.
func TestRandomTypedVsRaw(t *testing.T) {
	servertest.Need(t, Srv())
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			Srv().Flush(t)
			c := dialConn(t, proto)
			rng := rand.New(rand.NewPCG(uint64(proto), 16))
			var b Builder
			for step := range 600 {
				k := strconv.Itoa(rng.IntN(4))
				f := "f" + strconv.Itoa(rng.IntN(3))
				m := "m" + strconv.Itoa(rng.IntN(5))
				n := int64(rng.IntN(20) - 10)
				sc := float64(rng.IntN(40)-20) / 4
				var typed, raw any
				switch op := rng.IntN(12); op {
				case 0:
					typed = decode(t, c, b.Set("t:s"+k, f).Build(), OKOrNil)
					raw = rawDo(t, c, func(v resp.Value) any { return v.Type == resp.SimpleString && v.Equal("OK") }, "SET", "r:s"+k, f)
				case 1:
					typed = decode(t, c, b.Get("t:s"+k).Build(), with2(String))
					raw = rawDo(t, c, func(v resp.Value) any {
						if v.IsNull() {
							return opt[string]{}
						}
						return opt[string]{v.Text(), true}
					}, "GET", "r:s"+k)
				case 2:
					typed = errText(func() (any, error) {
						return decodeErr(c, b.Incrby("t:n"+k, n).Build(), Int)
					})
					raw = rawDo(t, c, func(v resp.Value) any {
						if v.IsError() {
							return "error: " + v.Text()
						}
						return v.Int
					}, "INCRBY", "r:n"+k, strconv.FormatInt(n, 10))
				case 3:
					typed = decode(t, c, b.Hset("t:h"+k, FieldValue{f, m}).Build(), Int)
					raw = rawDo(t, c, func(v resp.Value) any { return v.Int }, "HSET", "r:h"+k, f, m)
				case 4:
					typed = decode(t, c, b.Hgetall("t:h"+k).Build(), StringMap)
					raw = rawDo(t, c, func(v resp.Value) any {
						out := map[string]string{}
						for i := 0; i+1 < len(v.Elems); i += 2 { // a map's pairs or RESP2's flat array alike
							out[v.Elems[i].Text()] = v.Elems[i+1].Text()
						}
						return out
					}, "HGETALL", "r:h"+k)
				case 5:
					typed = decode(t, c, b.Hmget("t:h"+k, "f0", "f1", "f2").Build(), NullStrings)
					raw = rawDo(t, c, func(v resp.Value) any {
						var out []NullString
						for _, e := range v.Elems {
							out = append(out, NullString{e.Text(), !e.IsNull()})
						}
						return out
					}, "HMGET", "r:h"+k, "f0", "f1", "f2")
				case 6:
					typed = decode(t, c, b.Zadd("t:z"+k, ScoreMember{sc, m}).Build(), Int)
					raw = rawDo(t, c, func(v resp.Value) any { return v.Int }, "ZADD", "r:z"+k, strconv.FormatFloat(sc, 'f', -1, 64), m)
				case 7:
					typed = decode(t, c, b.Zrange("t:z"+k, "0", "-1").Withscores().Build(), Scored)
					raw = rawDo(t, c, func(v resp.Value) any { return handScored(t, v) }, "ZRANGE", "r:z"+k, "0", "-1", "WITHSCORES")
				case 8:
					typed = decode(t, c, b.Zincrby("t:z"+k, sc, m).Build(), Float)
					raw = rawDo(t, c, func(v resp.Value) any { return handFloat(t, v) }, "ZINCRBY", "r:z"+k, strconv.FormatFloat(sc, 'f', -1, 64), m)
				case 9:
					typed = decode(t, c, b.Zscore("t:z"+k, m).Build(), with2(FloatOrNil))
					raw = rawDo(t, c, func(v resp.Value) any {
						if v.IsNull() {
							return opt[float64]{}
						}
						return opt[float64]{handFloat(t, v), true}
					}, "ZSCORE", "r:z"+k, m)
				case 10:
					typed = decode(t, c, b.Rpush("t:l"+k, m).Build(), Int)
					raw = rawDo(t, c, func(v resp.Value) any { return v.Int }, "RPUSH", "r:l"+k, m)
				case 11:
					typed = decode(t, c, b.Lrange("t:l"+k, 0, -1).Build(), Strings)
					raw = rawDo(t, c, func(v resp.Value) any {
						var out []string
						for _, e := range v.Elems {
							out = append(out, e.Text())
						}
						return out
					}, "LRANGE", "r:l"+k, "0", "-1")
				}
				if !reflect.DeepEqual(canon(typed), canon(raw)) {
					t.Fatalf("step %d: typed %#v, raw %#v", step, typed, raw)
				}
			}
		})
	}
}

// rawDo sends a command given as strings and decodes its reply by hand.
func rawDo(t *testing.T, c *conn.Conn, dec func(resp.Value) any, args ...string) any {
	t.Helper()
	var out any
	err := c.DoFunc(context.Background(), resp.Command(nil, args...), func(v resp.Value) error {
		out = dec(v)
		return nil
	})
	var se *resp.ServerError
	if err != nil && !asServer(err, &se) {
		t.Fatal(err)
	}
	if se != nil {
		return "error: " + se.Msg
	}
	return out
}

func asServer(err error, se **resp.ServerError) bool {
	e, ok := err.(*resp.ServerError)
	if ok {
		*se = e
	}
	return ok
}

func decodeErr[T any](c *conn.Conn, cmd Command, fn func(resp.Value) (T, error)) (T, error) {
	var out T
	err := c.DoFunc(context.Background(), cmd.Cmd(), func(v resp.Value) error {
		var err error
		out, err = fn(v)
		return err
	})
	return out, err
}

func errText(fn func() (any, error)) any {
	v, err := fn()
	if err != nil {
		return "error: " + err.Error()
	}
	return v
}

// handFloat reads a score: a RESP3 double, or RESP2's text of one.
func handFloat(t *testing.T, v resp.Value) float64 {
	if v.Type == resp.Double {
		return v.Float()
	}
	f, err := strconv.ParseFloat(v.Text(), 64)
	if err != nil {
		t.Fatalf("score %q: %v", v.Text(), err)
	}
	return f
}

// handScored reads WITHSCORES: RESP3 pairs, RESP2 one flat array.
func handScored(t *testing.T, v resp.Value) []Z {
	var out []Z
	if len(v.Elems) > 0 && v.Elems[0].Type == resp.Array {
		for _, p := range v.Elems {
			out = append(out, Z{p.Elems[0].Text(), handFloat(t, p.Elems[1])})
		}
		return out
	}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		out = append(out, Z{v.Elems[i].Text(), handFloat(t, v.Elems[i+1])})
	}
	return out
}

// canon makes empty and nil slices and maps alike.
func canon(v any) any {
	switch x := v.(type) {
	case []string:
		if len(x) == 0 {
			return []string(nil)
		}
	case []Z:
		if len(x) == 0 {
			return []Z(nil)
		}
	case map[string]string:
		if len(x) == 0 {
			return map[string]string(nil)
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
	}
	return v
}
