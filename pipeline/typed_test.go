package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// Typed handles read every reply the same way under RESP2 and RESP3, in
// order, a server error staying with its own command.
func TestTypedBatch(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			c := setup(t, conn.Options{Protocol: proto})
			require.Equal(t, proto, c.Protocol())
			var b pipeline.Batch
			var cb cmds.Builder
			set := b.OK(cb.Set("s", "text").Build())
			setNX := b.OK(cb.Set("s", "other").Nx().Build())
			wrong := b.Int(cb.Incr("s").Build())
			get := b.String(cb.Get("s").Build())
			missing := b.String(cb.Get("nope").Build())
			incrs := make([]pipeline.Reply[int64], 5)
			for i := range incrs {
				incrs[i] = b.Int(cb.Incr("n").Build())
			}
			fl := b.Float(cb.Incrbyfloat("f", 1.5).Build())
			b.Int(cb.Zadd("z", cmds.ScoreMember{Score: 30.5, Member: "ada"}, cmds.ScoreMember{Score: 2, Member: "bob"}).Build())
			top := b.Scored(cb.Zrange("z", "0", "-1").Rev().Withscores().Build())
			rank := b.IntOrNil(cb.Zrank("z", "ada").Build())
			noRank := b.IntOrNil(cb.Zrank("z", "eve").Build())
			score := b.FloatOrNil(cb.Zscore("z", "ada").Build())
			b.Int(cb.Hset("h", cmds.FieldValue{Field: "a", Value: "1"}, cmds.FieldValue{Field: "b", Value: "2"}).Build())
			all := b.StringMap(cb.Hgetall("h").Build())
			has := b.Bool(cb.Hexists("h", "a").Build())
			keys := b.Strings(cb.Hkeys("h").Build())
			echo := b.AddCommand(cb.Echo("after").Build())

			_, err := set.Value()
			require.ErrorIs(t, err, pipeline.ErrNotExecuted, "before Exec")
			require.NoError(t, b.Exec(testCtx(t), c))

			ok, err := set.Value()
			require.NoError(t, err)
			require.True(t, ok)
			ok, err = setNX.Value()
			require.NoError(t, err)
			require.False(t, ok, "SET NX of an existing key is nil")
			_, err = wrong.Value()
			var se *resp.ServerError
			require.ErrorAs(t, err, &se)
			s, ok, err := get.Value()
			require.NoError(t, err)
			require.Equal(t, "text", s)
			require.True(t, ok)
			s, ok, err = missing.Value()
			require.NoError(t, err)
			require.False(t, ok)
			require.Empty(t, s)
			for i, h := range incrs {
				n, err := h.Value()
				require.NoError(t, err)
				require.Equal(t, int64(i+1), n, "INCR %d", i)
			}
			f, err := fl.Value()
			require.NoError(t, err)
			require.Equal(t, 1.5, f)
			z, err := top.Value()
			require.NoError(t, err)
			require.Equal(t, []cmds.Z{{Member: "ada", Score: 30.5}, {Member: "bob", Score: 2}}, z)
			r, ok, err := rank.Value()
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, int64(1), r)
			_, ok, err = noRank.Value()
			require.NoError(t, err)
			require.False(t, ok)
			sc, ok, err := score.Value()
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, 30.5, sc)
			m, err := all.Value()
			require.NoError(t, err)
			require.Equal(t, map[string]string{"a": "1", "b": "2"}, m)
			yes, err := has.Value()
			require.NoError(t, err)
			require.True(t, yes)
			k, err := keys.Value()
			require.NoError(t, err)
			require.ElementsMatch(t, []string{"a", "b"}, k)
			require.True(t, b.Reply(echo).Equal("after"))
			require.Equal(t, echo, b.Len()-1)

			// Exec again: the handles read the new replies.
			require.NoError(t, b.Exec(testCtx(t), c))
			n, err := incrs[4].Value()
			require.NoError(t, err)
			require.Equal(t, int64(10), n)

			// After Reset the old handles are stale.
			b.Reset()
			_, err = incrs[0].Value()
			require.ErrorIs(t, err, pipeline.ErrStale)
		})
	}
}

// A command built wrong fails Exec with its own error; nothing is sent,
// and every handle reports that error.
func TestTypedBatchBuiltWrong(t *testing.T) {
	c := setup(t, conn.Options{})
	var b pipeline.Batch
	var cb cmds.Builder
	n := b.Int(cb.Incr("n").Build())
	b.String(cb.Xadd("s", cmds.FieldValue{Field: "f", Value: "v"}).Build()) // no ID choice
	err := b.Exec(testCtx(t), c)
	require.ErrorIs(t, err, cmds.ErrMissing)
	_, err = n.Value()
	require.ErrorIs(t, err, cmds.ErrMissing)
	got, err := srv.Do("EXISTS", "n")
	require.NoError(t, err)
	require.Equal(t, "0", got, "the INCR before the bad command was not sent")
}

// A failed Exec (here a cancelled context) is every handle's error.
func TestTypedBatchExecFailed(t *testing.T) {
	c := setup(t, conn.Options{})
	var b pipeline.Batch
	var cb cmds.Builder
	n := b.Int(cb.Incr("n").Build())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, b.Exec(ctx, c), context.Canceled)
	_, err := n.Value()
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, errors.Is(err, pipeline.ErrNotExecuted))
}

// A blocking command in a typed batch: its timeout is honoured and its
// nil reply read with ok false.
func TestTypedBatchDecodeNull(t *testing.T) {
	c := setup(t, conn.Options{})
	var b pipeline.Batch
	var cb cmds.Builder
	b.Int(cb.Rpush("l", "x").Build())
	p := pipeline.DecodeNull(&b, cb.Brpop([]string{"l"}, 10*time.Millisecond).Build(), cmds.PoppedOrNil)
	q := pipeline.DecodeNull(&b, cb.Lpop("l").Build(), cmds.String)
	require.NoError(t, b.Exec(testCtx(t), c))
	got, ok, err := p.Value()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, cmds.Popped{Key: "l", Element: "x"}, got)
	_, ok, err = q.Value()
	require.NoError(t, err)
	require.False(t, ok)
}
