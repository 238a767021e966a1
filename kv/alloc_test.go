package kv_test

import (
	"context"
	"testing"
	"time"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/kv"
)

// The hot helpers allocate nothing beyond the result asked for, on a
// real server, counting every goroutine's allocations: Get and HGet the
// returned string (one allocation), the rest nothing; the helpers
// built with package cmds (Decr, LLen, ZIncrBy, …) too.
func TestAllocsHelpers(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets are not measured under -race (sync.Pool drops items)")
	}
	servertest.Need(t, srv)
	srv.Flush(t)
	ctx := context.Background()
	c, err := conn.Dial(ctx, conn.Options{Addr: srv.Addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var s conn.Sender = c
	value := []byte("a value of some thirty-two bytes")
	dst := make([]byte, 0, 64)
	var cb cmds.Builder
	prefix := "user:"
	mset := map[string]float64{"m1": 1.5, "m2": 2}
	hset := map[string]int{"a": 1, "b": 2}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range []struct {
		name   string
		budget float64
		call   func()
	}{
		{"Set bytes", 0, func() { must(kv.Set(ctx, s, "k", value)) }},
		{"Set string", 0, func() { must(kv.Set(ctx, s, "s", "text")) }},
		{"Set int", 0, func() { must(kv.Set(ctx, s, "n", 12345)) }},
		{"SetWith TTL", 0, func() { _, err := kv.SetWith(ctx, s, "t", value, kv.SetOptions{TTL: time.Minute}); must(err) }},
		{"Get", 1, func() { _, _, err := kv.Get(ctx, s, "k"); must(err) }},
		{"Get of a missing key", 0, func() { _, _, err := kv.Get(ctx, s, "missing"); must(err) }},
		{"GetBytes", 0, func() { _, _, err := kv.GetBytes(ctx, s, "k", dst[:0]); must(err) }},
		{"Incr", 0, func() { _, err := kv.Incr(ctx, s, "ctr"); must(err) }},
		{"IncrBy", 0, func() { _, err := kv.IncrBy(ctx, s, "ctr", 5); must(err) }},
		{"HSet", 0, func() { _, err := kv.HSet(ctx, s, "h", "f", value); must(err) }},
		{"HGet", 1, func() { _, _, err := kv.HGet(ctx, s, "h", "f"); must(err) }},
		{"HIncrBy", 0, func() { _, err := kv.HIncrBy(ctx, s, "h", "n", 1); must(err) }},
		{"Del", 0, func() { _, err := kv.Del(ctx, s, "gone", "gone2"); must(err) }},
		{"Exists", 0, func() { _, err := kv.Exists(ctx, s, "k"); must(err) }},
		{"Expire", 0, func() { _, err := kv.Expire(ctx, s, "t", time.Hour); must(err) }},
		{"TTL", 0, func() { _, _, err := kv.TTL(ctx, s, "t"); must(err) }},
		{"ZScore", 0, func() { _, _, err := kv.ZScore(ctx, s, "z", "m"); must(err) }},
		{"SIsMember", 0, func() { _, err := kv.SIsMember(ctx, s, "set", "m"); must(err) }},
		// The helpers built with package cmds.
		{"Decr", 0, func() { _, err := kv.Decr(ctx, s, "ctr"); must(err) }},
		{"IncrByFloat", 0, func() { _, err := kv.IncrByFloat(ctx, s, "fl", 0.5); must(err) }},
		{"Persist", 0, func() { _, err := kv.Persist(ctx, s, "k"); must(err) }},
		{"HLen", 0, func() { _, err := kv.HLen(ctx, s, "h"); must(err) }},
		{"HExists", 0, func() { _, err := kv.HExists(ctx, s, "h", "f"); must(err) }},
		{"LLen", 0, func() { _, err := kv.LLen(ctx, s, "l"); must(err) }},
		{"SCard", 0, func() { _, err := kv.SCard(ctx, s, "set"); must(err) }},
		{"ZCard", 0, func() { _, err := kv.ZCard(ctx, s, "z"); must(err) }},
		{"ZIncrBy", 0, func() { _, err := kv.ZIncrBy(ctx, s, "z", 1, "m"); must(err) }},
		{"ZRank", 0, func() { _, _, err := kv.ZRank(ctx, s, "z", "m"); must(err) }},
		{"GetDel of a missing key", 0, func() { _, _, err := kv.GetDel(ctx, s, "missing"); must(err) }},
		// The one call, on the Conn and through the interface.
		{"Call Incrby", 0, func() { _, err := kv.Call(ctx, c, cb.Incrby("ctr", 5).Build(), cmds.Int); must(err) }},
		{"Call Incrby via Sender", 0, func() { _, err := kv.Call(ctx, s, cb.Incrby("ctr", 5).Build(), cmds.Int); must(err) }},
		{"Call Set", 0, func() { _, err := kv.Call(ctx, s, cb.Set("k", "v").Ex(time.Minute).Build(), cmds.OKOrNil); must(err) }},
		{"CallNull Get", 1, func() { _, _, err := kv.CallNull(ctx, s, cb.Get("k").Build(), cmds.String); must(err) }},
		{"CallNull Get of a missing key", 0, func() { _, _, err := kv.CallNull(ctx, s, cb.Get("missing").Build(), cmds.String); must(err) }},
		{"Call concatenated key", 0, func() { _, err := kv.Call(ctx, s, cb.Incr(prefix+"ctr").Build(), cmds.Int); must(err) }},
		// The helpers once encoded by hand, now over the cmds builders:
		// values of every type, keys built by concatenation.
		{"Set concatenated", 0, func() { must(kv.Set(ctx, s, prefix+"k", prefix+"v")) }},
		{"SetWith NX of bytes", 0, func() { _, err := kv.SetWith(ctx, s, prefix+"t", value, kv.SetOptions{NX: true}); must(err) }},
		{"RPush ints", 0, func() { _, err := kv.RPush(ctx, s, prefix+"l", 1, 2, 3); must(err) }},
		{"SAdd bytes", 0, func() { _, err := kv.SAdd(ctx, s, prefix+"set", value); must(err) }},
		{"ZAdd", 0, func() { _, err := kv.ZAdd(ctx, s, prefix+"z", kv.Z{Member: "m", Score: 1.5}); must(err) }},
		{"MSet", 0, func() { must(kv.MSet(ctx, s, mset)) }},
		{"HSetMap", 0, func() { _, err := kv.HSetMap(ctx, s, prefix+"h", hset); must(err) }},
	} {
		for range 100 { // warm up pools and buffers
			b.call()
		}
		n := testing.AllocsPerRun(1000, b.call)
		if n > b.budget {
			t.Errorf("%s: %v allocations per call, budget %v", b.name, n, b.budget)
		}
	}
}
