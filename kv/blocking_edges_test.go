package kv_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/kv"
)

// clientsOf returns a Client to the RESP3 server and one to the RESP2
// server, closed at cleanup.
func clientsOf(t *testing.T) map[string]struct {
	server *servertest.Server
	cl     *conn.Client
} {
	t.Helper()
	servertest.Need(t, srv)
	require.NotNil(t, srv2, "the RESP2 server did not start")
	out := map[string]struct {
		server *servertest.Server
		cl     *conn.Client
	}{}
	for name, s := range map[string]*servertest.Server{"RESP3": srv, "RESP2": srv2} {
		cl, err := conn.NewClient(testCtx(t), conn.Options{
			Addr:       s.Addr,
			MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond,
		})
		require.NoError(t, err)
		t.Cleanup(func() { cl.Close() })
		out[name] = struct {
			server *servertest.Server
			cl     *conn.Client
		}{s, cl}
	}
	return out
}

// waitBlocked waits until s has n clients blocked.
func waitBlocked(t *testing.T, s *servertest.Server, n string) {
	t.Helper()
	require.Eventually(t, func() bool {
		info, err := s.Do("INFO", "clients")
		return err == nil && strings.Contains(info, "blocked_clients:"+n+"\r\n")
	}, waitLong, time.Millisecond)
}

// Issue 15, finding 1 through the helpers: BLPop and a blocking
// XReadGroup on a Client whose connection is killed return ErrBroken,
// and the next one works.
func TestBlockingHelpersConnKilled(t *testing.T) {
	for name, tg := range clientsOf(t) {
		t.Run(name, func(t *testing.T) {
			tg.server.Flush(t)
			ctx := testCtx(t)
			_, err := kv.XGroupCreate(ctx, tg.cl, "jobs", "workers", "$")
			require.NoError(t, err)
			calls := map[string]func() error{
				"BLPop": func() error {
					_, _, _, err := kv.BLPop(ctx, tg.cl, 0, "q")
					return err
				},
				"XReadGroup": func() error {
					_, err := kv.XReadGroup(ctx, tg.cl, kv.XReadGroupArgs{
						Group: "workers", Consumer: "w1", Streams: []string{"jobs"}, Block: kv.BlockForever,
					})
					return err
				},
			}
			for what, call := range calls {
				ended := make(chan error, 1)
				go func() { ended <- call() }()
				waitBlocked(t, tg.server, "1")
				_, err := tg.server.Do("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
				require.NoError(t, err)
				select {
				case err := <-ended:
					require.ErrorIs(t, err, conn.ErrBroken, what)
				case <-time.After(waitLong):
					t.Fatalf("%s never returned after its connection was killed", what)
				}
			}
			_, err = tg.server.Do("RPUSH", "q", "x")
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				_, v, ok, err := kv.BLPop(ctx, tg.cl, 0, "q")
				return err == nil && ok && v == "x"
			}, waitLong, time.Millisecond)
		})
	}
}

// Issue 15, finding 2 through the helpers: a blocking XReadGroup whose
// ctx ends has been unblocked when it returns, so an entry added right
// after is delivered to nobody: no consumer has it pending, and the next
// read gets it.
func TestXReadGroupCancelledDeliversToNobody(t *testing.T) {
	for name, tg := range clientsOf(t) {
		t.Run(name, func(t *testing.T) {
			tg.server.Flush(t)
			_, err := kv.XGroupCreate(testCtx(t), tg.cl, "jobs", "workers", "$")
			require.NoError(t, err)
			for i := range 10 {
				ctx, cancel := context.WithCancel(testCtx(t))
				ended := make(chan error, 1)
				go func() {
					_, err := kv.XReadGroup(ctx, tg.cl, kv.XReadGroupArgs{
						Group: "workers", Consumer: "w1", Streams: []string{"jobs"}, Block: kv.BlockForever,
					})
					ended <- err
				}()
				waitBlocked(t, tg.server, "1")
				cancel()
				require.ErrorIs(t, <-ended, context.Canceled)
				id, err := kv.XAdd(testCtx(t), tg.cl, "jobs", "n", "v")
				require.NoError(t, err)
				pending, err := tg.server.Do("XPENDING", "jobs", "workers")
				require.NoError(t, err)
				require.True(t, strings.HasPrefix(pending, "0\n"), "round %d: entry %s delivered to a reader that had gone: XPENDING %q", i, id, pending)
				st, err := kv.XReadGroup(testCtx(t), tg.cl, kv.XReadGroupArgs{
					Group: "workers", Consumer: "w2", Streams: []string{"jobs"}, NoAck: true,
				})
				require.NoError(t, err)
				require.Len(t, st, 1)
				require.Equal(t, id, st[0].Entries[0].ID)
			}
		})
	}
}

// A BLPop whose ctx ends is unblocked on the server with CLIENT UNBLOCK
// (as conn's doc says, and kv's now too), not by closing its connection:
// the lent connection lives on and the next BLPop blocks on it, under
// both protocols.
func TestBLPopCancelledUnblocksNotCloses(t *testing.T) {
	for name, tg := range clientsOf(t) {
		t.Run(name, func(t *testing.T) {
			tg.server.Flush(t)
			_, err := tg.server.Do("CONFIG", "RESETSTAT")
			require.NoError(t, err)
			blocked := func() string { // the id of the connection blocked in BLPOP
				list, err := tg.server.Do("CLIENT", "LIST")
				require.NoError(t, err)
				for _, line := range strings.Split(list, "\n") {
					if strings.Contains(line, " cmd=blpop ") && strings.Contains(line, " flags=b ") {
						id, _, _ := strings.Cut(line, " ")
						return id
					}
				}
				t.Fatalf("no connection blocked in BLPOP: %s", list)
				return ""
			}
			var ids []string
			for range 3 {
				ctx, cancel := context.WithCancel(testCtx(t))
				ended := make(chan error, 1)
				go func() {
					_, _, _, err := kv.BLPop(ctx, tg.cl, 0, "q")
					ended <- err
				}()
				waitBlocked(t, tg.server, "1")
				ids = append(ids, blocked())
				cancel()
				require.ErrorIs(t, <-ended, context.Canceled)
				waitBlocked(t, tg.server, "0")
			}
			require.Equal(t, []string{ids[0], ids[0], ids[0]}, ids, "a cancelled BLPop's connection was closed and another dialed")
			stats, err := tg.server.Do("INFO", "commandstats")
			require.NoError(t, err)
			require.Contains(t, stats, "cmdstat_client|unblock:calls=3,")
		})
	}
}
