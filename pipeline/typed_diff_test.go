package pipeline_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// op is one random operation, queued typed (its handle read as text by
// the returned func) and raw (as strings, its reply read by flat).
type op struct {
	typed func(b *pipeline.Batch, cb *cmds.Builder) func() string
	raw   []string
}

// flat renders a raw reply independently of package cmds: nil as "nil",
// an error as "err", numbers and text as text, aggregates flattened (a
// map's pairs sorted, see flatPairs), so the RESP2 and RESP3 forms of a
// reply read the same.
func flat(v resp.Value) string {
	switch {
	case v.IsNull():
		return "nil"
	case v.IsError():
		return "err"
	}
	switch v.Type {
	case resp.Integer:
		return strconv.FormatInt(v.Int, 10)
	case resp.Double:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case resp.Boolean:
		return map[bool]string{false: "0", true: "1"}[v.Int != 0]
	case resp.Map:
		return flatPairs(v)
	case resp.Array, resp.Set:
		var parts []string
		for _, e := range v.Elems {
			parts = append(parts, flat(e))
		}
		return strings.Join(parts, " ")
	}
	return string(v.Str)
}

// flatPairs renders a map, or a RESP2 flat array of pairs (HGETALL), as
// its pairs sorted.
func flatPairs(v resp.Value) string {
	if v.IsError() {
		return "err"
	}
	var pairs []string
	for i := 0; i+1 < len(v.Elems); i += 2 {
		pairs = append(pairs, flat(v.Elems[i])+"="+flat(v.Elems[i+1]))
	}
	slices.Sort(pairs)
	return strings.Join(pairs, " ")
}

// text renders a typed value as flat renders its raw reply.
func text[T any](h pipeline.Reply[T]) func() string {
	return func() string {
		v, err := h.Value()
		if err != nil {
			return "err"
		}
		switch x := any(v).(type) {
		case float64:
			return strconv.FormatFloat(x, 'g', -1, 64)
		case bool:
			return map[bool]string{false: "0", true: "1"}[x]
		case []cmds.Z:
			var parts []string
			for _, z := range x {
				parts = append(parts, z.Member, strconv.FormatFloat(z.Score, 'g', -1, 64))
			}
			return strings.Join(parts, " ")
		case map[string]string:
			var pairs []string
			for k, v := range x {
				pairs = append(pairs, k+"="+v)
			}
			slices.Sort(pairs)
			return strings.Join(pairs, " ")
		}
		return fmt.Sprint(v)
	}
}

func textNull[T any](h pipeline.NullReply[T]) func() string {
	return func() string {
		v, ok, err := h.Value()
		switch {
		case err != nil:
			return "err"
		case !ok:
			return "nil"
		}
		return fmt.Sprint(v)
	}
}

// randomOp draws an operation on a few keys and members.
func randomOp(r *rand.Rand) op {
	k := []string{"a", "b", "c"}[r.IntN(3)]
	m := []string{"x", "y", "z"}[r.IntN(3)]
	n := int64(r.IntN(20) - 5)
	f := float64(r.IntN(40)-10) / 4
	fs := strconv.FormatFloat(f, 'f', -1, 64)
	switch r.IntN(10) {
	case 0:
		return op{func(b *pipeline.Batch, cb *cmds.Builder) func() string {
			return text(b.Int(cb.Incrby("n:"+k, n).Build()))
		},
			[]string{"INCRBY", "n:" + k, strconv.FormatInt(n, 10)}}
	case 1:
		return op{func(b *pipeline.Batch, cb *cmds.Builder) func() string {
			return text(b.Float(cb.Incrbyfloat("f:"+k, f).Build()))
		}, []string{"INCRBYFLOAT", "f:" + k, fs}}
	case 2:
		key := []string{"n:", "f:", "z:"}[r.IntN(3)] + k // GET of a sorted set: WRONGTYPE
		return op{func(b *pipeline.Batch, cb *cmds.Builder) func() string {
			return textNull(b.String(cb.Get(key).Build()))
		}, []string{"GET", key}}
	case 3:
		return op{func(b *pipeline.Batch, cb *cmds.Builder) func() string {
			return text(b.Int(cb.Zadd("z:"+k, cmds.ScoreMember{Score: f, Member: m}).Build()))
		}, []string{"ZADD", "z:" + k, fs, m}}
	case 4:
		return op{func(b *pipeline.Batch, cb *cmds.Builder) func() string {
			return textNull(b.FloatOrNil(cb.Zscore("z:"+k, m).Build()))
		}, []string{"ZSCORE", "z:" + k, m}}
	case 5:
		return op{func(b *pipeline.Batch, cb *cmds.Builder) func() string {
			return text(b.Scored(cb.Zrange("z:"+k, "0", "-1").Rev().Withscores().Build()))
		}, []string{"ZRANGE", "z:" + k, "0", "-1", "REV", "WITHSCORES"}}
	case 6:
		return op{func(b *pipeline.Batch, cb *cmds.Builder) func() string {
			return textNull(b.IntOrNil(cb.Zrank("z:"+k, m).Build()))
		}, []string{"ZRANK", "z:" + k, m}}
	case 7:
		return op{func(b *pipeline.Batch, cb *cmds.Builder) func() string {
			return text(b.Int(cb.Hset("h:"+k, cmds.FieldValue{Field: m, Value: fs}).Build()))
		}, []string{"HSET", "h:" + k, m, fs}}
	case 8:
		return op{func(b *pipeline.Batch, cb *cmds.Builder) func() string {
			return text(b.StringMap(cb.Hgetall("h:" + k).Build()))
		},
			[]string{"HGETALL", "h:" + k}}
	default:
		return op{func(b *pipeline.Batch, cb *cmds.Builder) func() string {
			return text(b.Bool(cb.Hexists("h:"+k, m).Build()))
		},
			[]string{"HEXISTS", "h:" + k, m}}
	}
}

// The same random operations, typed and raw, on a flushed server each:
// the typed values equal the raw replies, under RESP2 and RESP3, wrong
// types (a server error) included.
func TestTypedBatchDifferential(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(proto), 16))
			ops := make([]op, 300)
			for i := range ops {
				ops[i] = randomOp(r)
			}
			c := setup(t, conn.Options{Protocol: proto})
			var typed pipeline.Batch
			var cb cmds.Builder
			reads := make([]func() string, len(ops))
			for i, o := range ops {
				reads[i] = o.typed(&typed, &cb)
			}
			require.NoError(t, typed.Exec(testCtx(t), c))

			srv.Flush(t)
			var raw pipeline.Batch
			for _, o := range ops {
				raw.Add(o.raw...)
			}
			require.NoError(t, raw.Exec(testCtx(t), c))
			seen := map[string]int{}
			for i, o := range ops {
				want := flat(raw.Reply(i))
				seen[want]++
				if o.raw[0] == "HGETALL" {
					want = flatPairs(raw.Reply(i))
				}
				require.Equal(t, want, reads[i](), "op %d: %v", i, o.raw)
			}
			require.Positive(t, seen["err"], "no server error was drawn")
			require.Positive(t, seen["nil"], "no nil was drawn")
		})
	}
}
