package cmds_test

import (
	"context"
	"testing"
	"time"

	. "github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
)

// TestTypedDoFuncAllocatesNothing: a command built by a Builder, sent
// with DoFunc and its reply read by the integer, boolean and number
// decoders, allocates nothing per command in steady state on a real
// server, RESP2 and RESP3, the connection's own work included.
func TestTypedDoFuncAllocatesNothing(t *testing.T) {
	if RaceEnabled {
		t.Skip("allocation budgets do not hold under the race detector")
	}
	servertest.Need(t, Srv())
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		Srv().Flush(t)
		c := dialConn(t, proto)
		var b Builder
		var n, added int64
		var expired, member, found bool
		var f, score float64
		for _, call := range []struct {
			name string
			do   func() error
		}{
			{"INCR Int", func() error {
				return c.DoFunc(ctx, b.Incr("n").Build().Cmd(), func(v resp.Value) (err error) { n, err = Int(v); return err })
			}},
			{"EXPIRE Bool", func() error {
				return c.DoFunc(ctx, b.Expire("n", time.Hour).Build().Cmd(), func(v resp.Value) (err error) { expired, err = Bool(v); return err })
			}},
			{"SADD Int", func() error {
				return c.DoFunc(ctx, b.Sadd("s", "m").Build().Cmd(), func(v resp.Value) (err error) { added, err = Int(v); return err })
			}},
			{"SISMEMBER Bool", func() error {
				return c.DoFunc(ctx, b.Sismember("s", "m").Build().Cmd(), func(v resp.Value) (err error) { member, err = Bool(v); return err })
			}},
			{"INCRBYFLOAT Float", func() error {
				return c.DoFunc(ctx, b.Incrbyfloat("f", 0.5).Build().Cmd(), func(v resp.Value) (err error) { f, err = Float(v); return err })
			}},
			{"ZINCRBY Float", func() error {
				return c.DoFunc(ctx, b.Zincrby("z", 1.5, "m").Build().Cmd(), func(v resp.Value) (err error) { f, err = Float(v); return err })
			}},
			{"ZSCORE FloatOrNil", func() error {
				return c.DoFunc(ctx, b.Zscore("z", "m").Build().Cmd(), func(v resp.Value) (err error) { score, found, err = FloatOrNil(v); return err })
			}},
			{"SET EX OK", func() error {
				return c.DoFunc(ctx, b.Set("k", "v").Ex(time.Minute).Build().Cmd(), func(v resp.Value) error { return OK(v) })
			}},
		} {
			for range 10 { // grow the builder, the connection's buffers
				if err := call.do(); err != nil {
					t.Fatalf("RESP%d %s: %v", proto, call.name, err)
				}
			}
			if a := testing.AllocsPerRun(200, func() {
				if err := call.do(); err != nil {
					t.Fatalf("RESP%d %s: %v", proto, call.name, err)
				}
			}); a != 0 {
				t.Errorf("RESP%d %s: %v allocations per command", proto, call.name, a)
			}
		}
		if n != 211 || !expired || added != 0 || !member || f == 0 || !found || score != 211*1.5 {
			t.Errorf("RESP%d: replies n=%d expired=%v added=%d member=%v f=%v score=%v,%v", proto, n, expired, added, member, f, score, found)
		}
	}
}
