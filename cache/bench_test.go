package cache_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/echomq/echomq-go/cache"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// A hit allocates nothing when the caller gives the buffer, for GET and
// for any cacheable command read with a callback.
func TestHitAllocatesNothing(t *testing.T) {
	if raceOn {
		t.Skip("the race detector allocates")
	}
	c := newCache(t, opts(3))
	must(t, srv, "SET", "k", "value")
	must(t, srv, "HSET", "h", "f", "1")
	ctx := context.Background()
	buf := make([]byte, 0, 64)
	var n int
	fn := func(v resp.Value) error { n += len(v.Str); return nil }
	if _, _, err := c.GetInto(ctx, buf, "k", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := c.DoCached(ctx, time.Hour, fn, "HGET", "h", "f"); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(1000, func() {
		buf, _, _ = c.GetInto(ctx, buf[:0], "k", time.Hour)
	}); a != 0 {
		t.Errorf("GetInto hit: %v allocations", a)
	}
	if a := testing.AllocsPerRun(1000, func() {
		c.DoCached(ctx, time.Hour, fn, "HGET", "h", "f")
	}); a != 0 {
		t.Errorf("DoCached hit: %v allocations", a)
	}
	if s := c.Stats(); s.Misses != 2 {
		t.Fatalf("%+v: want every read after the first a hit", s)
	}
}

// BenchmarkHit is one GetInto served from memory.
func BenchmarkHit(b *testing.B) {
	c := newCache(b, opts(3))
	must(b, srv, "SET", "k", "0123456789abcdef")
	ctx := context.Background()
	buf := make([]byte, 0, 64)
	c.GetInto(ctx, buf, "k", time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		buf, _, _ = c.GetInto(ctx, buf[:0], "k", time.Hour)
	}
}

// BenchmarkHitParallel is GetInto hits from every P over 1,000 keys.
func BenchmarkHitParallel(b *testing.B) {
	c := newCache(b, opts(3))
	ctx := context.Background()
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
		must(b, srv, "SET", keys[i], "0123456789abcdef")
		c.Get(ctx, keys[i], time.Hour)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 0, 64)
		i := 0
		for pb.Next() {
			buf, _, _ = c.GetInto(ctx, buf[:0], keys[i%len(keys)], time.Hour)
			i++
		}
	})
}

// BenchmarkMix is reads over 1,000 keys from 16 goroutines at a 90% hit
// ratio: every tenth read is of a key outside the Broadcast prefix, which
// is never kept and goes to the server. Against it, nocache: the same
// reads through conn.Client without a cache.
func BenchmarkMix(b *testing.B) {
	const keys = 1000
	names := make([]string, keys)
	for i := range names {
		names[i] = "k" + strconv.Itoa(i)
	}
	b.Run("cache", func(b *testing.B) {
		o := opts(3)
		o.Mode = cache.Broadcast
		o.Prefixes = []string{"k"}
		c := newCache(b, o)
		ctx := context.Background()
		for _, k := range names {
			must(b, srv, "SET", k, "0123456789abcdef")
			must(b, srv, "SET", "m"+k, "0123456789abcdef")
			c.Get(ctx, k, time.Hour)
		}
		s0 := c.Stats()
		b.ReportAllocs()
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			buf := make([]byte, 0, 64)
			i := 0
			for pb.Next() {
				k := names[i%keys]
				if i%10 == 0 {
					k = "m" + k
				}
				buf, _, _ = c.GetInto(ctx, buf[:0], k, time.Hour)
				i++
			}
		})
		b.StopTimer()
		s1 := c.Stats()
		s1.Hits -= s0.Hits
		s1.Misses -= s0.Misses
		if r := s1.HitRatio(); b.N > 1000 && (r < 0.85 || r > 0.95) {
			b.Fatalf("hit ratio %.3f, want about 0.9", r)
		}
	})
	b.Run("nocache", func(b *testing.B) {
		cl, err := conn.NewClient(context.Background(), conn.Options{Addr: srv.Addr})
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		ctx := context.Background()
		b.ReportAllocs()
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			var cmd [64]byte
			i := 0
			for pb.Next() {
				cl.DoFunc(ctx, resp.Command(cmd[:0], "GET", names[i%keys]), func(resp.Value) error { return nil })
				i++
			}
		})
	})
}

// BenchmarkMiss is one GetInto read from the server (a load: GET and
// PTTL in one submission), serially: a key outside Broadcast's prefixes
// is read and never kept.
func BenchmarkMiss(b *testing.B) {
	o := opts(3)
	o.Mode = cache.Broadcast
	o.Prefixes = []string{"kept:"}
	c := newCache(b, o)
	must(b, srv, "SET", "k", "0123456789abcdef")
	ctx := context.Background()
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf, _, _ = c.GetInto(ctx, buf[:0], "k", time.Hour)
	}
	if s := c.Stats(); s.Hits != 0 {
		b.Fatalf("%+v: a hit", s)
	}
}

var _ = cache.Default
