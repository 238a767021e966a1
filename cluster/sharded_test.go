package cluster_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/emq"
)

// A sharded queue of 3 members over 3 primaries: one member per primary,
// every job run once, and every primary did its share.
func TestShardedQueueOverPrimaries(t *testing.T) {
	c := needCluster(t)
	cl := newClient(t, c)
	ctx := testCtx(t)
	sh, err := emq.OpenSharded(ctx, cl, "jobs", 3)
	require.NoError(t, err)
	owners := map[string]bool{}
	for _, q := range sh.Members() {
		owners[owner(c, int(emq.Slot(q.Name()))).Addr] = true
	}
	require.Len(t, owners, 3, "members share a primary")
	payloads := make([][]byte, 9000)
	for i := range payloads {
		payloads[i] = []byte(strconv.Itoa(i))
	}
	res, err := sh.EnqueueBulk(ctx, payloads)
	require.NoError(t, err)
	ids := make([]string, len(res))
	for i, r := range res {
		require.NoError(t, r.Err)
		ids[i] = r.ID
	}
	log := &jobLog{runs: map[string]int{}}
	sw, err := emq.NewShardedWorker(sh, log.handler(), emq.WorkerConfig{Concurrency: 24})
	require.NoError(t, err)
	require.NoError(t, sw.Start())
	log.waitCount(len(ids), waitLong)
	require.NoError(t, sw.Shutdown(ctx))
	missing, dups := log.missing(ids)
	require.Empty(t, missing)
	require.Zero(t, dups)
	for _, p := range c.Primaries {
		require.Positive(t, calls(t, p, "evalsha"), "%s did no work", p.Addr)
	}
}
