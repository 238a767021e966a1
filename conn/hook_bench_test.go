package conn_test

import (
	"context"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// BenchmarkHooks: the cost of hooks per command, in a pipeline of 1000
// PINGs on a Conn: none, a hook that keeps its context (one per
// command, as metrics are), and the Observer adapter.
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
			for b.Loop() {
				if err := batch.Exec(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/command")
		})
	}
}
