package conn_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// TestXReadGroupNamedStreamsBlocks: XREADGROUP GROUP g STREAMS BLOCK 0
// STREAMS s > (a consumer named STREAMS) blocks on the server, which
// reads GROUP's two values as names; the guard stopped at the first
// STREAMS and took it for a command that does not block, so a Client sent
// it on its shared connection, where every other caller's command waited
// behind it. It goes on a connection of its own, as any blocking command.
func TestXReadGroupNamedStreamsBlocks(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	ctx := testCtx(t)
	_, err := srv.Do("XGROUP", "CREATE", "gs", "g", "$", "MKSTREAM")
	require.NoError(t, err)
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr})
	require.NoError(t, err)
	defer cl.Close()

	for _, args := range [][]any{
		{"XREADGROUP", "GROUP", "g", "STREAMS", "BLOCK", "0", "STREAMS", "gs", ">"},
		{"xreadgroup", "group", "g", "block", "block", "0", "streams", "gs", ">"},
	} {
		read := make(chan error, 1)
		go func() {
			v, err := cl.Do(ctx, args...)
			if err == nil && v.IsNull() {
				err = context.DeadlineExceeded // nothing read: cannot be with BLOCK 0
			}
			read <- err
		}()
		waitBlocked(t, 1)
		// The shared connection answers while the read waits.
		for i := range 10 {
			got, err := echo(ctx, cl, "free-"+strconv.Itoa(i))
			require.NoError(t, err, "%v", args)
			require.Equal(t, "free-"+strconv.Itoa(i), got)
		}
		require.Empty(t, read, "%v returned before anything was added", args)
		_, err = srv.Do("XADD", "gs", "*", "f", "v")
		require.NoError(t, err)
		require.NoError(t, <-read, "%v", args)
		waitBlocked(t, 0)
	}
	var buf [64]byte
	n, err := cl.DoInt(ctx, resp.Command(buf[:0], "XLEN", "gs"))
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
}

// TestTxEndWithArgumentKeepsMulti: DISCARD with an argument is refused
// by the server for its arity, inside the transaction, which stays open;
// the guard took it for the end of the MULTI, so MULTI, SET, DISCARD now
// was sent on the shared connection and the next caller's ECHO was
// answered QUEUED. It is a MULTI without its end: refused, nothing sent.
func TestTxEndWithArgumentKeepsMulti(t *testing.T) {
	ctx := testCtx(t)
	c := dial(t, conn.Options{})
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr})
	require.NoError(t, err)
	defer cl.Close()
	for _, s := range []struct {
		name string
		s    conn.Sender
	}{{"Conn", c}, {"Client", cl}} {
		var b pipeline.Batch
		b.Add("MULTI")
		b.Add("SET", "txk", "1")
		b.Add("DISCARD", "now")
		err := b.Exec(ctx, s.s)
		var ce *conn.CommandError
		require.ErrorAs(t, err, &ce, s.name)
		require.Equal(t, "MULTI", ce.Command, s.name)
		got, err := echo(ctx, s.s, "bystander")
		require.NoError(t, err, s.name)
		require.Equal(t, "bystander", got, s.name)
		// Its end without an argument is still its end.
		b.Reset()
		b.Add("MULTI")
		b.Add("SET", "txk", "1")
		b.Add("DISCARD")
		require.NoError(t, b.Exec(ctx, s.s), s.name)
		got, err = echo(ctx, s.s, "bystander")
		require.NoError(t, err, s.name)
		require.Equal(t, "bystander", got, s.name)
	}
}

// TestMultiWithArgumentQueuesNothing: MULTI with an argument is refused
// by the server for its arity and opens no transaction, so a BLPOP after
// it blocks at once; the guard took it for a MULTI, the BLPOP for one
// queued by it, and a Client sent MULTI x, BLPOP q 0, EXEC on its shared
// connection, where the next caller waited behind the BLPOP. The BLPOP
// is a blocking command, on a connection of its own.
func TestMultiWithArgumentQueuesNothing(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	ctx := testCtx(t)
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr})
	require.NoError(t, err)
	defer cl.Close()
	done := make(chan error, 1)
	var b pipeline.Batch
	b.Add("MULTI", "x")
	b.Add("BLPOP", "mq", "0")
	b.Add("EXEC")
	go func() { done <- b.Exec(ctx, cl) }()
	waitBlocked(t, 1)
	got, err := echo(ctx, cl, "bystander")
	require.NoError(t, err)
	require.Equal(t, "bystander", got)
	require.Empty(t, done)
	_, err = srv.Do("RPUSH", "mq", "v")
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.Equal(t, "v", b.Reply(1).Elems[1].Text(), "the BLPOP ran, outside any transaction")

	// On a Conn the BLPOP is a blocking command too: the liveness check
	// waits for it (it broke the connection at the read timeout).
	const readTimeout = 200 * time.Millisecond
	c := dial(t, conn.Options{ReadTimeout: readTimeout})
	go func() { done <- b.Exec(ctx, c) }()
	waitBlocked(t, 1)
	// Several read timeouts with nothing to read (a lower bound: the
	// liveness check had every chance to fire).
	time.Sleep(5 * readTimeout)
	require.NoError(t, c.Err())
	_, err = srv.Do("RPUSH", "mq", "w")
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.Equal(t, "w", b.Reply(1).Elems[1].Text())
}
