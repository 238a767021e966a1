package cmds_test

import (
	"context"
	"testing"
	"time"

	. "github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
)

// BenchmarkDo compares a typed builder plus a typed reply with the raw
// DoFunc path (resp.Command and the resp.Value accessor) on one
// connection to the real server: round trips, one goroutine. cpu-ns/op
// is the client process's CPU (user+system) per command; the server runs
// in its own process.
//
//	go test -run '^$' -bench Do -count 6 ./cmds/ | tee do.txt; benchstat -col /via do.txt
func BenchmarkDo(b *testing.B) {
	servertest.Need(b, Srv())
	ctx := context.Background()
	for _, cmd := range []string{"INCR", "SET-EX", "ZSCORE"} {
		for _, via := range []string{"raw", "typed"} {
			b.Run("cmd="+cmd+"/via="+via, func(b *testing.B) {
				c := dialConn(b, 3)
				var bld Builder
				var buf [128]byte
				var n int64
				var f float64
				c.DoFunc(ctx, resp.Command(buf[:0], "ZADD", "bz", "1.5", "m"), func(resp.Value) error { return nil })
				b.ReportAllocs()
				cpu0 := CPUNow()
				b.ResetTimer()
				for b.Loop() {
					var err error
					switch cmd + via {
					case "INCRraw":
						err = c.DoFunc(ctx, resp.Command(buf[:0], "INCR", "bk"), func(v resp.Value) (err error) {
							n, err = v.AsInt()
							return err
						})
					case "INCRtyped":
						err = c.DoFunc(ctx, bld.Incr("bk").Build().Cmd(), func(v resp.Value) (err error) {
							n, err = Int(v)
							return err
						})
					case "SET-EXraw":
						err = c.DoFunc(ctx, resp.Command(buf[:0], "SET", "bs", "value", "EX", "60"), func(v resp.Value) error {
							if !v.Equal("OK") {
								return ErrNotOK
							}
							return nil
						})
					case "SET-EXtyped":
						err = c.DoFunc(ctx, bld.Set("bs", "value").Ex(time.Minute).Build().Cmd(), func(v resp.Value) error {
							return OK(v)
						})
					case "ZSCOREraw":
						err = c.DoFunc(ctx, resp.Command(buf[:0], "ZSCORE", "bz", "m"), func(v resp.Value) (err error) {
							f, err = v.AsFloat()
							return err
						})
					case "ZSCOREtyped":
						err = c.DoFunc(ctx, bld.Zscore("bz", "m").Build().Cmd(), func(v resp.Value) (err error) {
							f, _, err = FloatOrNil(v)
							return err
						})
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(CPUNow()-cpu0)/float64(b.N), "cpu-ns/op")
				_, _ = n, f
			})
		}
	}
}

// BenchmarkDoParallel is BenchmarkDo with 64 goroutines sharing the
// connection, which batches their commands: the client's own work per
// command shows (cpu-ns/op).
//
//	go test -run '^$' -bench DoParallel -count 6 ./cmds/ | tee dop.txt; benchstat -col /via dop.txt
func BenchmarkDoParallel(b *testing.B) {
	servertest.Need(b, Srv())
	ctx := context.Background()
	for _, cmd := range []string{"INCR", "SET-EX"} {
		for _, via := range []string{"raw", "typed"} {
			b.Run("cmd="+cmd+"/via="+via, func(b *testing.B) {
				c := dialConn(b, 3)
				b.ReportAllocs()
				b.SetParallelism(32) // 64 goroutines on 2 CPUs
				cpu0 := CPUNow()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					var bld Builder
					var buf [128]byte
					var n int64
					for pb.Next() {
						var err error
						switch cmd + via {
						case "INCRraw":
							err = c.DoFunc(ctx, resp.Command(buf[:0], "INCR", "bk"), func(v resp.Value) (err error) {
								n, err = v.AsInt()
								return err
							})
						case "INCRtyped":
							err = c.DoFunc(ctx, bld.Incr("bk").Build().Cmd(), func(v resp.Value) (err error) {
								n, err = Int(v)
								return err
							})
						case "SET-EXraw":
							err = c.DoFunc(ctx, resp.Command(buf[:0], "SET", "bs", "value", "EX", "60"), func(v resp.Value) error {
								if !v.Equal("OK") {
									return ErrNotOK
								}
								return nil
							})
						case "SET-EXtyped":
							err = c.DoFunc(ctx, bld.Set("bs", "value").Ex(time.Minute).Build().Cmd(), func(v resp.Value) error {
								return OK(v)
							})
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
					_ = n
				})
				b.StopTimer()
				b.ReportMetric(float64(CPUNow()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}
