package conn_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// Issue 15, finding 1: a blocking call whose lent connection is killed
// returns (with ErrBroken) instead of hanging, and gives its slot back:
// after five kills with two slots, both slots lend at once, and a
// BLPOP works.
func TestClientBlockingConnKilled(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	before := goroutines()
	ctx := testCtx(t)
	cl, err := conn.NewClient(ctx, conn.Options{
		Addr:          srv.Addr,
		BlockingConns: 2,
		MinBackoff:    time.Millisecond, MaxBackoff: 10 * time.Millisecond,
	})
	require.NoError(t, err)
	for i := range 5 {
		ended := make(chan error, 1)
		go func() {
			_, err := cl.Do(ctx, "BLPOP", "killed-q", "0") // only the kill can end it
			ended <- err
		}()
		waitBlocked(t, 1)
		_, err := srv.Do("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
		require.NoError(t, err)
		select {
		case err := <-ended:
			require.ErrorIs(t, err, conn.ErrBroken, "kill %d", i)
		case <-time.After(waitLong):
			t.Fatalf("kill %d: the blocking call never returned after its connection was killed", i)
		}
	}
	// Every slot is free: both lend at the same time.
	var wg sync.WaitGroup
	both := make(chan struct{})
	var lent sync.WaitGroup
	lent.Add(2)
	errs := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- cl.Dedicated(ctx, func(c *conn.Conn) error {
				lent.Done()
				<-both
				_, err := c.Do(ctx, "PING")
				return err
			})
		}()
	}
	lent.Wait()
	close(both)
	wg.Wait()
	for range 2 {
		require.NoError(t, <-errs)
	}
	_, err = srv.Do("RPUSH", "killed-q", "after")
	require.NoError(t, err)
	v, err := cl.Do(ctx, "BLPOP", "killed-q", "0")
	require.NoError(t, err)
	require.Equal(t, "after", v.Elems[1].Text())
	require.NoError(t, cl.Close())
	checkNoLeak(t, before, 0)
}

// Issue 15, finding 1, the server killed and restarted: the blocked call
// returns with ErrBroken and the next one works.
func TestClientBlockingServerRestart(t *testing.T) {
	s := startServer(t, servertest.Options{})
	ctx := testCtx(t)
	cl, err := conn.NewClient(ctx, conn.Options{
		Addr:          s.Addr,
		BlockingConns: 1,
		MinBackoff:    time.Millisecond, MaxBackoff: 10 * time.Millisecond,
	})
	require.NoError(t, err)
	defer cl.Close()
	ended := make(chan error, 1)
	go func() {
		_, err := cl.Do(ctx, "BLPOP", "q", "0")
		ended <- err
	}()
	waitFor(t, "BLPOP blocking", func() bool {
		info, _ := s.Do("INFO", "clients")
		return strings.Contains(info, "blocked_clients:1\r\n")
	})
	s.Kill()
	select {
	case err := <-ended:
		require.ErrorIs(t, err, conn.ErrBroken)
	case <-time.After(waitLong):
		t.Fatal("the blocking call never returned after the server was killed")
	}
	require.NoError(t, s.Restart())
	_, err = s.Do("RPUSH", "q", "x")
	require.NoError(t, err)
	var v resp.Value
	waitFor(t, "a BLPOP after the restart", func() bool {
		v, err = cl.Do(ctx, "BLPOP", "q", "0")
		return err == nil
	})
	require.Equal(t, "x", v.Elems[1].Text())
}

// Issue 15, finding 2: a BLPOP whose ctx ends returns only once the
// server no longer holds it, so an element pushed right after it returned
// is never popped for nobody: each is either still in the list or was
// returned to the caller. Under RESP2 too, where the lent connection's
// CLIENT ID comes from CLIENT ID rather than HELLO.
func TestClientCancelledBlockingPopLosesNothing(t *testing.T) {
	for _, proto := range []int{3, 2} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			servertest.Need(t, srv)
			srv.Flush(t)
			before := goroutines()
			cl, err := conn.NewClient(testCtx(t), conn.Options{Addr: srv.Addr, Protocol: proto})
			require.NoError(t, err)
			lost, returned := 0, 0
			for i := range 20 {
				elem := "e" + strconv.Itoa(i)
				ctx, cancel := context.WithCancel(testCtx(t))
				ended := make(chan error, 1)
				var v resp.Value
				go func() {
					var err error
					v, err = cl.Do(ctx, "BLPOP", "cancel-q", "0")
					ended <- err
				}()
				waitBlocked(t, 1)
				cancel()
				err := <-ended
				_, perr := srv.Do("RPUSH", "cancel-q", elem)
				require.NoError(t, perr)
				if err == nil {
					// The reply won the race: it must be a real pop, returned.
					require.Equal(t, elem, v.Elems[1].Text())
					returned++
					continue
				}
				require.ErrorIs(t, err, context.Canceled)
				got, perr := srv.Do("LPOP", "cancel-q")
				require.NoError(t, perr)
				if got != elem {
					lost++
				}
			}
			t.Logf("20 cancelled BLPOPs: %d lost, %d returned to the caller", lost, returned)
			require.Zero(t, lost, "elements popped for a caller that had gone")
			n, err := srv.Do("LLEN", "cancel-q")
			require.NoError(t, err)
			require.Equal(t, "0", n)
			_, err = srv.Do("RPUSH", "cancel-q", "last")
			require.NoError(t, err)
			v, err := cl.Do(testCtx(t), "BLPOP", "cancel-q", "0")
			require.NoError(t, err)
			require.Equal(t, "last", v.Elems[1].Text())
			// The lent connection was unblocked, not closed: one
			// connection served all 21 blocking calls.
			list, err := srv.Do("CLIENT", "LIST")
			require.NoError(t, err)
			require.Equal(t, 1, strings.Count(list, " cmd=blpop "), "connections that ran BLPOP:\n%s", list)
			require.NoError(t, cl.Close())
			checkNoLeak(t, before, 0)
		})
	}
}

// A cancelled submission of two BLPOPs whose first popped at once: that
// reply won the race, so the call returns both replies (the element and
// the unblocked one's nil) rather than ctx's error.
func TestClientCancelledBlockingBatchReturnsWhatWasPopped(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	cl, err := conn.NewClient(testCtx(t), conn.Options{Addr: srv.Addr})
	require.NoError(t, err)
	defer cl.Close()
	_, err = srv.Do("RPUSH", "has", "popped")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(testCtx(t))
	var b pipeline.Batch
	b.Add("BLPOP", "has", "0")
	b.Add("BLPOP", "empty", "0")
	ended := make(chan error, 1)
	go func() { ended <- b.Exec(ctx, cl) }()
	waitBlocked(t, 1) // the second
	cancel()
	require.NoError(t, <-ended)
	require.Equal(t, "popped", b.Reply(0).Elems[1].Text())
	require.True(t, b.Reply(1).IsNull(), "the unblocked BLPOP: %v", b.Reply(1))
	waitBlocked(t, 0)
}

// With the Client's shared connection killed (and no redial soon), a
// cancelled BLPOP is unblocked through a connection of its own: still
// nothing is popped for nobody.
func TestClientCancelledBlockingPopSharedConnDown(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	ctx := testCtx(t)
	lost := 0
	for i := range 10 {
		name := "shared-down-" + strconv.Itoa(i)
		cl, err := conn.NewClient(ctx, conn.Options{
			Addr: srv.Addr, ClientName: name,
			MinBackoff: time.Hour, // no redial within the test
		})
		require.NoError(t, err)
		bctx, cancel := context.WithCancel(ctx)
		ended := make(chan error, 1)
		go func() {
			_, err := cl.Do(bctx, "BLPOP", "down-q", "0")
			ended <- err
		}()
		waitBlocked(t, 1)
		list, err := srv.Do("CLIENT", "LIST")
		require.NoError(t, err)
		shared := ""
		for line := range strings.Lines(list) {
			if strings.Contains(line, " name="+name+" ") && !strings.Contains(line, " cmd=blpop ") {
				shared, _, _ = strings.Cut(strings.TrimPrefix(line, "id="), " ")
			}
		}
		require.NotEmpty(t, shared, "the shared connection in:\n%s", list)
		_, err = srv.Do("CLIENT", "KILL", "ID", shared)
		require.NoError(t, err)
		cancel()
		require.ErrorIs(t, <-ended, context.Canceled)
		_, err = srv.Do("RPUSH", "down-q", "kept")
		require.NoError(t, err)
		if got, err := srv.Do("LPOP", "down-q"); err != nil || got != "kept" {
			lost++
		}
		require.NoError(t, cl.Close())
	}
	require.Zero(t, lost, "elements popped for a caller that had gone")
}

// Issue 15, finding 3: WAIT counts the writes of the caller, made on the
// Client's shared connection: with the only replica frozen, WAIT 1 after
// a SET answers 0; with it running, 1.
func TestClientWaitCountsOwnWrites(t *testing.T) {
	primary := startServer(t, servertest.Options{})
	replica := startServer(t, servertest.Options{Args: []string{"--replicaof", "127.0.0.1", strconv.Itoa(primary.Port)}})
	waitFor(t, "the replica in sync", func() bool {
		info, _ := replica.Do("INFO", "replication")
		return strings.Contains(info, "master_link_status:up")
	})
	ctx := testCtx(t)
	cl, err := conn.NewClient(ctx, conn.Options{Addr: primary.Addr})
	require.NoError(t, err)
	defer cl.Close()

	_, err = cl.Do(ctx, "SET", "durable", "1")
	require.NoError(t, err)
	n, err := cl.DoInt(ctx, resp.Command(nil, "WAIT", "1", "10000"))
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "WAIT with the replica running")

	pid := replica.Pid()
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) }) // before its Stop
	_, err = cl.Do(ctx, "SET", "durable", "2")
	require.NoError(t, err)
	n, err = cl.DoInt(ctx, resp.Command(nil, "WAIT", "1", "300"))
	require.NoError(t, err)
	require.EqualValues(t, 0, n, "WAIT with the only replica frozen claimed the write reached it")

	require.NoError(t, syscall.Kill(pid, syscall.SIGCONT))
	n, err = cl.DoInt(ctx, resp.Command(nil, "WAIT", "1", "10000"))
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "WAIT once the replica runs again")
}

// A Client refuses WAIT and WAITAOF without a timeout: on its shared
// connection they would hold up every call for ever. Nothing is sent.
func TestClientRefusesWaitForever(t *testing.T) {
	servertest.Need(t, srv)
	cl, err := conn.NewClient(testCtx(t), conn.Options{Addr: srv.Addr})
	require.NoError(t, err)
	defer cl.Close()
	srv.ResetStats(t)
	_, err = cl.Do(testCtx(t), "WAIT", "1", "0")
	var ce *conn.CommandError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "WAIT", ce.Command)
	_, err = cl.Do(testCtx(t), "WAITAOF", "0", "1", "0")
	require.ErrorIs(t, err, conn.ErrCommandRefused)
	require.Zero(t, srv.CommandCalls(t, "wait"))
	n, err := cl.DoInt(testCtx(t), resp.Command(nil, "WAIT", "0", "1"))
	require.NoError(t, err)
	require.Zero(t, n, "WAIT 0 1 on a server without replicas")
}

// Issue 15, finding 7: the server closing an idle connection (its
// timeout, or CLIENT KILL) does not fail the next call with ErrBroken:
// nothing was sent, so the Client redials and sends it.
func TestClientIdleConnClosedByServer(t *testing.T) {
	for _, how := range []string{"timeout", "kill"} {
		t.Run(how, func(t *testing.T) {
			s := startServer(t, servertest.Options{})
			ctx := testCtx(t)
			cl, err := conn.NewClient(ctx, conn.Options{Addr: s.Addr, ClientName: "idle-victim"})
			require.NoError(t, err)
			defer cl.Close()
			// A dedicated connection, idle in the pool, too.
			_, err = cl.Do(ctx, "BLPOP", "nothing", "0.01")
			require.NoError(t, err)
			got, err := echo(ctx, cl, "before")
			require.NoError(t, err)
			require.Equal(t, "before", got)
			switch how {
			case "timeout":
				_, err = s.Do("CONFIG", "SET", "timeout", "1")
			case "kill":
				_, err = s.Do("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
			}
			require.NoError(t, err)
			waitFor(t, "the server to close the idle connections", func() bool {
				list, _ := s.Do("CLIENT", "LIST")
				return !strings.Contains(list, "name=idle-victim ")
			})
			if how == "timeout" {
				_, err = s.Do("CONFIG", "SET", "timeout", "0")
				require.NoError(t, err)
			}
			got, err = echo(ctx, cl, "after")
			require.NoError(t, err, "the first call after the server closed the idle connection")
			require.Equal(t, "after", got)
			err = cl.Dedicated(ctx, func(c *conn.Conn) error {
				_, err := c.Do(ctx, "PING")
				return err
			})
			require.NoError(t, err, "the first call on a Dedicated connection after the server closed the idle one")
			v, err := cl.Do(ctx, "BLPOP", "nothing", "0.01")
			require.NoError(t, err, "the first blocking call after the server closed the idle connection")
			require.True(t, v.IsNull(), "BLPOP = %v", v)
		})
	}
}

// Client.Close while a blocking call waits ends it with ErrClosed.
func TestClientCloseDuringBlockingCall(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	before := goroutines()
	cl, err := conn.NewClient(testCtx(t), conn.Options{Addr: srv.Addr})
	require.NoError(t, err)
	ended := make(chan error, 1)
	go func() {
		_, err := cl.Do(context.Background(), "BLPOP", "close-q", "0")
		ended <- err
	}()
	waitBlocked(t, 1)
	require.NoError(t, cl.Close())
	select {
	case err := <-ended:
		require.True(t, errors.Is(err, conn.ErrClosed), "blocked call ended with %v, want ErrClosed", err)
	case <-time.After(waitLong):
		t.Fatal("Close did not end the blocking call")
	}
	checkNoLeak(t, before, 0)
}
