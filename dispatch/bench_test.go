package dispatch_test

import (
	"context"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
)

// The benchmarks enqueue with the PROTOCOL.md enqueue script on the real
// server: unique JOB+11-char ids, a 64-byte payload, keys
// emq:{bench}:job:<id> and emq:{bench}:pending. One op is one enqueue
// (one EVALSHA), so ns/op and allocs/op are per command. Besides ops/s
// they report cpu-s/Mop: the client process's CPU seconds (user+system,
// getrusage RUSAGE_SELF; the server is another process) per million ops,
// and the socket reads and writes the connection made per thousand ops
// (counted by a wrapping net.Conn), which do not depend on the machine's
// load the way CPU time does.

var benchPayload = []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")

// benchIDs hands out id ranges, one per idSource, across benchmark runs.
var benchIDs atomic.Uint64

// idSource mints unique ids for one goroutine: no shared counter in the
// timed loop.
type idSource struct{ next, end uint64 }

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// job fills a with one enqueue of a fresh id, without allocating; key is
// scratch for the row key.
func (src *idSource) job(a *dispatch.Args, key []byte) []byte {
	if src.next == src.end {
		src.end = benchIDs.Add(1 << 32)
		src.next = src.end - 1<<32
	}
	n := src.next
	src.next++
	var id [14]byte
	copy(id[:], "JOB")
	for i := 13; i >= 3; i-- {
		id[i] = base62[n%62]
		n /= 62
	}
	key = append(key[:0], "emq:{bench}:job:"...)
	key = append(key, id[:]...)
	a.Reset()
	a.KeyBytes(key)
	a.Key("emq:{bench}:pending")
	a.ArgBytes(id[:])
	a.ArgBytes(benchPayload)
	return key
}

// usage is the process's resource usage so far: CPU times and context
// switches (voluntary: a thread blocked; involuntary: it was preempted).
type usage struct {
	user, sys   time.Duration
	vcsw, ivcsw int64
}

func getUsage(b *testing.B) usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return usage{time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), ru.Nvcsw, ru.Nivcsw}
}

// measure runs f (which does b.N ops) with the timer, the CPU clock and
// the socket counters around it. It reports ops/s; cpu-s/Mop (user plus
// system) and sys-s/Mop; the context switches per thousand ops, voluntary
// (vcsw/Kop) and involuntary (ivcsw/Kop, preemptions: they grow with the
// machine's load and inflate the CPU figures); and reads/Kop and
// writes/Kop on the socket.
func measure(b *testing.B, sc *sockCount, f func()) {
	b.ReportAllocs()
	b.ResetTimer()
	r0, w0 := sc.reads.Load(), sc.writes.Load()
	u0 := getUsage(b)
	start := time.Now()
	f()
	wall := time.Since(start)
	u1 := getUsage(b)
	b.StopTimer()
	perM := func(d time.Duration) float64 { return d.Seconds() / float64(b.N) * 1e6 }
	perK := func(n int64) float64 { return float64(n) / float64(b.N) * 1e3 }
	b.ReportMetric(float64(b.N)/wall.Seconds(), "ops/s")
	b.ReportMetric(perM(u1.user-u0.user+u1.sys-u0.sys), "cpu-s/Mop")
	b.ReportMetric(perM(u1.sys-u0.sys), "sys-s/Mop")
	b.ReportMetric(perK(u1.vcsw-u0.vcsw), "vcsw/Kop")
	b.ReportMetric(perK(u1.ivcsw-u0.ivcsw), "ivcsw/Kop")
	b.ReportMetric(perK(sc.reads.Load()-r0), "reads/Kop")
	b.ReportMetric(perK(sc.writes.Load()-w0), "writes/Kop")
}

// sockCount counts the socket calls of a connection.
type sockCount struct{ reads, writes atomic.Int64 }

type countedConn struct {
	net.Conn
	sc *sockCount
}

func (c countedConn) Read(p []byte) (int, error) {
	c.sc.reads.Add(1)
	return c.Conn.Read(p)
}

func (c countedConn) Write(p []byte) (int, error) {
	c.sc.writes.Add(1)
	return c.Conn.Write(p)
}

// benchConn is ready's connection with its socket calls counted.
func benchConn(b *testing.B) (*conn.Conn, *sockCount) {
	servertest.Need(b, srv)
	// The jobs of earlier runs go in the background: a synchronous flush
	// of a few hundred thousand rows can stall past the setup client's
	// timeout on a loaded machine.
	for _, cmd := range [][]string{{"FLUSHALL", "ASYNC"}, {"SCRIPT", "FLUSH"}, {"CONFIG", "RESETSTAT"}} {
		if _, err := srv.Do(cmd...); err != nil {
			b.Fatal(err)
		}
	}
	sc := new(sockCount)
	var d net.Dialer
	c, err := conn.Dial(context.Background(), conn.Options{
		Addr: srv.Addr,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countedConn{nc, sc}, nil
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c, sc
}

// warm loads the enqueue script so the timed loop sees no NOSCRIPT.
func warm(b *testing.B, x dispatch.Executor) {
	var a dispatch.Args
	var src idSource
	src.job(&a, nil)
	if err := x.Eval(context.Background(), enqueue, &a, nil); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkEnqueuePipelined(b *testing.B) {
	for _, depth := range []int{100, 1000} {
		b.Run("depth="+itoa(depth), func(b *testing.B) {
			c, sc := benchConn(b)
			x := dispatch.NewScripted(c)
			warm(b, x)
			ctx := context.Background()
			var batch dispatch.Batch
			var a dispatch.Args
			var key []byte
			var src idSource
			var bad atomic.Int64
			measure(b, sc, func() {
				for done := 0; done < b.N; {
					n := min(depth, b.N-done)
					batch.Reset()
					for range n {
						key = src.job(&a, key)
						batch.Add(enqueue, &a)
					}
					if err := x.EvalBatch(ctx, &batch); err != nil {
						b.Fatal(err)
					}
					for _, v := range batch.Replies() {
						if v.Type != resp.Integer || v.Int != 1 {
							bad.Add(1)
						}
					}
					done += n
				}
			})
			if bad.Load() != 0 {
				b.Fatalf("%d enqueues did not answer 1", bad.Load())
			}
			if st := x.Stats(); st.NoScripts != 1 || st.Loads != 1 {
				b.Fatalf("Stats %+v: a reload in the timed loop", st)
			}
		})
	}
}

// BenchmarkEnqueueParallel64: 64 goroutines each call Eval one at a time
// on one connection, which pipelines them.
func BenchmarkEnqueueParallel64(b *testing.B) {
	c, sc := benchConn(b)
	x := dispatch.NewScripted(c)
	warm(b, x)
	ctx := context.Background()
	b.SetParallelism((64 + gomaxprocs() - 1) / gomaxprocs())
	var bad atomic.Int64
	measure(b, sc, func() {
		b.RunParallel(func(pb *testing.PB) {
			var a dispatch.Args
			var key []byte
			var src idSource
			fn := func(v resp.Value) error {
				if v.Int != 1 {
					bad.Add(1)
				}
				return nil
			}
			for pb.Next() {
				key = src.job(&a, key)
				if err := x.Eval(ctx, enqueue, &a, fn); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	if bad.Load() != 0 {
		b.Fatalf("%d enqueues did not answer 1", bad.Load())
	}
}

// BenchmarkEvalNoNetwork measures dispatch's own cost per call: the
// executors over a Sender that answers at once, on the caller's goroutine.
func BenchmarkEvalNoNetwork(b *testing.B) {
	for _, ex := range []struct {
		name string
		x    dispatch.Executor
	}{{"scripted", dispatch.NewScripted(instant{})}, {"native", dispatch.NewNative(instant{})}} {
		b.Run(ex.name+"/serial", func(b *testing.B) {
			var a dispatch.Args
			var key []byte
			var src idSource
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				key = src.job(&a, key)
				if err := ex.x.Eval(ctx, enqueue, &a, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(ex.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var a dispatch.Args
				var key []byte
				var src idSource
				ctx := context.Background()
				for pb.Next() {
					key = src.job(&a, key)
					if err := ex.x.Eval(ctx, enqueue, &a, nil); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkBatchNoNetwork measures dispatch's own cost per call in a
// batch of 100 over a Sender that answers at once.
func BenchmarkBatchNoNetwork(b *testing.B) {
	x := dispatch.NewScripted(instant{})
	var batch dispatch.Batch
	var a dispatch.Args
	var key []byte
	var src idSource
	ctx := context.Background()
	b.ReportAllocs()
	for done := 0; done < b.N; {
		n := min(100, b.N-done)
		batch.Reset()
		for range n {
			key = src.job(&a, key)
			batch.Add(enqueue, &a)
		}
		if err := x.EvalBatch(ctx, &batch); err != nil {
			b.Fatal(err)
		}
		done += n
	}
}
