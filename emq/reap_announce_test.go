package emq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pubsub"
)

// TestReapAnnounce: reap_announce does what reap does (the count, a job
// under its attempts back to pending, one past them to dead) and
// publishes "dead" on the done channel of each job it ends dead, and of
// no other.
func TestReapAnnounce(t *testing.T) {
	q := fresh(t, "reap-announce")
	ctx := tctx(t)
	sub, err := pubsub.New(ctx, pubsub.Options{Options: conn.Options{Addr: srv.Addr}})
	require.NoError(t, err)
	defer sub.Close()
	var ids []string
	for range 2 {
		id, err := q.Enqueue(ctx, []byte("x"))
		require.NoError(t, err)
		ids = append(ids, id)
	}
	marker := q.keys.Base + "test:marker"
	require.NoError(t, sub.Subscribe(ctx, q.keys.DoneChannel(ids[0]), q.keys.DoneChannel(ids[1]), marker))
	for range 2 {
		_, ok, err := q.Claim(ctx, time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
	}
	// Both leases have run out; the second job has had one attempt more.
	do(t, "ZADD", q.keys.Active, "1", ids[0], "1", ids[1])
	do(t, "HSET", q.keys.Base+"job:"+ids[1], "attempts", "3")
	n, err := q.ReapAnnounce(ctx, 10, 3)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, "pending", do(t, "HGET", q.keys.Base+"job:"+ids[0], "state"))
	require.Equal(t, "dead", do(t, "HGET", q.keys.Base+"job:"+ids[1], "state"))
	require.NotEqual(t, "", do(t, "ZSCORE", q.keys.Dead, ids[1]))
	require.NotEqual(t, "", do(t, "ZSCORE", q.keys.Pending, ids[0]))
	m, err := sub.Receive(ctx)
	require.NoError(t, err)
	require.Equal(t, q.keys.DoneChannel(ids[1]), m.Channel)
	require.Equal(t, "dead", string(m.Payload))
	// Nothing for the job sent back to pending: the next message is a
	// marker published after the reap (one connection's messages come in
	// order).
	do(t, "PUBLISH", marker, "end")
	m, err = sub.Receive(ctx)
	require.NoError(t, err)
	require.Equal(t, marker, m.Channel)
	_, err = q.ReapAnnounce(ctx, -1, 0)
	require.Error(t, err)
}
