package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// wrapSender is a Sender that annotates its errors, as a tracing or
// routing layer might: a failed Send is wrapped, and a single command
// whose reply is a server error fails with that error wrapped
// (fmt.Errorf("%w")) rather than as the bare reply.
type wrapSender struct{ s conn.Sender }

func (w wrapSender) Send(ctx context.Context, cmds wire.Cmds, h wire.Handler) error {
	if cmds.Len() == 1 {
		h = &wrapHandler{h: h}
	}
	if err := w.s.Send(ctx, cmds, h); err != nil {
		return fmt.Errorf("wrapSender: send: %w", err)
	}
	return nil
}

func (w wrapSender) Do(ctx context.Context, args ...any) (resp.Value, error) {
	return wire.Do(ctx, w, args...)
}

func (w wrapSender) DoFunc(ctx context.Context, cmd resp.Cmd, fn func(resp.Value) error) error {
	return wire.DoFunc(ctx, w, cmd, fn)
}

func (w wrapSender) DoInt(ctx context.Context, cmd resp.Cmd) (int64, error) {
	return wire.DoInt(ctx, w, cmd)
}

// wrapHandler turns a one-command submission's error reply into a wrapped
// error given to Done.
type wrapHandler struct {
	h   wire.Handler
	err error
}

func (w *wrapHandler) Reply(i int, v resp.Value) {
	if v.IsError() {
		w.err = fmt.Errorf("wrapSender: reply: %w", v.Err())
		return
	}
	w.h.Reply(i, v)
}

func (w *wrapHandler) Waits() bool { return w.h.Waits() }

func (w *wrapHandler) Done(err error) {
	if err == nil {
		err = w.err
	}
	w.h.Done(err)
}

// TestScriptedWrappingSender: over a Sender that wraps its errors, a cold
// script's NOSCRIPT still triggers one SCRIPT LOAD and a re-send, a script
// error still reaches the caller as a *resp.ServerError (wrapped), and a
// script that does not compile still fails its load once for good.
func TestScriptedWrappingSender(t *testing.T) {
	c := ready(t)
	ctx := testCtx(t)
	x := dispatch.NewScripted(wrapSender{c})

	var a dispatch.Args
	a.Arg("hello")
	got, err := evalText(ctx, x, echo, &a)
	require.NoError(t, err, "NOSCRIPT through a wrapping sender must reload")
	require.Equal(t, "hello", got)
	require.Equal(t, dispatch.Stats{Loads: 1, NoScripts: 1, EvalSHAs: 2}, x.Stats())
	require.EqualValues(t, 1, loads(t))

	boom := dispatch.NewScript("boom", "return redis.error_reply('EMQARG boom')")
	_, err = evalText(ctx, x, boom, nil)
	se, ok := errors.AsType[*resp.ServerError](err)
	require.True(t, ok, "Eval = %v, want a wrapped *resp.ServerError", err)
	require.Equal(t, "EMQARG boom", se.Msg)

	bad := dispatch.NewScript("bad", "this is not lua")
	for range 2 {
		_, err = evalText(ctx, x, bad, nil)
		le, ok := errors.AsType[*dispatch.LoadError](err)
		require.True(t, ok, "Eval = %v, want a *LoadError", err)
		require.Equal(t, "bad", le.Script)
	}
	require.EqualValues(t, 3, loads(t), "a load refused with ERR is not tried again")
}
