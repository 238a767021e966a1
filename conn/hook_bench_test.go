package conn_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// BenchmarkHooks: the cost of hooks per command, in a pipeline of 1000
// PINGs on a Conn: none, a hook that keeps its context (one per
// command, as metrics are), and the Observer adapter. cpu-ns/command is
// the client process's CPU (user+system, the reader goroutine's too) per
// command: the server runs in its own process, so on a shared machine it
// is steadier than ns/command.
//
//	go test -run '^$' -bench Hooks -count 10 ./conn/ | tee h.txt; benchstat -filter '.unit:cpu-ns/command' h.txt
func BenchmarkHooks(b *testing.B) {
	nop := conn.Hook{
		BeforeCommand: func(ctx context.Context, _ conn.CommandInfo, _ conn.RawCommand) context.Context { return ctx },
		AfterCommand:  func(context.Context, conn.CommandInfo, resp.Value, time.Duration, error) {},
	}
	for _, bc := range []struct {
		name string
		opts conn.Options
	}{
		{"none", conn.Options{}},
		{"hook", conn.Options{Hooks: []conn.Hook{nop}}},
		{"observer", conn.Options{Observer: nopObserver{}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := setup(b, bc.opts)
			var batch pipeline.Batch
			for range 1000 {
				batch.Add("PING")
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			cpu := processCPU()
			for b.Loop() {
				if err := batch.Exec(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
			cpu = processCPU() - cpu
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/command")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1000, "cpu-ns/command")
		})
	}
}

// processCPU is the process's CPU time so far (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
