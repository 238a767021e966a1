package conn_test

import (
	"context"
	"testing"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// DoFunc allocates nothing in steady state, on a real server, counting
// every goroutine's allocations (the reader's too), sequentially and with
// the background reader in play.
func TestAllocsDoFuncPing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets are not measured under -race (sync.Pool drops items)")
	}
	for _, name := range []string{"leader reads", "background reads (OnPush set)"} {
		opts := conn.Options{}
		if name != "leader reads" {
			opts.OnPush = func(resp.Value) {}
		}
		c := setup(t, opts)
		ctx := context.Background()
		ping := resp.Command(nil, "PING")
		check := func(v resp.Value) error {
			if !v.Equal("PONG") {
				t.Errorf("PING = %v", v)
			}
			return nil
		}
		run := func() {
			if err := c.DoFunc(ctx, ping, check); err != nil {
				t.Fatal(err)
			}
		}
		for range 100 { // warm up pools and buffers
			run()
		}
		if n := testing.AllocsPerRun(1000, run); n != 0 {
			t.Errorf("%s: DoFunc(PING) = %v allocs per call, want 0", name, n)
		}
	}
}

// With a cancellable context, a caller that reads its own replies registers
// one context.AfterFunc (the interrupt is a method value made at dial, so
// no closure): that registration's 2 allocations are the whole budget.
func TestAllocsDoFuncCancellableCtx(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets are not measured under -race (sync.Pool drops items)")
	}
	c := setup(t, conn.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ping := resp.Command(nil, "PING")
	run := func() {
		if err := c.DoFunc(ctx, ping, nil); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		run()
	}
	if n := testing.AllocsPerRun(1000, run); n > 2 {
		t.Errorf("DoFunc(PING) with a cancellable ctx = %v allocs per call, want at most 2", n)
	}
}
