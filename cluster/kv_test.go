package cluster_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/kv"
	"github.com/echomq/echomq-go/pubsub"
)

// The typed helpers run over a cluster client: each routed by its key's
// slot, and SCAN visiting every primary so each key is seen.
func TestKVOverCluster(t *testing.T) {
	c := needCluster(t)
	cl := newClient(t, c)
	ctx := testCtx(t)
	for i := range 300 {
		require.NoError(t, kv.Set(ctx, cl, "user:"+strconv.Itoa(i), i))
	}
	v, ok, err := kv.Get(ctx, cl, "user:42")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "42", v)
	n, err := kv.Incr(ctx, cl, "user:42")
	require.NoError(t, err)
	require.EqualValues(t, 43, n)
	seen := map[string]bool{}
	for k, err := range kv.Scan(ctx, cl, kv.ScanOptions{Match: "user:*", Count: 50}) {
		require.NoError(t, err)
		seen[k] = true
	}
	require.Len(t, seen, 300, "SCAN over the cluster missed keys")
	for _, p := range c.Primaries {
		require.Positive(t, calls(t, p, "set"), "%s holds none of the keys", p.Addr)
	}
	// PUBLISH is an ordinary command; any node relays it cluster-wide.
	_, err = pubsub.Publish(ctx, cl, "news", "hello")
	require.NoError(t, err)
}

// Sharded pub/sub on a cluster: a subscription at the channel's owner
// (Owner) receives what SPUBLISH, routed by the channel's slot through
// the cluster client, sends; plain pub/sub works from any node.
func TestPubsubOverCluster(t *testing.T) {
	c := needCluster(t)
	cl := newClient(t, c)
	ctx := testCtx(t)
	const channel = "orders:events"
	owner := cl.Owner(channel)
	require.NotEmpty(t, owner)
	sub, err := pubsub.New(ctx, pubsub.Options{Options: conn.Options{Addr: owner}})
	require.NoError(t, err)
	defer sub.Close()
	require.NoError(t, sub.SSubscribe(ctx, channel))
	plain, err := pubsub.New(ctx, pubsub.Options{Options: conn.Options{Addr: c.Primaries[0].Addr}})
	require.NoError(t, err)
	defer plain.Close()
	require.NoError(t, plain.Subscribe(ctx, "news"))

	for i := range 10 {
		n, err := pubsub.SPublish(ctx, cl, channel, "e"+strconv.Itoa(i))
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "SPUBLISH reached no subscriber: routed to the wrong node")
	}
	for i := range 10 {
		m, err := sub.Receive(ctx)
		require.NoError(t, err)
		require.True(t, m.Sharded)
		require.Equal(t, "e"+strconv.Itoa(i), string(m.Payload))
	}
	// PUBLISH from whichever node the cluster client picks reaches a
	// subscriber on another.
	for range 3 {
		_, err = pubsub.Publish(ctx, cl, "news", "hi")
		require.NoError(t, err)
	}
	m, err := plain.Receive(ctx)
	require.NoError(t, err)
	require.Equal(t, "hi", string(m.Payload))
}
