package cmds

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/resp"
)

// reorderOp is one method of a command's builder: the first slot it
// opens, whether it adds to that slot (multi) or replaces what an
// earlier call gave it, and the call, whose arguments vary with v.
type reorderOp[C any] struct {
	name  string
	slot  int
	multi bool
	do    func(c C, v int) C
}

// reorderCase is a command's builder and methods.
type reorderCase[C any] struct {
	name  string
	start func(b *Builder, v int) C
	build func(C) Command
	ops   []reorderOp[C]
}

// call is one method call of a random sequence.
type call struct{ op, v int }

// TestRandomOptionOrder: a command built with its options in a random
// order, some given more than once (the last call of a slot wins, a
// repeated slot adds in the order given), with a Builder reused across
// commands, is the command built with the same calls in syntax order on
// a fresh Builder: the same bytes, Err, Args, keys and their positions,
// shard channels, Slot and Fact.
func TestRandomOptionOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var shared Builder // reused by every case, so leftovers would show
	runReorder(t, rng, &shared, reorderCase[Set]{
		name:  "SET",
		start: func(b *Builder, v int) Set { return b.Set("k"+strconv.Itoa(v), strings.Repeat("v", v)) },
		build: Set.Build,
		ops: []reorderOp[Set]{
			{"NX", 2, false, func(c Set, _ int) Set { return c.Nx() }},
			{"XX", 2, false, func(c Set, _ int) Set { return c.Xx() }},
			{"GET", 3, false, func(c Set, _ int) Set { return c.Get() }},
			{"EX", 4, false, func(c Set, v int) Set { return c.Ex(time.Duration(v*37) * time.Second) }},
			{"PX", 4, false, func(c Set, v int) Set { return c.Px(time.Duration(v) * time.Millisecond) }},
			{"EXAT", 4, false, func(c Set, v int) Set { return c.Exat(time.Unix(int64(v)*1e6, 0)) }},
			{"KEEPTTL", 4, false, func(c Set, _ int) Set { return c.Keepttl() }},
		},
	})
	runReorder(t, rng, &shared, reorderCase[Zadd]{
		name: "ZADD",
		start: func(b *Builder, v int) Zadd {
			m := make([]ScoreMember, 1+v%4)
			for i := range m {
				m[i] = ScoreMember{Score: float64(i*v) / 4, Member: "m" + strconv.Itoa(i)}
			}
			return b.Zadd("z"+strconv.Itoa(v), m...)
		},
		build: Zadd.Build,
		ops: []reorderOp[Zadd]{
			{"NX", 1, false, func(c Zadd, _ int) Zadd { return c.Nx() }},
			{"XX", 1, false, func(c Zadd, _ int) Zadd { return c.Xx() }},
			{"GT", 2, false, func(c Zadd, _ int) Zadd { return c.Gt() }},
			{"LT", 2, false, func(c Zadd, _ int) Zadd { return c.Lt() }},
			{"CH", 3, false, func(c Zadd, _ int) Zadd { return c.Ch() }},
			{"INCR", 4, false, func(c Zadd, _ int) Zadd { return c.Incr() }},
		},
	})
	runReorder(t, rng, &shared, reorderCase[Sort]{
		name:  "SORT",
		start: func(b *Builder, v int) Sort { return b.Sort("{s}list" + strconv.Itoa(v)) },
		build: Sort.Build,
		ops: []reorderOp[Sort]{
			{"BY", 1, false, func(c Sort, v int) Sort { return c.By("w_*" + strconv.Itoa(v)) }},
			{"LIMIT", 2, false, func(c Sort, v int) Sort { return c.Limit(int64(v), int64(v*1000)) }},
			{"GET", 3, false, func(c Sort, v int) Sort { return c.Get(slices.Repeat([]string{"g_*"}, v%3)...) }},
			{"ASC", 4, false, func(c Sort, _ int) Sort { return c.Asc() }},
			{"DESC", 4, false, func(c Sort, _ int) Sort { return c.Desc() }},
			{"ALPHA", 5, false, func(c Sort, _ int) Sort { return c.Alpha() }},
			{"STORE", 6, false, func(c Sort, v int) Sort { return c.Store("{s}dst" + strconv.Itoa(v)) }},
		},
	})
	runReorder(t, rng, &shared, reorderCase[Xadd]{
		name: "XADD",
		start: func(b *Builder, v int) Xadd {
			return b.Xadd("x", FieldValue{"f", strconv.Itoa(v)}, FieldValue{"g", "h"})
		},
		build: Xadd.Build,
		ops: []reorderOp[Xadd]{
			{"NOMKSTREAM", 1, false, func(c Xadd, _ int) Xadd { return c.Nomkstream() }},
			{"TRIM", 2, false, func(c Xadd, v int) Xadd { return c.Trim(TrimStrategy(1+v%2), strconv.Itoa(v*100)) }},
			{"=", 4, false, func(c Xadd, _ int) Xadd { return c.TrimEqual() }},
			{"~", 4, false, func(c Xadd, _ int) Xadd { return c.TrimApproximately() }},
			{"LIMIT", 6, false, func(c Xadd, v int) Xadd { return c.TrimLimit(int64(v)) }},
			{"*", 7, false, func(c Xadd, _ int) Xadd { return c.AutoId() }},
			{"ID", 7, false, func(c Xadd, v int) Xadd { return c.Id(strconv.Itoa(v) + "-1") }},
		},
	})
	runReorder(t, rng, &shared, reorderCase[Xread]{
		name: "XREAD",
		start: func(b *Builder, v int) Xread {
			keys := []string{"a", "b", "c"}[:1+v%3]
			return b.Xread(keys, slices.Repeat([]string{"0-" + strconv.Itoa(v)}, len(keys))...)
		},
		build: Xread.Build,
		ops: []reorderOp[Xread]{
			{"COUNT", 0, false, func(c Xread, v int) Xread { return c.Count(int64(v)) }},
			{"BLOCK", 1, false, func(c Xread, v int) Xread { return c.Block(time.Duration(v*250) * time.Millisecond) }},
		},
	})
	runReorder(t, rng, &shared, reorderCase[Migrate]{
		name: "MIGRATE",
		start: func(b *Builder, v int) Migrate {
			return b.Migrate("127.0.0.1", int64(6379+v), int64(v%16), time.Duration(v)*time.Second)
		},
		build: Migrate.Build,
		ops: []reorderOp[Migrate]{
			{"key", 2, false, func(c Migrate, v int) Migrate { return c.Key("{m}k" + strconv.Itoa(v)) }},
			{"\"\"", 2, false, func(c Migrate, _ int) Migrate { return c.EmptyString() }},
			{"COPY", 5, false, func(c Migrate, _ int) Migrate { return c.Copy() }},
			{"REPLACE", 6, false, func(c Migrate, _ int) Migrate { return c.Replace() }},
			{"AUTH", 7, false, func(c Migrate, v int) Migrate { return c.Auth(strings.Repeat("p", v)) }},
			{"AUTH2", 7, false, func(c Migrate, v int) Migrate { return c.Auth2("u", strconv.Itoa(v)) }},
			{"KEYS", 8, false, func(c Migrate, v int) Migrate {
				return c.Keys(slices.Repeat([]string{"{m}k" + strconv.Itoa(v)}, v%4)...)
			}},
		},
	})
	runReorder(t, rng, &shared, reorderCase[Georadius]{
		name:  "GEORADIUS",
		start: func(b *Builder, v int) Georadius { return b.Georadius("{g}geo", 13.5, 38.25, float64(v), Kilometers) },
		build: Georadius.Build,
		ops: []reorderOp[Georadius]{
			{"WITHCOORD", 5, false, func(c Georadius, _ int) Georadius { return c.Withcoord() }},
			{"WITHDIST", 6, false, func(c Georadius, _ int) Georadius { return c.Withdist() }},
			{"WITHHASH", 7, false, func(c Georadius, _ int) Georadius { return c.Withhash() }},
			{"COUNT", 8, false, func(c Georadius, v int) Georadius { return c.Count(int64(v), v%2 == 0) }},
			{"ASC", 9, false, func(c Georadius, _ int) Georadius { return c.Asc() }},
			{"DESC", 9, false, func(c Georadius, _ int) Georadius { return c.Desc() }},
			{"STORE", 10, false, func(c Georadius, v int) Georadius { return c.Store("{g}s" + strconv.Itoa(v)) }},
			{"STOREDIST", 10, false, func(c Georadius, v int) Georadius { return c.Storedist("{g}d" + strconv.Itoa(v)) }},
		},
	})
	runReorder(t, rng, &shared, reorderCase[ClientKill]{
		name:  "CLIENT KILL",
		start: func(b *Builder, _ int) ClientKill { return b.ClientKill() },
		build: ClientKill.Build,
		ops: []reorderOp[ClientKill]{
			{"ID", 0, true, func(c ClientKill, v int) ClientKill { return c.Id(int64(v)) }},
			{"USER", 0, true, func(c ClientKill, v int) ClientKill { return c.User("u" + strconv.Itoa(v)) }},
			{"MAXAGE", 0, true, func(c ClientKill, v int) ClientKill { return c.Maxage(time.Duration(v) * time.Second) }},
		},
	})
	runReorder(t, rng, &shared, reorderCase[Bitfield]{
		name:  "BITFIELD",
		start: func(b *Builder, v int) Bitfield { return b.Bitfield("bf" + strconv.Itoa(v)) },
		build: Bitfield.Build,
		ops: []reorderOp[Bitfield]{
			{"GET", 1, true, func(c Bitfield, v int) Bitfield { return c.Get("u8", int64(v)) }},
			{"OVERFLOW", 1, true, func(c Bitfield, _ int) Bitfield { return c.Overflow(Sat) }},
			{"INCRBY", 1, true, func(c Bitfield, v int) Bitfield { return c.Incrby("i5", int64(v), -int64(v)) }},
		},
	})
	runReorder(t, rng, &shared, reorderCase[Zinterstore]{
		name: "ZINTERSTORE",
		start: func(b *Builder, v int) Zinterstore {
			return b.Zinterstore("{z}d", slices.Repeat([]string{"{z}a"}, 1+v%3)...)
		},
		build: Zinterstore.Build,
		ops: []reorderOp[Zinterstore]{
			{"WEIGHTS", 2, false, func(c Zinterstore, v int) Zinterstore { return c.Weights(float64(v), 0.5) }},
			{"SUM", 3, false, func(c Zinterstore, _ int) Zinterstore { return c.AggregateSum() }},
			{"MAX", 3, false, func(c Zinterstore, _ int) Zinterstore { return c.AggregateMax() }},
		},
	})
}

// runReorder builds rc's command with random sequences of calls on
// shared and compares each with the calls in syntax order on a fresh
// Builder.
func runReorder[C any](t *testing.T, rng *rand.Rand, shared *Builder, rc reorderCase[C]) {
	t.Helper()
	t.Run(rc.name, func(t *testing.T) {
		for iter := range 400 {
			v := 1 + rng.IntN(12)
			var calls []call
			for i := range rc.ops {
				for n := rng.IntN(3); n > 0; n-- { // 0, 1 or 2 calls
					calls = append(calls, call{i, 1 + rng.IntN(12)})
				}
			}
			rng.Shuffle(len(calls), func(i, j int) { calls[i], calls[j] = calls[j], calls[i] })
			ordered := syntaxOrder(rc.ops, calls)

			var fresh Builder
			want := apply(&fresh, rc, v, ordered)
			got := apply(shared, rc, v, calls)
			what := func() string {
				var w []string
				for _, c := range calls {
					w = append(w, fmt.Sprintf("%s(%d)", rc.ops[c.op].name, c.v))
				}
				return fmt.Sprintf("iteration %d: %s %s: %s", iter, rc.name, strings.Join(w, " "), want)
			}
			sameCommand(t, what, got, want)
		}
	})
}

// syntaxOrder is calls in the order of their slots, the calls of one
// slot in the order given; of a slot that takes one value, only its last
// call.
func syntaxOrder[C any](ops []reorderOp[C], calls []call) []call {
	last := map[int]int{} // slot → index in calls of its last call
	for i, c := range calls {
		last[ops[c.op].slot] = i
	}
	var out []call
	for i, c := range calls {
		if op := ops[c.op]; op.multi || last[op.slot] == i {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b call) int { return ops[a.op].slot - ops[b.op].slot })
	return out
}

func apply[C any](b *Builder, rc reorderCase[C], v int, calls []call) Command {
	c := rc.start(b, v)
	for _, x := range calls {
		c = rc.ops[x.op].do(c, x.v)
	}
	return rc.build(c)
}

// sameCommand compares everything a Command tells of itself.
func sameCommand(t *testing.T, what func() string, got, want Command) {
	t.Helper()
	if ge, we := got.Err(), want.Err(); fmt.Sprint(ge) != fmt.Sprint(we) {
		t.Fatalf("%s: Err %v, want %v", what(), ge, we)
	}
	if got.Err() != nil {
		if len(got.Cmd().Bytes()) != 0 || got.Keys() != 0 || !reflect.DeepEqual(got.Fact(), Fact{}) {
			t.Fatalf("%s: a command with an Err has bytes, keys or a Fact", what())
		}
		return
	}
	gb, wb := got.Cmd().Bytes(), want.Cmd().Bytes()
	if !bytes.Equal(gb, wb) {
		t.Fatalf("%s:\ngot  %q\nwant %q", what(), gb, wb)
	}
	if v, n, err := resp.Parse(gb, resp.Limits{}); err != nil || n != len(gb) || len(v.Elems) != len(got.Info().Words)+got.Args() {
		t.Fatalf("%s: not one command of Args arguments: %v, %d of %d bytes", what(), err, n, len(gb))
	}
	if got.Args() != want.Args() || got.Kind() != want.Kind() || got.Timeout() != want.Timeout() || got.Name() != want.Name() {
		t.Fatalf("%s: Args/Kind/Timeout/Name %d %v %v %s, want %d %v %v %s", what(),
			got.Args(), got.Kind(), got.Timeout(), got.Name(), want.Args(), want.Kind(), want.Timeout(), want.Name())
	}
	if gk, wk := got.AppendKeyPos(nil), want.AppendKeyPos(nil); !slices.Equal(gk, wk) {
		t.Fatalf("%s: key positions %v, want %v", what(), gk, wk)
	}
	args := slices.Collect(func(yield func([]byte) bool) {
		v, _, _ := resp.Parse(gb, resp.Limits{})
		for _, e := range v.Elems {
			if !yield(e.Str) {
				return
			}
		}
	})
	for i := range got.Keys() {
		if k := got.Key(i); !bytes.Equal(k, want.Key(i)) || !bytes.Equal(k, args[got.KeyPos(i)]) {
			t.Fatalf("%s: key %d is %q, want %q (argument %d is %q)", what(), i, k, want.Key(i), got.KeyPos(i), args[got.KeyPos(i)])
		}
	}
	if got.ShardChannels() != want.ShardChannels() {
		t.Fatalf("%s: %d shard channels, want %d", what(), got.ShardChannels(), want.ShardChannels())
	}
	for i := range got.ShardChannels() {
		if !bytes.Equal(got.ShardChannel(i), want.ShardChannel(i)) {
			t.Fatalf("%s: shard channel %d is %q, want %q", what(), i, got.ShardChannel(i), want.ShardChannel(i))
		}
	}
	gs, gh, gc := got.Slot()
	ws, wh, wc := want.Slot()
	if gs != ws || gh != wh || gc != wc {
		t.Fatalf("%s: Slot %d %v %v, want %d %v %v", what(), gs, gh, gc, ws, wh, wc)
	}
	if gf, wf := got.Fact(), want.Fact(); !reflect.DeepEqual(gf, wf) {
		t.Fatalf("%s: Fact %+v, want %+v", what(), gf, wf)
	}
}

// TestKeyOpensSlot: a slot given out of order before a slot whose first
// argument is a key (no generated command has one yet but MIGRATE's KEY,
// after the constructor's slots) moves that key on.
func TestKeyOpensSlot(t *testing.T) {
	info := &Info{Name: "x", Words: []string{"X"}, slots: 3, timeout: -1, words: resp.AppendBulkString(nil, "X")}
	var b Builder
	for _, tc := range []struct {
		name  string
		build func() Command
	}{
		{"in order", func() Command {
			b.start(info)
			b.open(0, false)
			b.tok("A")
			b.open(1, false)
			b.key("k1")
			b.open(2, false)
			b.key("k2")
			return b.build(info, b.gen)
		}},
		{"out of order", func() Command {
			b.start(info)
			b.open(2, false)
			b.key("k2")
			b.open(1, false)
			b.key("k1")
			b.open(0, false)
			b.tok("A")
			return b.build(info, b.gen)
		}},
	} {
		c := tc.build()
		check(t, c, []string{"X", "A", "k1", "k2"}, []int{2, 3})
	}
}

// BenchmarkReorder is the cost of options given out of the syntax's
// order against the same command given in order: a token option moved
// before others (ZADD), and an option with a key moved after one given
// later (SORT's STORE before LIMIT).
func BenchmarkReorder(b *testing.B) {
	var bld Builder
	m := []ScoreMember{{1, "a"}, {2, "b"}}
	for _, c := range []struct {
		name string
		fn   func() Command
	}{
		{"cmd=ZADD/order=syntax", func() Command { return bld.Zadd("z", m...).Nx().Ch().Build() }},
		{"cmd=ZADD/order=reversed", func() Command { return bld.Zadd("z", m...).Ch().Nx().Build() }},
		{"cmd=SORT/order=syntax", func() Command { return bld.Sort("l").Limit(0, 10).Alpha().Store("dst").Build() }},
		{"cmd=SORT/order=reversed", func() Command { return bld.Sort("l").Store("dst").Alpha().Limit(0, 10).Build() }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuNow()
			for b.Loop() {
				sinkCmd = c.fn()
			}
			b.ReportMetric(float64(cpuNow()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// TestRepeatedSlotOutOfOrder: a slot that takes one more run per call,
// given again after a later slot, adds after its first run (no generated
// command has one with a slot after it yet).
func TestRepeatedSlotOutOfOrder(t *testing.T) {
	info := &Info{Name: "x", Words: []string{"X"}, slots: 2, timeout: -1, words: resp.AppendBulkString(nil, "X")}
	var b Builder
	b.start(info)
	b.open(0, true)
	b.tok("A")
	b.key("k1")
	b.open(1, false)
	b.key("k3")
	b.open(0, true)
	b.tok("B")
	b.key("k2")
	check(t, b.build(info, b.gen), []string{"X", "A", "k1", "B", "k2", "k3"}, []int{2, 4, 5})
}
