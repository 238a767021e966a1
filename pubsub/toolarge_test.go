package pubsub_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pubsub"
	"github.com/echomq/echomq-go/resp"
)

// A message over the reply limits (a payload longer than a reduced
// MaxBulk) does not kill the subscription: it is dropped and reported in
// its place as a gap naming the limit, the messages around it arrive in
// order, and the connection is kept (no reconnect), under RESP3 (push
// frames) and RESP2 (subscriber mode). Before the fix the decoder's
// protocol error broke the connection: a reconnect, and every message
// published meanwhile lost.
func TestMessageOverLimitsDropped(t *testing.T) {
	for _, proto := range []int{3, 2} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			servertest.Need(t, srv)
			ctx := testCtx(t)
			lim := resp.Limits{MaxBulk: 1024}
			sub := newSub(t, pubsub.Options{Options: conn.Options{Protocol: proto, Limits: lim}})
			require.NoError(t, sub.Subscribe(ctx, "big"))
			pub := newClient(t, srv.Addr)
			big := strings.Repeat("x", 4096)
			for _, p := range []string{"before", big, big, "between", big, "after"} {
				n, err := pubsub.Publish(ctx, pub, "big", p)
				require.NoError(t, err)
				require.EqualValues(t, 1, n)
			}
			require.Equal(t, "before", string(receive(t, sub).Payload))
			// The two drops in a row are told before "between": as one
			// gap of 2 when both were read before the consumer looked,
			// else as a gap of 1 each (the reader and the consumer
			// race; what is fixed is the count and the order).
			var gap *pubsub.GapError
			dropped := 0
			var next *pubsub.Message
			for next == nil {
				m, err := sub.Receive(ctx)
				if err == nil {
					next = &m
					break
				}
				require.ErrorAs(t, err, &gap)
				require.ErrorIs(t, err, pubsub.ErrGap)
				require.ErrorIs(t, err, resp.ErrReplyTooLarge)
				require.False(t, errors.Is(err, conn.ErrBroken))
				require.Zero(t, gap.Losses)
				require.Contains(t, err.Error(), "MaxBulk")
				dropped += gap.Dropped
			}
			require.Equal(t, 2, dropped, "drops told before the next message")
			require.Equal(t, "between", string(next.Payload))
			_, err := sub.Receive(ctx)
			require.ErrorAs(t, err, &gap)
			require.Equal(t, 1, gap.Dropped)
			require.Equal(t, "after", string(receive(t, sub).Payload))
			st := sub.Stats()
			require.EqualValues(t, 3, st.Dropped)
			require.EqualValues(t, 3, st.Received)
			require.Zero(t, st.Reconnects)
			require.True(t, st.Connected)
			// The subscription still changes and receives.
			require.NoError(t, sub.Subscribe(ctx, "more"))
			_, err = pubsub.Publish(ctx, pub, "more", "m")
			require.NoError(t, err)
			require.Equal(t, "m", string(receive(t, sub).Payload))
			require.Zero(t, sub.Stats().Reconnects)
		})
	}
}

// TestHandshakeUnderSmallLimits: a subscriber's Limits bound its
// messages, not its handshake: with MaxAggregate 3 (a message is an
// array of 3) it connects under RESP2 and RESP3, where HELLO's map of 7
// pairs refused the connection, and receives.
func TestHandshakeUnderSmallLimits(t *testing.T) {
	for _, proto := range []int{3, 2} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			servertest.Need(t, srv)
			ctx := testCtx(t)
			sub := newSub(t, pubsub.Options{Options: conn.Options{Protocol: proto, Limits: resp.Limits{MaxAggregate: 3}}})
			require.NoError(t, sub.Subscribe(ctx, "small"))
			pub := newClient(t, srv.Addr)
			_, err := pubsub.Publish(ctx, pub, "small", "hi")
			require.NoError(t, err)
			require.Equal(t, "hi", string(receive(t, sub).Payload))
		})
	}
}

// TestNameOverMaxArgRefused: a channel name longer than the server takes
// in an argument (Options.MaxArg, 16 bytes here) is refused before it is
// sent, with a *conn.ArgTooLargeError matching conn.ErrCommandRefused
// (sent, the server would close the subscriber's connection, and every
// resubscription after it); the subscription is untouched: it subscribes
// to a short name and receives on it.
func TestNameOverMaxArgRefused(t *testing.T) {
	servertest.Need(t, srv)
	ctx := testCtx(t)
	sub := newSub(t, pubsub.Options{Options: conn.Options{MaxArg: 16}})
	long := strings.Repeat("c", 17)
	for _, call := range []func(context.Context, ...string) error{sub.Subscribe, sub.PSubscribe, sub.SSubscribe, sub.Unsubscribe} {
		err := call(ctx, "ok", long)
		var ae *conn.ArgTooLargeError
		require.ErrorAs(t, err, &ae)
		require.ErrorIs(t, err, conn.ErrCommandRefused)
		require.Equal(t, 17, ae.Size)
	}
	require.NoError(t, sub.Subscribe(ctx, "short"))
	pub := newClient(t, srv.Addr)
	_, err := pubsub.Publish(ctx, pub, "short", "hi")
	require.NoError(t, err)
	require.Equal(t, "hi", string(receive(t, sub).Payload))
	require.Zero(t, sub.Stats().Reconnects)
}
