package pipeline_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
)

// A Batch's own Builder is one Builder, kept by Reset, and the typed
// commands built with it run in order with their own replies, under
// RESP2 and RESP3, across a Reset.
func TestBatchBuilder(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			c := setup(t, conn.Options{Protocol: proto})
			ctx := testCtx(t)
			var b pipeline.Batch
			cb := b.Builder()
			require.NotNil(t, cb)
			require.Same(t, cb, b.Builder())

			set := b.OK(b.Builder().Set("k", "v").Build())
			incrs := make([]pipeline.Reply[int64], 3)
			for i := range incrs {
				incrs[i] = b.Int(b.Builder().Incr("n").Build())
			}
			get := b.String(b.Builder().Get("k").Build())
			require.NoError(t, b.Exec(ctx, c))
			ok, err := set.Value()
			require.NoError(t, err)
			require.True(t, ok)
			for i, h := range incrs {
				n, err := h.Value()
				require.NoError(t, err)
				require.EqualValues(t, i+1, n)
			}
			v, found, err := get.Value()
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, "v", v)

			b.Reset()
			require.Same(t, cb, b.Builder(), "Reset keeps the Builder")
			n := b.Int(b.Builder().Incrby("n", 10).Build())
			require.NoError(t, b.Exec(ctx, c))
			got, err := n.Value()
			require.NoError(t, err)
			require.EqualValues(t, 13, got)
		})
	}
}

// Rebuilding a batch of 100 INCRs with its own Builder, Exec and every
// Value read allocate nothing in steady state.
func TestAllocsBatchBuilder(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets are not measured under -race (sync.Pool drops items)")
	}
	c := setup(t, conn.Options{})
	ctx := context.Background()
	var b pipeline.Batch
	hs := make([]pipeline.Reply[int64], 100)
	want := int64(0)
	run := func() {
		b.Reset()
		for i := range hs {
			hs[i] = b.Int(b.Builder().Incr("n").Build())
		}
		if err := b.Exec(ctx, c); err != nil {
			t.Fatal(err)
		}
		for _, h := range hs {
			want++
			if n, err := h.Value(); err != nil || n != want {
				t.Fatalf("INCR = %d, %v; want %d", n, err, want)
			}
		}
	}
	for range 20 {
		run()
	}
	if n := testing.AllocsPerRun(200, run); n != 0 {
		t.Fatalf("Reset, 100 × Int(b.Builder().Incr), Exec, Value = %v allocs, want 0", n)
	}
}
