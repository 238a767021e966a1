package emq

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOpenSharesIDGenerator: two Queues of one name, opened in one process
// on two connections, mint from the one default generator: 200 alternating
// enqueues make 200 jobs and no ErrDuplicate.
func TestOpenSharesIDGenerator(t *testing.T) {
	q1 := fresh(t, "shared-ids")
	q2, err := Open(context.Background(), dial(t), "shared-ids")
	require.NoError(t, err)
	ctx := tctx(t)
	ids := map[string]bool{}
	for i := range 200 {
		q := q1
		if i%2 == 1 {
			q = q2
		}
		id, err := q.Enqueue(ctx, []byte("x"))
		require.NoError(t, err, "enqueue %d", i)
		require.False(t, ids[id], "id %s minted twice", id)
		ids[id] = true
	}
	n, err := q1.PendingSize(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 200, n)
	require.Same(t, q1.ids, q2.ids, "queues opened without WithIDGenerator share one generator")
	require.Same(t, DefaultIDGenerator(), q1.ids)
}

// TestWithIDGeneratorKept: a generator given with WithIDGenerator is the
// one the queue mints with; one in another namespace is refused.
func TestWithIDGeneratorKept(t *testing.T) {
	g, err := NewIDGenerator(JobNamespace, 7)
	require.NoError(t, err)
	q := fresh(t, "own-ids", WithIDGenerator(g))
	require.Same(t, g, q.ids)
	id, err := q.Enqueue(tctx(t), nil)
	require.NoError(t, err)
	_, sf, err := ParseID(id)
	require.NoError(t, err)
	_, node, _ := SplitSnowflake(sf)
	require.EqualValues(t, 7, node)

	other, err := NewIDGenerator("ABC", 7)
	require.NoError(t, err)
	_, err = Open(context.Background(), dial(t), "own-ids", WithIDGenerator(other))
	require.ErrorIs(t, err, ErrInvalidID)
}
