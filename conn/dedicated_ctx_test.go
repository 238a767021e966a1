package conn_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
)

// A ctx that ends while a dedicated connection is dialed, or while its
// handshake waits for a silent server, sends nothing: the blocking call
// (and Dedicated) returns an error matching both ctx's error and
// conn.ErrNotConnected, never ErrBroken.
func TestDedicatedDialCtxEnds(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() }) // reads nothing, answers nothing
		}
	}()
	for _, stage := range []string{"dial", "handshake"} {
		t.Run(stage, func(t *testing.T) {
			var first atomic.Bool
			var d net.Dialer
			cl, err := conn.NewClient(testCtx(t), conn.Options{Addr: srv.Addr, Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
				if first.CompareAndSwap(false, true) {
					return d.DialContext(ctx, network, addr) // the shared connection
				}
				if stage == "dial" {
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return d.DialContext(ctx, "tcp", silent.Addr().String())
			}})
			require.NoError(t, err)
			t.Cleanup(func() { cl.Close() })
			check := func(err, want error) {
				t.Helper()
				require.ErrorIs(t, err, want)
				require.ErrorIs(t, err, conn.ErrNotConnected)
				require.NotErrorIs(t, err, conn.ErrBroken)
			}
			ctx, cancel := context.WithTimeout(testCtx(t), 50*time.Millisecond)
			defer cancel()
			_, err = cl.Do(ctx, "BLPOP", "q", 0.0)
			check(err, context.DeadlineExceeded)
			ctx, cancel = context.WithCancel(testCtx(t))
			time.AfterFunc(50*time.Millisecond, cancel)
			err = cl.Dedicated(ctx, func(*conn.Conn) error { return errors.New("lent") })
			check(err, context.Canceled)
			v, err := cl.Do(testCtx(t), "PING") // the shared connection is fine
			require.NoError(t, err)
			require.Equal(t, "PONG", v.Text())
		})
	}
}
