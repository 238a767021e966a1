package pubsub_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pubsub"
)

// publisher publishes seq 0, 1, 2, … on a channel, one at a time, and
// records what each PUBLISH returned: how many subscribers heard it, or
// -1 when the call failed (it may or may not have run).
type publisher struct {
	mu      sync.Mutex
	results []int64
	stop    chan struct{}
	done    chan struct{}
}

func startPublisher(ctx context.Context, s conn.Sender, channel string) *publisher {
	p := &publisher{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				return
			default:
			}
			n, err := pubsub.Publish(ctx, s, channel, strconv.Itoa(i))
			if err != nil {
				n = -1
				time.Sleep(time.Millisecond) // an outage: do not spin
			}
			p.mu.Lock()
			p.results = append(p.results, n)
			p.mu.Unlock()
		}
	}()
	return p
}

// count returns how many PUBLISH calls have ended.
func (p *publisher) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.results)
}

// finish stops the publisher and returns its results.
func (p *publisher) finish() []int64 {
	close(p.stop)
	<-p.done
	return p.results
}

// A server restart in the middle of a stream: the subscription reports
// one gap, in order (after every message received before, before every
// message after), restores its channel, pattern and sharded channel by
// itself, and from then on misses nothing: the messages after the gap
// are exactly those whose PUBLISH counted a subscriber on the new
// server.
func TestRestartMidStream(t *testing.T) {
	for _, how := range []string{"SIGKILL", "SIGTERM"} {
		t.Run(how, func(t *testing.T) {
			s := startServer(t, servertest.Options{})
			ctx := testCtx(t)
			sub := newSub(t, pubsub.Options{Options: conn.Options{
				Addr: s.Addr, MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
			}})
			require.NoError(t, sub.Subscribe(ctx, "live"))
			require.NoError(t, sub.PSubscribe(ctx, "p.*"))
			require.NoError(t, sub.SSubscribe(ctx, "sh"))
			pub := newClient(t, s.Addr)
			p := startPublisher(ctx, pub, "live")

			var before, after []int
			for len(before) < 200 {
				before = append(before, seq(t, receive(t, sub)))
			}
			if how == "SIGKILL" {
				s.Kill()
			}
			require.NoError(t, s.Restart())
			var gap *pubsub.GapError
			for gap == nil {
				m, err := sub.Receive(ctx)
				if err != nil {
					require.ErrorAs(t, err, &gap)
					break
				}
				before = append(before, seq(t, m))
			}
			require.ErrorIs(t, gap, pubsub.ErrGap)
			require.ErrorIs(t, gap, conn.ErrBroken)
			require.Equal(t, 1, gap.Losses)
			for len(after) < 200 {
				m, err := sub.Receive(ctx)
				require.NoError(t, err, "a second gap")
				after = append(after, seq(t, m))
			}
			results := p.finish()
			// Drain what the publisher sent last, up to a marker.
			_, err := pubsub.Publish(ctx, pub, "live", "end")
			require.NoError(t, err)
			for {
				m := receive(t, sub)
				if string(m.Payload) == "end" {
					break
				}
				after = append(after, seq(t, m))
			}

			for i, n := range before {
				require.Equal(t, i, n, "before the gap: a hole or a reordering")
				require.NotZero(t, results[n], "message %d received but PUBLISH counted nobody", n)
			}
			// Messages PUBLISH counted on the old server after the last
			// one received may have died with it; from the first one
			// received on the new connection on, none is missed.
			var want []int
			for i := after[0]; i < len(results); i++ {
				if results[i] == 1 {
					want = append(want, i)
				}
			}
			require.Greater(t, after[0], before[len(before)-1])
			require.Equal(t, want, after, "after the gap: exactly the messages PUBLISH counted")

			// Every kind was restored.
			require.Equal(t, "live\n1", numsub(t, s, "", "live"))
			require.Equal(t, "sh\n1", numsub(t, s, "SHARD", "sh"))
			n, err := pubsub.Publish(ctx, pub, "p.x", "pattern")
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
			require.Equal(t, "p.*", receive(t, sub).Pattern)
			n, err = pubsub.SPublish(ctx, pub, "sh", "shard")
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
			require.True(t, receive(t, sub).Sharded)
			st := sub.Stats()
			require.EqualValues(t, 1, st.Reconnects)
			require.True(t, st.Connected)
		})
	}
}

// Subscribe during an outage waits for the connection to come back and
// returns once the new channel is confirmed on it; Unsubscribe during an
// outage returns at once, and the channel is not restored.
func TestSubscribeDuringOutage(t *testing.T) {
	s := startServer(t, servertest.Options{})
	ctx := testCtx(t)
	sub := newSub(t, pubsub.Options{Options: conn.Options{
		Addr: s.Addr, MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
	}})
	require.NoError(t, sub.Subscribe(ctx, "a", "b"))
	s.Kill()
	m, err := sub.Receive(ctx)
	require.ErrorIs(t, err, pubsub.ErrGap, "got %v", m)
	require.NoError(t, sub.Unsubscribe(ctx, "b"))

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	err = sub.Subscribe(short, "c")
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "no server: Subscribe waits")
	require.False(t, sub.Stats().Connected)
	require.Error(t, sub.Stats().LastError)

	subscribed := make(chan error, 1)
	go func() { subscribed <- sub.Subscribe(ctx, "d") }()
	require.NoError(t, s.Restart())
	require.NoError(t, <-subscribed)
	for _, c := range []struct{ ch, want string }{{"a", "1"}, {"b", "0"}, {"c", "1"}, {"d", "1"}} {
		require.Equal(t, c.ch+"\n"+c.want, numsub(t, s, "", c.ch), "channel %s", c.ch)
	}
}

// Close ends everything at once: a Receive waiting, a Subscribe waiting
// for an outage to end, the redial loop; no goroutine is left.
func TestCloseDuringOutage(t *testing.T) {
	s := startServer(t, servertest.Options{})
	ctx := testCtx(t)
	before := goroutines()
	sub, err := pubsub.New(ctx, pubsub.Options{Options: conn.Options{Addr: s.Addr}})
	require.NoError(t, err)
	require.NoError(t, sub.Subscribe(ctx, "a"))
	s.Kill()
	_, err = sub.Receive(ctx)
	require.ErrorIs(t, err, pubsub.ErrGap)
	errs := make(chan error, 2)
	go func() { _, err := sub.Receive(ctx); errs <- err }()
	go func() { errs <- sub.Subscribe(ctx, "b") }()
	require.NoError(t, sub.Close())
	require.ErrorIs(t, <-errs, pubsub.ErrClosed)
	require.ErrorIs(t, <-errs, pubsub.ErrClosed)
	require.ErrorIs(t, sub.Subscribe(ctx, "c"), pubsub.ErrClosed)
	require.NoError(t, sub.Close(), "a second Close")
	checkNoLeak(t, before)
	require.False(t, errors.Is(nil, pubsub.ErrGap))
}
