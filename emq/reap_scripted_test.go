package emq

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/dispatch"
)

// errorReplies returns the server's error replies of kind code since the
// last ResetStats, from INFO errorstats: an unknown command such as
// EMQ.REAP on a server without the module counts as ERR.
func errorReplies(t testing.TB, code string) string {
	t.Helper()
	for line := range strings.Lines(do(t, "INFO", "errorstats")) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "errorstat_"+code+":"); ok {
			return rest
		}
	}
	return ""
}

// TestReapIsAlwaysScripted: whatever executor a queue is opened with, a
// native one included, Reap runs the reap script by EVALSHA. On a plain
// server (no module) it works, and the server saw EVALSHA and no EMQ.REAP
// (which it would have answered ERR unknown command).
func TestReapIsAlwaysScripted(t *testing.T) {
	cases := map[string]func(c dispatch.Executor, native dispatch.Executor) []Option{
		"WithExecutor(native)": func(_, n dispatch.Executor) []Option { return []Option{WithExecutor(n)} },
		"WithExecutor(native)+WithExtensionExecutor(native)": func(_, n dispatch.Executor) []Option {
			return []Option{WithExecutor(n), WithExtensionExecutor(n)}
		},
		"WithExecutor(native)+WithExtensionExecutor(scripted)": func(s, n dispatch.Executor) []Option {
			return []Option{WithExecutor(n), WithExtensionExecutor(s)}
		},
		"WithExtensionExecutor(native)": func(_, n dispatch.Executor) []Option { return []Option{WithExtensionExecutor(n)} },
	}
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) {
			plain := fresh(t, "reap-native")
			ctx := tctx(t)
			id, err := plain.Enqueue(ctx, []byte("x"))
			require.NoError(t, err)
			job, ok, err := plain.Claim(ctx, time.Minute)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, id, job.ID)
			do(t, "ZADD", plain.keys.Active, "1", id) // the lease has run out

			c := dial(t)
			q, err := Open(context.Background(), c, "reap-native", opts(dispatch.NewScripted(c), dispatch.NewNative(c))...)
			require.NoError(t, err)
			srv.ResetStats(t)
			n, err := q.Reap(ctx, 10, 5)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			require.Equal(t, "pending", row(t, q, id)["state"])
			require.Positive(t, srv.CommandCalls(t, "evalsha"), "reap went by EVALSHA")
			require.Zero(t, srv.CommandCalls(t, "emq.reap"))
			require.Empty(t, errorReplies(t, "ERR"), "the server refused a command (EMQ.REAP?)")
		})
	}
}
