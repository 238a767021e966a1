package emq

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

// wrapExec is an Executor that annotates every error of the executor it
// wraps with fmt.Errorf("%w"), as a tracing or routing layer might.
type wrapExec struct{ x dispatch.Executor }

func (w wrapExec) Eval(ctx context.Context, s *dispatch.Script, a *dispatch.Args, fn func(resp.Value) error) error {
	if err := w.x.Eval(ctx, s, a, fn); err != nil {
		return fmt.Errorf("wrapExec %s: %w", s.Name(), err)
	}
	return nil
}

func (w wrapExec) EvalBatch(ctx context.Context, b *dispatch.Batch) error {
	if err := w.x.EvalBatch(ctx, b); err != nil {
		return fmt.Errorf("wrapExec batch: %w", err)
	}
	return nil
}

// TestWrappingExecutorTypedErrors: through an executor that wraps its
// errors, a script's error reply is still a *ScriptError matching ErrKind
// or ErrArg, with the server's text; the scripts still load on a cold
// cache; a wrapped load failure stays a *dispatch.LoadError.
func TestWrappingExecutorTypedErrors(t *testing.T) {
	fresh(t, "wrap") // flushes the scripts: every call starts cold
	c := dial(t)
	q, err := Open(context.Background(), c, "wrap", WithExecutor(wrapExec{dispatch.NewScripted(c)}))
	require.NoError(t, err)
	ctx := tctx(t)

	id, err := q.Enqueue(ctx, []byte("x"))
	require.NoError(t, err, "a cold script loads through a wrapping executor")
	require.True(t, ValidID(id))

	_, err = q.EnqueueID(ctx, "ABC0000000000A", nil)
	require.ErrorIs(t, err, ErrKind)
	var se *ScriptError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "enqueue", se.Script)
	require.Equal(t, "EMQKIND job id must be JOB-namespaced", se.Error())

	// An EMQARG reply (host-side checks keep the verbs from sending one).
	o := getOp("promote")
	o.args.Key(q.keys.Delayed)
	o.args.Key(q.keys.Pending)
	o.args.Key(q.keys.Base)
	o.args.Arg("-1")
	_, err = q.evalInt(ctx, scriptPromote, o)
	require.ErrorIs(t, err, ErrArg)
	require.ErrorAs(t, err, &se)
	require.Equal(t, "EMQARG limit must be an integer >= 0", se.Error())

	// A load that failed wraps the server's refusal but is not a reply.
	load := &dispatch.LoadError{Script: "x", SHA: "0", Err: &resp.ServerError{Msg: "ERR Error compiling script"}}
	err = wrapErr("x", fmt.Errorf("wrapExec x: %w", load))
	require.ErrorIs(t, err, error(load))
	require.False(t, errors.As(err, &se), "a load failure is not a *ScriptError")
}
