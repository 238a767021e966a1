package pubsub_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/scriptpeer"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pubsub"
	"github.com/echomq/echomq-go/resp"
)

// The subscription connects as a conn.Client does, through the same
// handshake: TLS with a password and a client name; and RESP2 when the
// server has no HELLO.
func TestHandshake(t *testing.T) {
	s := startServer(t, servertest.Options{TLS: true, Password: "s3cret", Args: []string{"--rename-command", "HELLO", ""}})
	for _, c := range []struct {
		name string
		opts conn.Options
	}{
		{"TLS+AUTH, HELLO renamed away", conn.Options{
			Addr: s.TLSAddr, TLS: &tls.Config{RootCAs: s.CACertPool},
			Password: "s3cret", ClientName: "bus-tls",
		}},
		{"plain, HELLO renamed away", conn.Options{Addr: s.Addr, Password: "s3cret", ClientName: "bus"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := testCtx(t)
			sub := newSub(t, pubsub.Options{Options: c.opts})
			require.NoError(t, sub.Subscribe(ctx, "hs"))
			list, err := s.Do("CLIENT", "LIST")
			require.NoError(t, err)
			require.Contains(t, list, "name="+c.opts.ClientName+" ")
			pub, err := conn.Dial(ctx, conn.Options{Addr: s.Addr, Password: "s3cret"})
			require.NoError(t, err)
			defer pub.Close()
			require.Equal(t, 2, pub.Protocol(), "the fallback to RESP2")
			n, err := pubsub.Publish(ctx, pub, "hs", "over "+c.name)
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
			require.Equal(t, "over "+c.name, string(receive(t, sub).Payload))
		})
	}
	_, err := pubsub.New(testCtx(t), pubsub.Options{Options: conn.Options{Addr: s.Addr, Password: "wrong"}})
	require.True(t, resp.IsCode(err, "WRONGPASS"), "got %v", err)
	require.NotContains(t, err.Error(), "wrong")
}

// The health check pings a silent connection, in subscriber mode under
// both protocols (RESP2 answers PING there with ["pong", ""]): the
// connection stays up, no gap, and messages still flow.
func TestHealthCheckQuiet(t *testing.T) {
	for _, proto := range []int{3, 2} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			srv.ResetStats(t)
			ctx := testCtx(t)
			sub := newSub(t, pubsub.Options{
				Options:      conn.Options{Protocol: proto, ReadTimeout: 5 * time.Second},
				PingInterval: 10 * time.Millisecond,
			})
			require.NoError(t, sub.Subscribe(ctx, "quiet"))
			eventually(t, "five PINGs", func() bool { return srv.CommandCalls(t, "ping") >= 5 })
			pub := newClient(t, srv.Addr)
			_, err := pubsub.Publish(ctx, pub, "quiet", "still here")
			require.NoError(t, err)
			require.Equal(t, "still here", string(receive(t, sub).Payload))
			require.Zero(t, sub.Stats().Reconnects)
		})
	}
}

// A peer that confirms subscriptions but never answers PING (a silent
// network; no real server does this): the health check fails the
// connection after ReadTimeout with conn.ErrTimeout, reported as a gap,
// and the subscription reconnects and restores the channel.
func TestHealthCheckTimeout(t *testing.T) {
	servertest.Need(t, srv)
	var conns, pings atomic.Int32
	addr := scriptpeer.Listen(t, func(c net.Conn) {
		conns.Add(1)
		r := bufio.NewReader(c)
		for {
			args, err := scriptpeer.ReadCommand(r)
			if err != nil {
				return
			}
			var out string
			switch strings.ToUpper(args[0]) {
			case "HELLO":
				out = "%1\r\n$5\r\nproto\r\n:3\r\n"
			case "SUBSCRIBE":
				for i, ch := range args[1:] {
					out += fmt.Sprintf(">3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:%d\r\n", len(ch), ch, i+1)
				}
			case "PING":
				pings.Add(1) // and silence
			}
			if _, err := io.WriteString(c, out); err != nil {
				return
			}
		}
	})
	ctx := testCtx(t)
	sub := newSub(t, pubsub.Options{
		Options: conn.Options{
			Addr: addr, ReadTimeout: 50 * time.Millisecond,
			MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond,
		},
		PingInterval: 20 * time.Millisecond,
	})
	require.NoError(t, sub.Subscribe(ctx, "x"))
	_, err := sub.Receive(ctx)
	require.ErrorIs(t, err, pubsub.ErrGap)
	require.ErrorIs(t, err, conn.ErrTimeout)
	require.GreaterOrEqual(t, pings.Load(), int32(1))
	eventually(t, "a reconnect", func() bool { return sub.Stats().Reconnects >= 1 && conns.Load() >= 2 })
}
