package pipeline_test

import (
	"testing"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/stretchr/testify/require"
)

// A command queued after its Builder started the next one fails Exec
// with cmds.ErrStale and nothing is sent: not the newer command's bytes
// in its place.
func TestTypedBatchStaleCommand(t *testing.T) {
	c := setup(t, conn.Options{})
	var b pipeline.Batch
	var cb cmds.Builder
	stale := cb.Incr("a").Build()
	fresh := cb.Incr("b").Build()
	n := b.Int(fresh)
	b.Int(stale)
	require.ErrorIs(t, b.Exec(testCtx(t), c), cmds.ErrStale)
	_, err := n.Value()
	require.ErrorIs(t, err, cmds.ErrStale)
	for _, k := range []string{"a", "b"} {
		got, err := srv.Do("EXISTS", k)
		require.NoError(t, err)
		require.Equal(t, "0", got, "nothing was sent (%s)", k)
	}
}
