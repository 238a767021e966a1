package pubsub_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pubsub"
	"github.com/echomq/echomq-go/resp"
)

// Patterns and sharded channels, beside a plain channel, under both
// protocols: each message carries how it was matched, a message that a
// channel and a pattern both match is received once for each, in the
// server's order, and SPUBLISH reaches only shard subscribers.
func TestPatternAndSharded(t *testing.T) {
	for _, proto := range []int{3, 2} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			servertest.Need(t, srv)
			ctx := testCtx(t)
			sub := newSub(t, pubsub.Options{Options: conn.Options{Protocol: proto}})
			pub := newClient(t, srv.Addr)
			require.NoError(t, sub.PSubscribe(ctx, "news.*", "n*"))
			require.NoError(t, sub.Subscribe(ctx, "news.eu"))
			require.NoError(t, sub.SSubscribe(ctx, "shard-a", "shard-a")) // a name twice is harmless

			n, err := pubsub.Publish(ctx, pub, "news.eu", "hello")
			require.NoError(t, err)
			require.EqualValues(t, 3, n, "two patterns and the channel")
			n, err = pubsub.Publish(ctx, pub, "other", []byte("nobody"))
			require.NoError(t, err)
			require.Zero(t, n)
			n, err = pubsub.SPublish(ctx, pub, "shard-a", []byte("sharded"))
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
			n, err = pubsub.Publish(ctx, pub, "shard-a", "plain, to a shard name")
			require.NoError(t, err)
			require.Zero(t, n, "PUBLISH does not reach shard subscribers")

			// The server delivers the channel's own message first, then
			// the pattern matches (in an order of its own), then what
			// was published next.
			require.Equal(t, pubsub.Message{Channel: "news.eu", Payload: []byte("hello")}, receive(t, sub))
			require.ElementsMatch(t, []pubsub.Message{
				{Channel: "news.eu", Pattern: "news.*", Payload: []byte("hello")},
				{Channel: "news.eu", Pattern: "n*", Payload: []byte("hello")},
			}, []pubsub.Message{receive(t, sub), receive(t, sub)})
			require.Equal(t, pubsub.Message{Channel: "shard-a", Sharded: true, Payload: []byte("sharded")}, receive(t, sub))

			// Unsubscribing a pattern leaves the others.
			require.NoError(t, sub.PUnsubscribe(ctx, "n*"))
			require.NoError(t, sub.SUnsubscribe(ctx))
			n, err = pubsub.Publish(ctx, pub, "news.us", "")
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
			m := receive(t, sub)
			require.Equal(t, pubsub.Message{Channel: "news.us", Pattern: "news.*", Payload: []byte{}}, m)
			n, err = pubsub.SPublish(ctx, pub, "shard-a", "gone")
			require.NoError(t, err)
			require.Zero(t, n)
		})
	}
}

// A channel the ACL user may not read is refused with the server's
// error; nothing of that call is kept, and the subscription goes on.
func TestSubscribeRefused(t *testing.T) {
	s := startServer(t, servertest.Options{})
	_, err := s.Do("ACL", "SETUSER", "reader", "on", ">pw", "resetchannels", "&open.*", "+@all", "~*")
	require.NoError(t, err)
	ctx := testCtx(t)
	sub := newSub(t, pubsub.Options{Options: conn.Options{Addr: s.Addr, Username: "reader", Password: "pw"}})
	err = sub.Subscribe(ctx, "open.1", "secret")
	var se *resp.ServerError
	require.True(t, errors.As(err, &se), "got %v", err)
	require.Equal(t, "NOPERM", se.Code())
	require.Equal(t, "open.1\n0", numsub(t, s, "", "open.1"))

	require.NoError(t, sub.Subscribe(ctx, "open.2"))
	pub := newClient(t, s.Addr)
	_, err = pubsub.Publish(ctx, pub, "open.2", "x")
	require.NoError(t, err)
	require.Equal(t, "open.2", receive(t, sub).Channel)
	require.Zero(t, sub.Stats().Reconnects)
}

// Subscribing to nothing is refused before anything is sent;
// unsubscribing from nothing succeeds, under both protocols and on both
// servers (Valkey answers it -NOSUB, Redis with a confirmation): with no
// subscription at all, after the last one was dropped, and of every
// kind; the connection goes on unharmed.
func TestSubscribeNothing(t *testing.T) {
	for _, proto := range []int{3, 2} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ctx := testCtx(t)
			sub := newSub(t, pubsub.Options{Options: conn.Options{Protocol: proto}})
			require.Error(t, sub.Subscribe(ctx))
			require.NoError(t, sub.Unsubscribe(ctx))
			require.NoError(t, sub.PUnsubscribe(ctx, "never"))
			require.NoError(t, sub.Unsubscribe(ctx, "never", "nor"))
			require.NoError(t, sub.SUnsubscribe(ctx, "never"))

			// Out of subscribed mode again after the last channel goes.
			require.NoError(t, sub.Subscribe(ctx, "ch"))
			require.NoError(t, sub.Unsubscribe(ctx, "ch"))
			require.NoError(t, sub.Unsubscribe(ctx, "ch"))
			require.NoError(t, sub.PUnsubscribe(ctx))

			pub := newClient(t, srv.Addr)
			require.NoError(t, sub.Subscribe(ctx, "ch2"))
			n, err := pubsub.Publish(ctx, pub, "ch2", "after")
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
			require.Equal(t, pubsub.Message{Channel: "ch2", Payload: []byte("after")}, receive(t, sub))
			require.Zero(t, sub.Stats().Reconnects)
		})
	}
}
