package cluster_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

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
