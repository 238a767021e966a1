package kv_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/kv"
)

// entry is one key of the model: exactly one of its fields is set.
type entry struct {
	str  *string
	hash map[string]string
	list []string
	set  map[string]bool
	zset map[string]float64
	ttl  bool // an expiry was set (an hour: it never passes in a test)
}

// model is what the server should hold.
type model map[string]*entry

const wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

// step is one random helper call: it calls the helper, predicts the
// outcome from the model (and updates it), and returns both, rendered
// alike, for comparison.
type step func(ctx context.Context, s conn.Sender, m model, r *rand.Rand) (op string, got, want any)

// errText renders an error for comparison: the server's text.
func errText(err error) any {
	if err == nil {
		return nil
	}
	return "error: " + err.Error()
}

// res renders a result and its error.
func res(v any, err error) any {
	if err != nil {
		return errText(err)
	}
	return v
}

// kind returns the model's entry for key if it is of the kind want says
// (its field is set), a new one if key is missing, or nil for the wrong
// kind.
func (m model) kind(key string, is func(*entry) bool, mk func() *entry) (*entry, bool) {
	e, ok := m[key]
	if !ok {
		return mk(), false
	}
	if !is(e) {
		return nil, true
	}
	return e, true
}

// drop removes a container the last element left.
func (m model) drop(key string) {
	e := m[key]
	if e != nil && (e.hash != nil && len(e.hash) == 0 || e.list != nil && len(e.list) == 0 ||
		e.set != nil && len(e.set) == 0 || e.zset != nil && len(e.zset) == 0) {
		delete(m, key)
	}
}

var (
	isStr  = func(e *entry) bool { return e.str != nil }
	isHash = func(e *entry) bool { return e.hash != nil }
	isList = func(e *entry) bool { return e.list != nil }
	isSet  = func(e *entry) bool { return e.set != nil }
	isZSet = func(e *entry) bool { return e.zset != nil }
)

func key(r *rand.Rand) string   { return "k" + strconv.Itoa(r.IntN(6)) }
func field(r *rand.Rand) string { return "f" + strconv.Itoa(r.IntN(4)) }
func value(r *rand.Rand) string {
	if r.IntN(5) == 0 {
		return strconv.Itoa(r.IntN(100) - 50) // numbers, for INCR and HINCRBY
	}
	return []string{"", "a", "b c", "\x00\xff", "é"}[r.IntN(5)]
}

// rangeOf is LRANGE's and ZRANGE's index arithmetic.
func rangeOf(n, start, stop int) (int, int) {
	if start < 0 {
		start = max(n+start, 0)
	}
	if stop < 0 {
		stop = n + stop
	}
	stop = min(stop, n-1)
	if start > stop {
		return 0, 0
	}
	return start, stop + 1
}

// zsorted orders a sorted set's members by score, then member.
func zsorted(z map[string]float64) []kv.Z {
	out := make([]kv.Z, 0, len(z))
	for m, s := range z {
		out = append(out, kv.Z{Member: m, Score: s})
	}
	slices.SortFunc(out, func(a, b kv.Z) int { return cmp.Or(cmp.Compare(a.Score, b.Score), cmp.Compare(a.Member, b.Member)) })
	return out
}

var steps = []step{
	func(ctx context.Context, s conn.Sender, m model, r *rand.Rand) (string, any, any) {
		k, v := key(r), value(r)
		m[k] = &entry{str: &v}
		return "Set " + k, errText(kv.Set(ctx, s, k, v)), nil
	},
	func(ctx context.Context, s conn.Sender, m model, r *rand.Rand) (string, any, any) {
		k, v := key(r), value(r)
		_, exists := m[k]
		if !exists {
			m[k] = &entry{str: &v}
		}
		ok, err := kv.SetWith(ctx, s, k, v, kv.SetOptions{NX: true})
		return "SetWith NX " + k, res(ok, err), !exists
	},
	func(ctx context.Context, s conn.Sender, m model, r *rand.Rand) (string, any, any) {
		k := key(r)
		v, ok, err := kv.Get(ctx, s, k)
		e, exists := m.kind(k, isStr, func() *entry { return nil })
		switch {
		case exists && e == nil:
			return "Get " + k, res(pair{v, ok}, err), "error: " + wrongType
		case !exists:
			return "Get " + k, res(pair{v, ok}, err), pair{"", false}
		}
		return "Get " + k, res(pair{v, ok}, err), pair{*e.str, true}
	},
	func(ctx context.Context, s conn.Sender, m model, r *rand.Rand) (string, any, any) {
		k, by := key(r), int64(r.IntN(7)-3)
		n, err := kv.IncrBy(ctx, s, k, by)
		e, exists := m.kind(k, isStr, func() *entry { z := "0"; return &entry{str: &z} })
		if e == nil {
			return "IncrBy " + k, res(n, err), "error: " + wrongType
		}
		cur, perr := strconv.ParseInt(*e.str, 10, 64)
		if perr != nil || *e.str != strconv.FormatInt(cur, 10) {
			return "IncrBy " + k, res(n, err), "error: ERR value is not an integer or out of range"
		}
		next := strconv.FormatInt(cur+by, 10)
		e.str = &next
		if !exists {
			m[k] = e
		}
		return "IncrBy " + k, res(n, err), cur + by
	},
	func(ctx context.Context, s conn.Sender, m model, r *rand.Rand) (string, any, any) {
		a, b := key(r), key(r)
		want := int64(0)
		for _, k := range []string{a, b} {
			if _, ok := m[k]; ok {
				want++
				delete(m, k)
			}
		}
		n, err := kv.Del(ctx, s, a, b)
		return "Del " + a + " " + b, res(n, err), want
	},
	func(ctx context.Context, s conn.Sender, m model, r *rand.Rand) (string, any, any) {
		keys := []string{key(r), key(r), key(r)}
		want := map[string]string{}
		for _, k := range keys {
			if e, ok := m[k]; ok && e.str != nil {
				want[k] = *e.str
			}
		}
		got, err := kv.MGet(ctx, s, keys...)
		return fmt.Sprint("MGet ", keys), res(got, err), want
	},
	func(ctx context.Context, s conn.Sender, m model, r *rand.Rand) (string, any, any) {
		k, f, v := key(r), field(r), value(r)
		ok, err := kv.HSet(ctx, s, k, f, v)
		e, exists := m.kind(k, isHash, func() *entry { return &entry{hash: map[string]string{}} })
		if e == nil {
			return "HSet " + k, res(ok, err), "error: " + wrongType
		}
		_, had := e.hash[f]
		e.hash[f] = v
		if !exists {
			m[k] = e
		}
		return "HSet " + k + " " + f, res(ok, err), !had
	},
	func(ctx context.Context, s conn.Sender, m model, r *rand.Rand) (string, any, any) {
		k := key(r)
		got, err := kv.HGetAll(ctx, s, k)
		e, _ := m.kind(k, isHash, func() *entry { return &entry{hash: map[string]string{}} })
		if e == nil {
			return "HGetAll " + k, res(got, err), "error: " + wrongType
		}
		return "HGetAll " + k, res(got, err), maps.Clone(e.hash)
	},
	func(ctx context.Context, s conn.Sender, m model, r *rand.Rand) (string, any, any) {
		k, f := key(r), field(r)
		v, ok, err := kv.HGet(ctx, s, k, f)
		e, _ := m.kind(k, isHash, func() *entry { return &entry{hash: map[string]string{}} })
		if e == nil {
			return "HGet " + k, res(pair{v, ok}, err), "error: " + wrongType
		}
		w, has := e.hash[f]
		return "HGet " + k + " " + f, res(pair{v, ok}, err), pair{w, has}
	},
	func(ctx context.Context, s conn.Sender, m model, r *rand.Rand) (string, any, any) {
		k, f := key(r), field(r)
		n, err := kv.HDel(ctx, s, k, f)
		e, _ := m.kind(k, isHash, func() *entry { return &entry{hash: map[string]string{}} })
		if e == nil {
			return "HDel " + k, res(n, err), "error: " + wrongType
		}
		_, had := e.hash[f]
		delete(e.hash, f)
		m.drop(k)
		return "HDel " + k + " " + f, res(n, err), map[bool]int64{true: 1}[had]
	},
	func(ctx context.Context, s conn.Sender, m model, r *rand.Rand) (string, any, any) {
		k, v, left := key(r), value(r), r.IntN(2) == 0
		var n int64
		var err error
		if left {
			n, err = kv.LPush(ctx, s, k, v)
		} else {
			n, err = kv.RPush(ctx, s, k, v)
		}
		e, exists := m.kind(k, isList, func() *entry { return &entry{list: []string{}} })
		if e == nil {
			return "Push " + k, res(n, err), "error: " + wrongType
		}
		if left {
			e.list = append([]string{v}, e.list...)
		} else {
			e.list = append(e.list, v)
		}
		if !exists {
			m[k] = e
		}
		return "Push " + k, res(n, err), int64(len(e.list))
	},
	func(ctx context.Context, s conn.Sender, m model, r *rand.Rand) (string, any, any) {
		k, left := key(r), r.IntN(2) == 0
		var v string
		var ok bool
		var err error
		if left {
			v, ok, err = kv.LPop(ctx, s, k)
		} else {
			v, ok, err = kv.RPop(ctx, s, k)
		}
		e, exists := m.kind(k, isList, func() *entry { return &entry{list: []string{}} })
		switch {
		case e == nil:
			return "Pop " + k, res(pair{v, ok}, err), "error: " + wrongType
		case !exists:
			return "Pop " + k, res(pair{v, ok}, err), pair{"", false}
		}
		var w string
		if left {
			w, e.list = e.list[0], e.list[1:]
		} else {
			w, e.list = e.list[len(e.list)-1], e.list[:len(e.list)-1]
		}
		m.drop(k)
		return "Pop " + k, res(pair{v, ok}, err), pair{w, true}
	},
	func(ctx context.Context, s conn.Sender, m model, r *rand.Rand) (string, any, any) {
		k, start, stop := key(r), r.IntN(7)-3, r.IntN(7)-3
		got, err := kv.LRange(ctx, s, k, int64(start), int64(stop))
		e, _ := m.kind(k, isList, func() *entry { return &entry{list: []string{}} })
		if e == nil {
			return "LRange " + k, res(got, err), "error: " + wrongType
		}
		i, j := rangeOf(len(e.list), start, stop)
		return fmt.Sprintf("LRange %s %d %d", k, start, stop), res(got, err), append([]string{}, e.list[i:j]...)
	},
	func(ctx context.Context, s conn.Sender, m model, r *rand.Rand) (string, any, any) {
		k, v, add := key(r), value(r), r.IntN(3) > 0
		var n int64
		var err error
		if add {
			n, err = kv.SAdd(ctx, s, k, v)
		} else {
			n, err = kv.SRem(ctx, s, k, v)
		}
		e, exists := m.kind(k, isSet, func() *entry { return &entry{set: map[string]bool{}} })
		if e == nil {
			return "SAdd/SRem " + k, res(n, err), "error: " + wrongType
		}
		had := e.set[v]
		if add {
			e.set[v] = true
			if !exists {
				m[k] = e
			}
			return "SAdd " + k, res(n, err), map[bool]int64{false: 1}[had]
		}
		delete(e.set, v)
		m.drop(k)
		return "SRem " + k, res(n, err), map[bool]int64{true: 1}[had]
	},
	func(ctx context.Context, s conn.Sender, m model, r *rand.Rand) (string, any, any) {
		k, v := key(r), value(r)
		got, err := kv.SMembers(ctx, s, k)
		in, err2 := kv.SIsMember(ctx, s, k, v)
		slices.Sort(got)
		e, _ := m.kind(k, isSet, func() *entry { return &entry{set: map[string]bool{}} })
		if e == nil {
			return "SMembers " + k, res([]any{got, in}, cmp.Or(err, err2)), "error: " + wrongType
		}
		return "SMembers/SIsMember " + k, res([]any{got, in}, cmp.Or(err, err2)), []any{append([]string{}, slices.Sorted(maps.Keys(e.set))...), e.set[v]}
	},
	func(ctx context.Context, s conn.Sender, m model, r *rand.Rand) (string, any, any) {
		k, mem, sc := key(r), value(r), float64(r.IntN(5))
		n, err := kv.ZAdd(ctx, s, k, kv.Z{Member: mem, Score: sc})
		e, exists := m.kind(k, isZSet, func() *entry { return &entry{zset: map[string]float64{}} })
		if e == nil {
			return "ZAdd " + k, res(n, err), "error: " + wrongType
		}
		_, had := e.zset[mem]
		e.zset[mem] = sc
		if !exists {
			m[k] = e
		}
		return "ZAdd " + k, res(n, err), map[bool]int64{false: 1}[had]
	},
	func(ctx context.Context, s conn.Sender, m model, r *rand.Rand) (string, any, any) {
		k := key(r)
		got, err := kv.ZRangeWithScores(ctx, s, k, 0, -1)
		e, _ := m.kind(k, isZSet, func() *entry { return &entry{zset: map[string]float64{}} })
		if e == nil {
			return "ZRange " + k, res(got, err), "error: " + wrongType
		}
		return "ZRangeWithScores " + k, res(got, err), zsorted(e.zset)
	},
	func(ctx context.Context, s conn.Sender, m model, r *rand.Rand) (string, any, any) {
		k, count := key(r), int64(1+r.IntN(2))
		got, err := kv.ZPopMin(ctx, s, k, count)
		e, _ := m.kind(k, isZSet, func() *entry { return &entry{zset: map[string]float64{}} })
		if e == nil {
			return "ZPopMin " + k, res(got, err), "error: " + wrongType
		}
		want := zsorted(e.zset)
		want = want[:min(int(count), len(want))]
		for _, z := range want {
			delete(e.zset, z.Member)
		}
		m.drop(k)
		return "ZPopMin " + k, res(got, err), want
	},
	func(ctx context.Context, s conn.Sender, m model, r *rand.Rand) (string, any, any) {
		k, mem := key(r), value(r)
		f, ok, err := kv.ZScore(ctx, s, k, mem)
		e, _ := m.kind(k, isZSet, func() *entry { return &entry{zset: map[string]float64{}} })
		if e == nil {
			return "ZScore " + k, res(pair{f, ok}, err), "error: " + wrongType
		}
		w, has := e.zset[mem]
		return "ZScore " + k, res(pair{f, ok}, err), pair{w, has}
	},
	func(ctx context.Context, s conn.Sender, m model, r *rand.Rand) (string, any, any) {
		k := key(r)
		ok, err := kv.Expire(ctx, s, k, time.Hour)
		e, exists := m[k]
		if exists {
			e.ttl = true
		}
		return "Expire " + k, res(ok, err), exists
	},
	func(ctx context.Context, s conn.Sender, m model, r *rand.Rand) (string, any, any) {
		k := key(r)
		d, ok, err := kv.TTL(ctx, s, k)
		e, exists := m[k]
		got := res(pair{d > 59*time.Minute, ok}, err)
		switch {
		case !exists:
			return "TTL " + k, res(pair{d, ok}, err), pair{time.Duration(0), false}
		case !e.ttl:
			return "TTL " + k, res(pair{d, ok}, err), pair{kv.NoTTL, true}
		}
		return "TTL " + k, got, pair{true, true}
	},
}

// A 2,000-step random mix of helper calls, each checked against an
// in-test model of the data (wrong-type errors included), under RESP3 on
// a Client and RESP2 on a Conn; the database is compared with the model
// at the end.
func TestRandomMixAgainstModel(t *testing.T) {
	for i, tg := range targets(t) {
		if tg.name != "RESP3/Client" && tg.name != "RESP2/Conn" {
			continue
		}
		t.Run(tg.name, func(t *testing.T) {
			tg.server.Flush(t)
			ctx := testCtx(t)
			seed := uint64(20261130 + i)
			r := rand.New(rand.NewPCG(seed, seed))
			m := model{}
			for n := range 2000 {
				op, got, want := steps[r.IntN(len(steps))](ctx, tg.sender, m, r)
				require.Equal(t, want, got, "step %d (seed %d): %s", n, seed, op)
			}
			var keys []string
			for k, err := range kv.Scan(ctx, tg.sender, kv.ScanOptions{}) {
				require.NoError(t, err)
				keys = append(keys, k)
			}
			slices.Sort(keys)
			require.Equal(t, slices.Sorted(maps.Keys(m)), keys, "the keys at the end")
			for k, e := range m {
				typ, err := tg.server.Do("TYPE", k)
				require.NoError(t, err)
				want := map[bool]string{e.str != nil: "string"}[true] + map[bool]string{e.hash != nil: "hash"}[true] +
					map[bool]string{e.list != nil: "list"}[true] + map[bool]string{e.set != nil: "set"}[true] +
					map[bool]string{e.zset != nil: "zset"}[true]
				require.Equal(t, want, typ, "type of %s", k)
			}
		})
	}
}
