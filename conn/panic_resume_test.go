package conn_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// An AfterCommand's panic in the middle of a pipeline, or of a Client's
// blocking call on a lent connection, is recovered by the reader, which
// resumes where the hook stopped (the hook path defers no recover per
// hook function): the hooks after it still see that command end, with
// its reply; every other command of the pipeline still gets its own
// reply; the call returns the *PanicError; a second panic is logged; and
// the connection goes on.
func TestAfterCommandPanicResumes(t *testing.T) {
	for _, target := range []string{"Conn", "Client", "Conn+OnPush"} {
		t.Run(target, func(t *testing.T) {
			ctx := testCtx(t)
			rec := &hookRecorder{}
			sink := &logSink{}
			boom := conn.Hook{AfterCommand: func(_ context.Context, cmd conn.CommandInfo, v resp.Value, _ time.Duration, _ error) {
				if cmd.Name == "ECHO" || cmd.Name == "BLPOP" {
					panic(errors.New("after " + v.Text()))
				}
			}}
			opts := conn.Options{Addr: srv.Addr, Hooks: []conn.Hook{boom, rec.hook()}, Logger: slog.New(sink)}
			s := targetSender(t, ctx, target, opts)
			key := "resume:" + target
			var rc resp.Cmds
			rc.Add("SET", key, "v")
			rc.Add("ECHO", "one")
			rc.Add("GET", key)
			rc.Add("ECHO", "two")
			rc.Add("PING")
			cmds, err := conn.CmdsOfBatch(&rc)
			require.NoError(t, err)
			h := &collect{done: make(chan error, 1)}
			require.NoError(t, noPanic(func() error { return s.Send(ctx, cmds, h) }))
			err = <-h.done
			var pe *conn.PanicError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, "AfterCommand", pe.Func)
			require.Equal(t, "after one", pe.Unwrap().Error(), "the first panic is the call's")
			require.Equal(t, []string{"AfterCommand"}, sink.funcs(), "the second is logged")
			require.Equal(t, []string{"OK", "one", "v", "two", "PONG"}, h.replies, "every reply reached the Handler")
			ev := rec.take()
			require.Equal(t, "bp5 +SET +ECHO +GET +ECHO +PING -SET -ECHO -GET -ECHO -PING ap5", script(ev))
			for _, e := range ev[6:11] {
				require.NoError(t, e.err, "%s", e.name)
			}
			require.Equal(t, "one", ev[7].reply, "the hook after the panicking one saw the reply")
			require.Equal(t, "two", ev[9].reply)

			if target == "Client" {
				// A blocking call, read on a lent connection.
				_, err := s.Do(ctx, "RPUSH", key+":l", "x")
				require.NoError(t, err)
				_, err = s.Do(ctx, "BLPOP", key+":l", 1)
				require.ErrorAs(t, err, &pe)
				require.Equal(t, "AfterCommand", pe.Func)
				ev := rec.take()
				require.Equal(t, "+RPUSH -RPUSH +BLPOP -BLPOP", script(ev))
				require.NoError(t, ev[3].err)
				n, err := s.Do(ctx, "LLEN", key+":l")
				require.NoError(t, err)
				require.Equal(t, int64(0), n.Int, "BLPOP ran")
			}
			v, err := s.Do(ctx, "GET", key)
			require.NoError(t, err)
			require.Equal(t, "v", v.Text())
		})
	}
}

// collect is a Handler keeping its replies as text.
type collect struct {
	replies []string
	done    chan error
}

func (c *collect) Reply(_ int, v resp.Value) { c.replies = append(c.replies, v.Text()) }
func (c *collect) Done(err error)            { c.done <- err }
func (c *collect) Waits() bool               { return true }

// A BeforeCommand's panic in the middle of a pipeline refuses the
// submission, and the Before functions share one recover, resumed past
// the hook that panicked: the next hook still sees that command begin,
// and every later command begins and ends once, with the *PanicError.
func TestBeforeCommandPanicResumes(t *testing.T) {
	ctx := testCtx(t)
	rec := &hookRecorder{}
	boom := conn.Hook{BeforeCommand: func(ctx context.Context, cmd conn.CommandInfo, _ conn.RawCommand) context.Context {
		if cmd.Name == "ECHO" {
			panic("before")
		}
		return ctx
	}}
	c := setup(t, conn.Options{Hooks: []conn.Hook{boom, rec.hook()}, Logger: slog.New(&logSink{})})
	var rc resp.Cmds
	rc.Add("SET", "resume:before", "v")
	rc.Add("ECHO", "one")
	rc.Add("ECHO", "two")
	rc.Add("GET", "resume:before")
	cmds, err := conn.CmdsOfBatch(&rc)
	require.NoError(t, err)
	err = c.Send(ctx, cmds, &collect{done: make(chan error, 1)})
	var pe *conn.PanicError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "BeforeCommand", pe.Func)
	ev := rec.take()
	require.Equal(t, "bp4 +SET +ECHO +ECHO +GET -SET -ECHO -ECHO -GET ap4", script(ev))
	for _, e := range ev[5:9] {
		require.ErrorAs(t, e.err, &pe)
	}
	n, err := c.Do(ctx, "EXISTS", "resume:before")
	require.NoError(t, err)
	require.Equal(t, int64(0), n.Int, "nothing was sent")
}
