package emq_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/servertest"
)

// TestQueueThroughWrapper: a queue runs on a Sender implemented outside
// the module with its public API only (a wrapper that records each
// submission's commands, then forwards it to a real connection), and
// every command it sends passes through the wrapper.
func TestQueueThroughWrapper(t *testing.T) {
	s, err := servertest.Start(servertest.Options{})
	if err != nil {
		t.Skip("no server: ", err)
	}
	defer s.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := conn.Dial(ctx, conn.Options{Addr: s.Addr})
	require.NoError(t, err)
	defer c.Close()

	var mu sync.Mutex
	var names []string
	submissions := 0
	wrapped := conn.SendFunc(func(ctx context.Context, cmds conn.Cmds, h conn.Handler) error {
		mu.Lock()
		submissions++
		for _, args := range cmds.All() {
			names = append(names, strings.ToUpper(string(args[0])))
		}
		mu.Unlock()
		return c.Send(ctx, cmds, h)
	})

	q, err := emq.Open(ctx, wrapped, "wrapped")
	require.NoError(t, err)
	id, err := q.Enqueue(ctx, []byte("payload"))
	require.NoError(t, err)
	job, ok, err := q.Claim(ctx, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, id, job.ID)
	require.Equal(t, "payload", string(job.Payload))
	require.NoError(t, q.Complete(ctx, job.ID, job.Token, time.Minute))
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Zero(t, st.Pending)
	require.Zero(t, st.Active)

	mu.Lock()
	defer mu.Unlock()
	require.NotZero(t, submissions)
	// What the queue sent, all through the wrapper: its transitions as
	// scripts or native EMQ.* commands.
	transitions := 0
	for _, n := range names {
		if strings.HasPrefix(n, "EVALSHA") || strings.HasPrefix(n, "EVAL") || strings.HasPrefix(n, "EMQ.") || n == "FCALL" {
			transitions++
		}
	}
	require.GreaterOrEqual(t, transitions, 3, "enqueue, claim and complete went through the wrapper: %v", names)
}
