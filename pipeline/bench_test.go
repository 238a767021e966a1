package pipeline_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// cpuMeter measures the process's CPU time (user+system) and wall time
// around a timed loop; the server runs in its own process, so this is
// the client's cost.
type cpuMeter struct {
	cpu   time.Duration
	start time.Time
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startMeter(b *testing.B) *cpuMeter {
	b.ReportAllocs()
	b.ResetTimer()
	return &cpuMeter{cpu: cpuNow(), start: time.Now()}
}

// stop reports ops/s and the client CPU seconds per million commands.
func (m *cpuMeter) stop(b *testing.B, ops int) {
	cpu, wall := cpuNow()-m.cpu, time.Since(m.start)
	b.StopTimer()
	b.ReportMetric(float64(ops)/wall.Seconds(), "ops/s")
	b.ReportMetric(cpu.Seconds()/float64(ops)*1e6, "cpu-s/Mop")
}

func benchConn(b *testing.B) *conn.Conn {
	servertest.Need(b, srv)
	c, err := conn.Dial(context.Background(), conn.Options{Addr: srv.Addr})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// benchPipelined runs b.N commands as Execs of a reused Batch of depth
// commands built by add; one op is one command.
func benchPipelined(b *testing.B, depth int, add func(*pipeline.Batch)) {
	c := benchConn(b)
	ctx := context.Background()
	var batch pipeline.Batch
	for range depth {
		add(&batch)
	}
	for range 10 { // warm up buffers and pools
		if err := batch.Exec(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	w0 := c.Writes()
	m := startMeter(b)
	ops := 0
	for ops < b.N {
		if err := batch.Exec(ctx, c); err != nil {
			b.Fatal(err)
		}
		ops += depth
	}
	m.stop(b, ops)
	b.ReportMetric(float64(c.Writes()-w0)/float64(ops), "writes/op")
	if err := batch.Err(depth - 1); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkPipelinePing(b *testing.B) {
	for _, depth := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			benchPipelined(b, depth, func(batch *pipeline.Batch) { batch.Add("PING") })
		})
	}
}

func BenchmarkPipelineSet64(b *testing.B) {
	value := []byte(strings.Repeat("v", 64))
	for _, depth := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("depth=%d", depth), func(b *testing.B) {
			i := 0
			benchPipelined(b, depth, func(batch *pipeline.Batch) {
				batch.Begin(3)
				batch.Arg("SET")
				batch.ArgInt(int64(i)) // depth distinct keys
				batch.ArgBytes(value)
				i++
			})
		})
	}
}

// BenchmarkConcurrentDoFunc: 64 goroutines share one Conn, each calling
// one command at a time; the connection batches them.
func BenchmarkConcurrentDoFunc(b *testing.B) {
	const goroutinesN = 64
	for _, name := range []string{"PING", "SET64"} {
		b.Run(name+"/goroutines=64", func(b *testing.B) {
			c := benchConn(b)
			ctx := context.Background()
			cmd := resp.Command(nil, "PING")
			if name == "SET64" {
				cmd = resp.Command(nil, "SET", "k", strings.Repeat("v", 64))
			}
			w0 := c.Writes()
			m := startMeter(b)
			var wg sync.WaitGroup
			per := (b.N + goroutinesN - 1) / goroutinesN
			for range goroutinesN {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range per {
						if err := c.DoFunc(ctx, cmd, nil); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			ops := per * goroutinesN
			m.stop(b, ops)
			b.ReportMetric(float64(c.Writes()-w0)/float64(ops), "writes/op")
		})
	}
	_ = runtime.GOMAXPROCS(0)
}

// BenchmarkBatchIncr rebuilds a Batch of 100 INCRs for each Exec and
// reads every reply as an int64: raw (Begin/Arg, Reply(i).AsInt) against
// typed (Int(cb.Incr(…).Build()), Value). One op is one command.
//
//	go test -run '^$' -bench BatchIncr -count 6 ./pipeline/ | tee bi.txt; benchstat -col /via bi.txt
func BenchmarkBatchIncr(b *testing.B) {
	const depth = 100
	for _, typed := range []bool{false, true} {
		name := "raw"
		if typed {
			name = "typed"
		}
		b.Run("depth=100/via="+name, func(b *testing.B) {
			c := benchConn(b)
			ctx := context.Background()
			var batch pipeline.Batch
			var cb cmds.Builder
			hs := make([]pipeline.Reply[int64], depth)
			var sum int64
			round := func() {
				batch.Reset()
				for i := range depth {
					if typed {
						hs[i] = batch.Int(cb.Incr("n").Build())
					} else {
						batch.Begin(2)
						batch.Arg("INCR")
						batch.Arg("n")
					}
				}
				if err := batch.Exec(ctx, c); err != nil {
					b.Fatal(err)
				}
				for i := range depth {
					var n int64
					var err error
					if typed {
						n, err = hs[i].Value()
					} else {
						n, err = batch.Reply(i).AsInt()
					}
					if err != nil {
						b.Fatal(err)
					}
					sum += n
				}
			}
			rounds(b, depth, round)
			if sum == 0 {
				b.Fatal("no replies")
			}
		})
	}
}

// rounds runs round 10 times to warm up, then measured until b.N
// commands ran, depth per round.
func rounds(b *testing.B, depth int, round func()) {
	for range 10 {
		round()
	}
	m := startMeter(b)
	ops := 0
	for ops < b.N {
		round()
		ops += depth
	}
	m.stop(b, ops)
}

// BenchmarkBatchAdd is the client's cost of queueing one command,
// without a server: Begin/Arg and Add against the typed builder and
// handle (Int(cb.Incr(…).Build()), OK(cb.Set(…).Ex(…).Build())). One op
// is one command; cpu-ns/op is the process's CPU per command.
//
//	go test -run '^$' -bench BatchAdd -count 6 ./pipeline/ | tee ba.txt; benchstat -col /via ba.txt
func BenchmarkBatchAdd(b *testing.B) {
	var batch pipeline.Batch
	var cb cmds.Builder
	var h pipeline.Reply[int64]
	var ok pipeline.Reply[bool]
	for _, c := range []struct {
		name string
		add  func()
	}{
		{"cmd=INCR/via=raw", func() { batch.Begin(2); batch.Arg("INCR"); batch.Arg("n") }},
		{"cmd=INCR/via=add", func() { batch.Add("INCR", "n") }},
		{"cmd=INCR/via=typed", func() { h = batch.Int(cb.Incr("n").Build()) }},
		{"cmd=SET-EX/via=raw", func() {
			batch.Begin(5)
			batch.Arg("SET")
			batch.Arg("user:1")
			batch.Arg("value")
			batch.Arg("EX")
			batch.ArgInt(60)
		}},
		{"cmd=SET-EX/via=add", func() { batch.Add("SET", "user:1", "value", "EX", "60") }},
		{"cmd=SET-EX/via=typed", func() { ok = batch.OK(cb.Set("user:1", "value").Ex(time.Minute).Build()) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			batch.Reset()
			adds(b, &batch, c.add)
		})
	}
	_, _ = h, ok
}

// adds runs add b.N times, the batch Reset every 100, and reports the
// process's CPU per add.
func adds(b *testing.B, batch *pipeline.Batch, add func()) {
	b.ReportAllocs()
	cpu0 := cpuNow()
	i := 0
	for b.Loop() {
		if i++; i%100 == 0 {
			batch.Reset()
		}
		add()
	}
	b.ReportMetric(float64(cpuNow()-cpu0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkPipelineRebuilt is a pipeline of depth 100 built again for
// every Exec, as emqbench and the peer run do (Reset, 100 Adds or
// Begin/Arg, Exec): the queueing is measured with the round trip. One op
// is one command.
//
//	go test -run '^$' -bench PipelineRebuilt -count 6 ./pipeline/
func BenchmarkPipelineRebuilt(b *testing.B) {
	value := []byte(strings.Repeat("v", 64))
	for _, name := range []string{"PING", "SET64"} {
		b.Run(name, func(b *testing.B) {
			c := benchConn(b)
			ctx := context.Background()
			var batch pipeline.Batch
			key := make([]byte, 0, 40)
			op := 0
			run := func() {
				batch.Reset()
				for range 100 {
					if name == "PING" {
						batch.Add("PING")
						continue
					}
					key = strconv.AppendInt(append(key[:0], "bench:"...), int64(op%1000), 10)
					op++
					batch.Begin(3)
					batch.Arg("SET")
					batch.ArgBytes(key)
					batch.ArgBytes(value)
				}
				if err := batch.Exec(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
			rounds(b, 100, run)
		})
	}
}

// BenchmarkEagerAdd is Add on a Batch last sent to a Sender that reads
// facts (a user's Sender, hooks, a cluster): each command's fact is made
// as resp encodes it (wire.Facts.Strings). CPU only, no server.
//
//	go test -run '^$' -bench EagerAdd -count 10 ./pipeline/
func BenchmarkEagerAdd(b *testing.B) {
	fake := conn.SendFunc(func(_ context.Context, c conn.Cmds, h conn.Handler) error { h.Done(nil); return nil })
	for _, name := range []string{"INCR", "SET-EX", "EVALSHA"} {
		b.Run(name, func(b *testing.B) {
			var batch pipeline.Batch
			batch.Add("PING")
			_ = batch.Exec(context.Background(), fake)
			batch.Reset()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if i++; i%100 == 0 {
					batch.Reset()
				}
				switch name {
				case "INCR":
					batch.Add("INCR", "n")
				case "SET-EX":
					batch.Add("SET", "user:1", "value", "EX", "60")
				default:
					batch.Add("EVALSHA", "0123456789012345678901234567890123456789", "2", "emq:{q}:job:1", "emq:{q}:pending", "1", "payload")
				}
			}
		})
	}
}
