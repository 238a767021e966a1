package pipeline_test

import (
	"context"
	"testing"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
)

// Exec of a reused Batch of 100 PINGs allocates nothing in steady state,
// on a real server, the reader's allocations included.
func TestAllocsBatchExec(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets are not measured under -race (sync.Pool drops items)")
	}
	c := setup(t, conn.Options{})
	ctx := context.Background()
	var b pipeline.Batch
	for range 100 {
		b.Add("PING")
	}
	run := func() {
		if err := b.Exec(ctx, c); err != nil {
			t.Fatal(err)
		}
		if !b.Reply(99).Equal("PONG") {
			t.Fatalf("reply 99 = %v", b.Reply(99))
		}
	}
	for range 20 {
		run()
	}
	if n := testing.AllocsPerRun(200, run); n != 0 {
		t.Fatalf("Exec of 100 PINGs = %v allocs, want 0", n)
	}
	// Rebuilding the batch each time costs nothing either.
	rebuild := func() {
		b.Reset()
		for range 100 {
			b.Begin(2)
			b.Arg("ECHO")
			b.ArgInt(12345)
		}
		if err := b.Exec(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	rebuild()
	if n := testing.AllocsPerRun(200, rebuild); n != 0 {
		t.Fatalf("Reset, 100 × Begin/Arg/ArgInt and Exec = %v allocs, want 0", n)
	}
}
