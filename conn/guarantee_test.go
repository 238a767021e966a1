package conn_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// The reply-order guarantee against every call a user can make: each
// test here was a way, through ordinary calls, to make a caller receive
// another's reply, send what it should not, or break the connection for
// everyone.

// replyModelCommands change how the server replies on a connection; a
// shared pipelined connection refuses every one before sending it.
var replyModelCommands = [][]string{
	{"SUBSCRIBE", "news"}, {"subscribe", "news"}, {"PSUBSCRIBE", "n*"}, {"SSUBSCRIBE", "news"},
	{"UNSUBSCRIBE"}, {"PUNSUBSCRIBE"}, {"SUNSUBSCRIBE", "news"},
	{"MONITOR"}, {"CLIENT", "REPLY", "OFF"}, {"client", "reply", "skip"},
	{"RESET"}, {"QUIT"}, {"HELLO", "2"}, {"SELECT", "1"}, {"AUTH", "nobody", "x"},
	{"SYNC"}, {"PSYNC", "?", "-1"},
	// Answered with nothing: the next caller's reply would be taken.
	{"REPLCONF", "ACK", "0"}, {"replconf", "getack", "*"},
}

// Finding 1: SUBSCRIBE through Do never completed under RESP3, and a
// later ECHO got the reply of the call after it. Now every command that
// changes the reply model is refused with a typed error naming it, nothing
// reaches the server, and the callers around it get their own replies.
func TestReplyModelCommandsRefused(t *testing.T) {
	for _, proto := range []int{3, 2} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			c := setup(t, conn.Options{Protocol: proto})
			srv.ResetStats(t)
			ctx := testCtx(t)
			for _, args := range replyModelCommands {
				_, err := c.Do(ctx, anys(args)...)
				require.ErrorIs(t, err, conn.ErrCommandRefused, "%v", args)
				var ce *conn.CommandError
				require.ErrorAs(t, err, &ce)
				require.True(t, strings.HasPrefix(strings.ToUpper(strings.Join(args, " ")), ce.Command), "%v named %q", args, ce.Command)
				require.NotEmpty(t, ce.Reason)
				got, err := echo(ctx, c, "after-"+args[0])
				require.NoError(t, err)
				require.Equal(t, "after-"+args[0], got)
			}
			for _, name := range []string{"subscribe", "psubscribe", "ssubscribe", "monitor", "reset", "quit", "select", "sync", "psync", "replconf"} {
				require.Zero(t, srv.CommandCalls(t, name), "%s reached the server", name)
			}
			require.NoError(t, c.Err())
		})
	}
}

// The refusal holds on every path: a Client, a Batch (the whole batch is
// refused, nothing sent) and a Stream (only that command fails).
func TestReplyModelRefusedEveryPath(t *testing.T) {
	c := setup(t, conn.Options{})
	srv.ResetStats(t)
	ctx := testCtx(t)
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr})
	require.NoError(t, err)
	defer cl.Close()
	_, err = cl.Do(ctx, "SUBSCRIBE", "news")
	require.ErrorIs(t, err, conn.ErrCommandRefused)
	var buf [64]byte
	err = cl.DoFunc(ctx, resp.Command(buf[:0], "PSUBSCRIBE", "n*"), nil)
	require.ErrorIs(t, err, conn.ErrCommandRefused)

	var b pipeline.Batch
	b.Add("ECHO", "before")
	b.Add("SUBSCRIBE", "news")
	b.Add("ECHO", "after")
	require.ErrorIs(t, b.Exec(ctx, c), conn.ErrCommandRefused)
	require.Zero(t, srv.CommandCalls(t, "echo"), "a refused batch sent some of its commands")

	var outcomes []string
	st := pipeline.NewStream(c, func(seq int64, v resp.Value, err error) {
		if err != nil {
			outcomes = append(outcomes, strconv.FormatInt(seq, 10)+":refused")
			return
		}
		outcomes = append(outcomes, strconv.FormatInt(seq, 10)+":"+v.Text())
	}, pipeline.StreamOptions{})
	require.NoError(t, st.Add(ctx, "ECHO", "a"))
	err = st.Add(ctx, "SUBSCRIBE", "news")
	require.ErrorIs(t, err, conn.ErrCommandRefused)
	require.NoError(t, st.Close(ctx))
	require.Equal(t, []string{"0:a", "1:refused"}, outcomes)
	require.Zero(t, srv.CommandCalls(t, "subscribe"))
	got, err := echo(ctx, cl, "client-still-fine")
	require.NoError(t, err)
	require.Equal(t, "client-still-fine", got)
}

// A transaction on a shared connection is sent whole or not at all: a
// lone MULTI would queue other callers' commands into it (they would get
// +QUEUED), and WATCH would tie another caller's EXEC to its keys.
// Client.Dedicated lends a connection where both are allowed.
func TestTransactionsWholeOrDedicated(t *testing.T) {
	c := setup(t, conn.Options{})
	ctx := testCtx(t)
	_, err := c.Do(ctx, "MULTI")
	require.ErrorIs(t, err, conn.ErrCommandRefused)
	_, err = c.Do(ctx, "WATCH", "k")
	require.ErrorIs(t, err, conn.ErrCommandRefused)
	got, err := echo(ctx, c, "not-queued")
	require.NoError(t, err)
	require.Equal(t, "not-queued", got)

	var b pipeline.Batch
	b.Add("MULTI")
	b.Add("SET", "tx", "1")
	b.Add("INCR", "tx")
	b.Add("EXEC")
	require.NoError(t, b.Exec(ctx, c))
	require.Equal(t, "QUEUED", b.Reply(1).Text())
	exec := b.Reply(3)
	require.Equal(t, 2, exec.Len())
	require.EqualValues(t, 2, exec.Elems[1].Int)

	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr})
	require.NoError(t, err)
	defer cl.Close()
	err = cl.Dedicated(ctx, func(d *conn.Conn) error {
		if _, err := d.Do(ctx, "WATCH", "tx"); err != nil {
			return err
		}
		if _, err := d.Do(ctx, "MULTI"); err != nil {
			return err
		}
		if v, err := d.Do(ctx, "INCR", "tx"); err != nil || v.Text() != "QUEUED" {
			return errors.New("INCR in a transaction: " + v.String())
		}
		// Another caller meanwhile, on the Client's shared connection.
		if got, err := echo(ctx, cl, "outside"); err != nil || got != "outside" {
			return errors.New("the shared connection answered " + got)
		}
		v, err := d.Do(ctx, "EXEC")
		if err != nil || v.Len() != 1 || v.Elems[0].Int != 3 {
			return errors.New("EXEC: " + v.String())
		}
		return nil
	})
	require.NoError(t, err)
}

// Finding 9: a command begun with Begin(n) and given another number of
// arguments used to reach the server, which closed the shared connection.
// Now Exec refuses the batch and nothing is sent.
func TestBatchArgCountRefused(t *testing.T) {
	c := setup(t, conn.Options{})
	srv.ResetStats(t)
	ctx := testCtx(t)
	cases := map[string]func(b *pipeline.Batch){
		"fewer":            func(b *pipeline.Batch) { b.Begin(3); b.Arg("SET"); b.Arg("k") },
		"more":             func(b *pipeline.Batch) { b.Begin(2); b.Arg("ECHO"); b.Arg("x"); b.Arg("y") },
		"fewer then begin": func(b *pipeline.Batch) { b.Begin(3); b.Arg("SET"); b.Begin(2); b.Arg("ECHO"); b.Arg("x") },
		"arg without begin": func(b *pipeline.Batch) {
			b.Add("ECHO", "x")
			b.Arg("stray")
		},
		"no arguments": func(b *pipeline.Batch) { b.Add() },
		"begin zero":   func(b *pipeline.Batch) { b.Begin(0) },
	}
	for name, build := range cases {
		var b pipeline.Batch
		b.Add("ECHO", "first")
		build(&b)
		b.Add("ECHO", "last")
		err := b.Exec(ctx, c)
		require.Error(t, err, name)
		require.True(t, errors.Is(err, pipeline.ErrIncompleteCommand) || errors.Is(err, pipeline.ErrEmptyCommand), "%s: %v", name, err)
	}
	require.Zero(t, srv.CommandCalls(t, "echo"), "a refused batch reached the server")
	require.Zero(t, srv.CommandCalls(t, "set"))
	got, err := echo(ctx, c, "intact")
	require.NoError(t, err)
	require.Equal(t, "intact", got)
}

// Finding 4: a context already done sent its command anyway (500
// INCRs with a cancelled ctx left the counter at 500). Now nothing is
// sent, on every path.
func TestDoneContextSendsNothing(t *testing.T) {
	c := setup(t, conn.Options{})
	ctx := testCtx(t)
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr})
	require.NoError(t, err)
	defer cl.Close()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	var buf [64]byte
	for i := range 500 {
		var s conn.Sender = c
		if i%2 == 1 {
			s = cl
		}
		_, err := s.Do(done, "INCR", "counter")
		require.ErrorIs(t, err, context.Canceled)
		err = s.DoFunc(done, resp.Command(buf[:0], "INCR", "counter"), nil)
		require.ErrorIs(t, err, context.Canceled)
		_, err = s.DoInt(done, resp.Command(buf[:0], "INCR", "counter"))
		require.ErrorIs(t, err, context.Canceled)
	}
	var b pipeline.Batch
	b.Add("INCR", "counter")
	require.ErrorIs(t, b.Exec(done, c), context.Canceled)
	require.ErrorIs(t, b.Exec(done, cl), context.Canceled)
	st := pipeline.NewStream(c, func(int64, resp.Value, error) {}, pipeline.StreamOptions{})
	require.NoError(t, st.Add(ctx, "INCR", "counter-stream"))
	require.ErrorIs(t, st.Flush(done), context.Canceled)
	st.Close(ctx)
	v, err := c.Do(ctx, "MGET", "counter", "counter-stream")
	require.NoError(t, err)
	require.True(t, v.Elems[0].IsNull(), "counter = %s", v.Elems[0])
	require.True(t, v.Elems[1].IsNull(), "counter-stream = %s", v.Elems[1])
}

// Finding 5: BLPOP with a timeout longer than ReadTimeout on a shared
// Conn broke the connection for every caller queued behind it. Now the
// liveness check allows for the command's own timeout (none while a
// timeout of 0 is outstanding), and the callers behind it get their own
// replies once it returns.
func TestBlockingOnConnKeepsLiveness(t *testing.T) {
	for _, timeout := range []string{"30", "0"} {
		t.Run("timeout="+timeout, func(t *testing.T) {
			const readTimeout = 200 * time.Millisecond
			c := setup(t, conn.Options{ReadTimeout: readTimeout})
			ctx := testCtx(t)
			popped := make(chan resp.Value, 1)
			go func() {
				v, err := c.Do(ctx, "BLPOP", "bq", timeout)
				if err != nil {
					v = resp.Value{Type: resp.Error, Str: []byte(err.Error())}
				}
				popped <- v
			}()
			waitBlocked(t, 1)
			echoed := make(chan string, 1)
			go func() {
				got, err := echo(ctx, c, "behind")
				if err != nil {
					got = err.Error()
				}
				echoed <- got
			}()
			// Let several read timeouts pass with nothing to read (a lower
			// bound: the liveness check had every chance to fire).
			time.Sleep(5 * readTimeout)
			require.NoError(t, c.Err())
			_, err := srv.Do("RPUSH", "bq", "job")
			require.NoError(t, err)
			v := <-popped
			require.Equal(t, 2, v.Len(), "BLPOP: %s", v)
			require.Equal(t, "job", v.Elems[1].Text())
			require.Equal(t, "behind", <-echoed)
			require.NoError(t, c.Err())
			// And liveness is back once the blocking command has ended.
			got, err := echo(ctx, c, "again")
			require.NoError(t, err)
			require.Equal(t, "again", got)
		})
	}
}

// On a Client a blocking command gets a connection of its own: the
// shared connection keeps answering while BLPOP waits, and a caller that
// gives up on BLPOP has it unblocked before the call returns, so the
// server never pops an element for nobody.
func TestClientBlockingDedicated(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	ctx := testCtx(t)
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr, ReadTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	defer cl.Close()

	popped := make(chan resp.Value, 1)
	go func() {
		v, err := cl.Do(ctx, "BLPOP", "cq", "0")
		if err != nil {
			v = resp.Value{Type: resp.Error, Str: []byte(err.Error())}
		}
		popped <- v
	}()
	waitBlocked(t, 1)
	for i := range 100 {
		got, err := echo(ctx, cl, "free-"+strconv.Itoa(i))
		require.NoError(t, err)
		require.Equal(t, "free-"+strconv.Itoa(i), got)
	}
	require.Empty(t, popped, "BLPOP returned before anything was pushed")
	_, err = srv.Do("RPUSH", "cq", "x")
	require.NoError(t, err)
	require.Equal(t, "x", (<-popped).Elems[1].Text())

	// A caller that gives up.
	gctx, give := context.WithCancel(ctx)
	gave := make(chan error, 1)
	go func() {
		_, err := cl.Do(gctx, "BLPOP", "cq", "0")
		gave <- err
	}()
	waitBlocked(t, 1)
	give()
	require.ErrorIs(t, <-gave, context.Canceled)
	waitBlocked(t, 0) // unblocked before the call returned
	_, err = srv.Do("RPUSH", "cq", "kept")
	require.NoError(t, err)
	n, err := srv.Do("LLEN", "cq")
	require.NoError(t, err)
	require.Equal(t, "1", n, "the element was popped for a caller that had gone")

	// A Stream cannot carry a blocking command: it would hold up the
	// commands behind it.
	st := pipeline.NewStream(cl, func(int64, resp.Value, error) {}, pipeline.StreamOptions{})
	require.ErrorIs(t, st.Add(ctx, "BLPOP", "cq", "1"), conn.ErrCommandRefused)
	st.Close(ctx)
}

// waitBlocked waits until the server has n clients blocked.
func waitBlocked(t *testing.T, n int) {
	t.Helper()
	want := "blocked_clients:" + strconv.Itoa(n)
	servertest.Eventually(t, "the server to have "+want, func() bool {
		info, err := srv.Do("INFO", "clients")
		require.NoError(t, err)
		return strings.Contains(info, want+"\r\n")
	})
}

// anys is args as Do takes them.
func anys(args []string) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out
}
