package pubsub_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/pubsub"
)

// publishSeq publishes seq first..first+n-1 on channel in one pipeline,
// each payload the seq number padded to size bytes, and returns how
// many subscribers each PUBLISH counted.
func publishSeq(ctx context.Context, s conn.Sender, channel string, first, n, size int) ([]int64, error) {
	var b pipeline.Batch
	for i := first; i < first+n; i++ {
		p := strconv.Itoa(i)
		if len(p) < size {
			p += " " + strings.Repeat("x", size-len(p)-1)
		}
		b.Add("PUBLISH", channel, p)
	}
	if err := b.Exec(ctx, s); err != nil {
		return nil, err
	}
	out := make([]int64, n)
	for i, v := range b.Replies() {
		if err := v.Err(); err != nil {
			return nil, err
		}
		out[i] = v.Int
	}
	return out, nil
}

// seqOf reads the seq number at the start of a padded payload.
func seqOf(t testing.TB, m pubsub.Message) int {
	t.Helper()
	head, _, _ := strings.Cut(string(m.Payload), " ")
	n, err := strconv.Atoi(head)
	require.NoError(t, err, "payload %q", m.Payload)
	return n
}

// Backpressure, the policy: a consumer that does not read fills the
// buffer, the subscription stops reading (a stall, counted), the server
// holds the rest, and when the consumer reads at last it gets every
// message, in order. Nothing is dropped by the client.
func TestSlowConsumerBackpressure(t *testing.T) {
	ctx := testCtx(t)
	sub := newSub(t, pubsub.Options{Buffer: 8})
	require.NoError(t, sub.Subscribe(ctx, "slow"))
	pub := newClient(t, srv.Addr)
	const n = 3000
	counted, err := publishSeq(ctx, pub, "slow", 0, n, 64)
	require.NoError(t, err)
	for i, c := range counted {
		require.EqualValues(t, 1, c, "PUBLISH %d", i)
	}
	eventually(t, "the buffer fills and the reader stalls", func() bool {
		st := sub.Stats()
		return st.Stalls >= 1 && st.Buffered == 8
	})
	// The consumer may change the subscription from its own loop while
	// the buffer is full: the reply is read however full it is.
	require.NoError(t, sub.Subscribe(ctx, "other"))
	for i := range n {
		require.Equal(t, i, seqOf(t, receive(t, sub)))
	}
	st := sub.Stats()
	require.EqualValues(t, n, st.Received)
	require.Positive(t, st.Stalled)
	require.Zero(t, st.Reconnects)
	require.Zero(t, st.Buffered)
}

// Past the server's limit for a subscriber's output buffer the server
// closes the connection and drops what it held: the consumer still gets
// an unbroken, ordered prefix of the messages (the client dropped
// none), then a gap, then the messages published after the
// subscription was restored.
func TestSlowConsumerServerLimit(t *testing.T) {
	s := startServer(t, servertestOptions())
	_, err := s.Do("CONFIG", "SET", "client-output-buffer-limit", "pubsub 262144 0 0")
	require.NoError(t, err)
	ctx := testCtx(t)
	sub := newSub(t, pubsub.Options{Options: conn.Options{Addr: s.Addr}, Buffer: 16})
	require.NoError(t, sub.Subscribe(ctx, "flood"))
	pub := newClient(t, s.Addr)

	// Publish 1 KiB messages until the server has cut the subscriber
	// off: then PUBLISH counts nobody.
	heard := 0
	for first := 0; ; first += 500 {
		counted, err := publishSeq(ctx, pub, "flood", first, 500, 1024)
		require.NoError(t, err)
		for _, c := range counted {
			heard += int(c)
		}
		if counted[len(counted)-1] == 0 {
			break
		}
		require.Less(t, first, 200_000, "the server never cut the subscriber off")
	}
	next := 0
	for {
		m, err := sub.Receive(ctx)
		if err != nil {
			require.ErrorIs(t, err, pubsub.ErrGap)
			break
		}
		require.Equal(t, next, seqOf(t, m), "a hole or a reordering before the gap")
		next++
	}
	require.Less(t, next, heard, "the server dropped messages it had counted")
	t.Logf("%d messages counted by PUBLISH, %d received before the gap; %d stalls", heard, next, sub.Stats().Stalls)

	eventually(t, "the subscription is restored", func() bool {
		return numsub(t, s, "", "flood") == "flood\n1"
	})
	_, err = pubsub.Publish(ctx, pub, "flood", "after")
	require.NoError(t, err)
	require.Equal(t, "after", string(receive(t, sub).Payload))
	require.EqualValues(t, 1, sub.Stats().Reconnects)
}

// Close while the reader is stalled on a full buffer returns, ends a
// waiting Receive with ErrClosed and leaves no goroutine behind.
func TestCloseWhileStalled(t *testing.T) {
	ctx := testCtx(t)
	before := goroutines()
	sub, err := pubsub.New(ctx, pubsub.Options{Options: conn.Options{Addr: srv.Addr}, Buffer: 2})
	require.NoError(t, err)
	require.NoError(t, sub.Subscribe(ctx, "stall"))
	pub := newClient(t, srv.Addr)
	_, err = publishSeq(ctx, pub, "stall", 0, 100, 16)
	require.NoError(t, err)
	eventually(t, "a stall", func() bool { return sub.Stats().Stalls > 0 })
	require.NoError(t, sub.Close())
	_, err = sub.Receive(ctx)
	require.ErrorIs(t, err, pubsub.ErrClosed)
	pub.Close()
	checkNoLeak(t, before)
}

// Unsubscribe while messages are in flight: every message PUBLISH
// counted before the server took the UNSUBSCRIBE is received, complete
// and in order (some after Unsubscribe returned, from the buffer); none
// published after it is.
func TestUnsubscribeInFlight(t *testing.T) {
	for _, proto := range []int{3, 2} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ctx := testCtx(t)
			sub := newSub(t, pubsub.Options{Options: conn.Options{Protocol: proto}, Buffer: 64})
			require.NoError(t, sub.Subscribe(ctx, "busy", "ctl"))
			pub := newClient(t, srv.Addr)
			p := startPublisher(ctx, pub, "busy")
			for range 100 {
				receive(t, sub) // the stream is flowing
			}
			// Stop reading while 300 more are published: they wait in
			// the buffer, the socket and the server.
			eventually(t, "300 more published", func() bool { return p.count() >= 400 })
			require.NoError(t, sub.Unsubscribe(ctx, "busy"))
			n, err := pubsub.Publish(ctx, pub, "busy", "late")
			require.NoError(t, err)
			require.Zero(t, n, "the server took the UNSUBSCRIBE before Unsubscribe returned")
			_, err = pubsub.Publish(ctx, pub, "ctl", "marker")
			require.NoError(t, err)
			results := p.finish()

			var got []int
			for {
				m := receive(t, sub)
				if m.Channel == "ctl" {
					require.Equal(t, "marker", string(m.Payload))
					break
				}
				got = append(got, seq(t, m))
			}
			// got holds the 100 read before too: re-read them from 0.
			var want []int
			for i, r := range results {
				require.NotEqual(t, int64(-1), r, "PUBLISH %d failed", i)
				if r == 1 {
					want = append(want, i)
				}
			}
			require.Greater(t, len(want), 400)
			require.Equal(t, want[100:], got, "received after the first 100")
			for i := range want {
				require.Equal(t, i, want[i], "PUBLISH counted nobody at %d before the UNSUBSCRIBE", i)
			}
			// A message on the unsubscribed channel never comes.
			_, err = pubsub.Publish(ctx, pub, "ctl", "marker2")
			require.NoError(t, err)
			require.Equal(t, "marker2", string(receive(t, sub).Payload))
		})
	}
}
