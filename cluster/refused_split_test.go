package cluster_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
)

// TestSplitBatchRefusedWhole: a batch split between primaries with a
// command that a primary's connection refuses (a subscription, WATCH, an
// argument over Options.MaxArg, a MULTI without its EXEC) is refused
// whole, with that connection's error, before any part is sent, as one
// connection refuses a whole submission. The parts were sent one by one,
// so the SET of {a} had run on its primary when the part of {b} was
// refused: Exec returned ErrCommandRefused ("nothing was sent") with the
// batch half applied.
func TestSplitBatchRefusedWhole(t *testing.T) {
	c := needCluster(t)
	ctx := testCtx(t)
	cl := newClient(t, c, func(o *cluster.Options) { o.Node.MaxArg = 1024 })
	for _, tc := range []struct {
		name string
		cmds [][]string
		want any
	}{
		{"SSUBSCRIBE", [][]string{{"SSUBSCRIBE", "{b}ch"}}, new(*conn.CommandError)},
		{"WATCH", [][]string{{"WATCH", "{b}w"}}, new(*conn.CommandError)},
		{"over MaxArg", [][]string{{"SET", "{b}y", strings.Repeat("z", 1025)}}, new(*conn.ArgTooLargeError)},
		{"MULTI without EXEC", [][]string{{"MULTI"}, {"INCR", "{b}m"}}, new(*conn.CommandError)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			needCluster(t) // flushed
			var b pipeline.Batch
			b.Add("SET", "{a}x", "1") // its own primary ({a}: slot 15495, {b}: 3300)
			b.Add("INCR", "{b}n")
			for _, c := range tc.cmds {
				b.Add(c...)
			}
			err := b.Exec(ctx, cl)
			require.ErrorIs(t, err, conn.ErrCommandRefused)
			switch w := tc.want.(type) {
			case **conn.CommandError:
				require.True(t, errors.As(err, w), "%v", err)
			case **conn.ArgTooLargeError:
				require.True(t, errors.As(err, w), "%v", err)
			}
			for _, k := range []string{"{a}x", "{b}n"} {
				v, err := cl.Do(ctx, "EXISTS", k)
				require.NoError(t, err)
				require.EqualValues(t, 0, v.Int, "%s: the batch was refused, yet its %s ran", tc.name, k)
			}
		})
	}
}
