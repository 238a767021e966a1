package pubsub_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/pubsub"
)

// 100,000 messages on one channel, published in pipelined batches of
// 1,000, arrive complete and in order, under RESP3 (push frames) and
// RESP2 (subscriber mode). Every PUBLISH counted one receiver: the
// subscription was confirmed before the first.
func TestHundredThousandInOrder(t *testing.T) {
	const n = 100_000
	for _, proto := range []int{3, 2} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			servertest.Need(t, srv)
			ctx := testCtx(t)
			sub := newSub(t, pubsub.Options{Options: conn.Options{Protocol: proto}})
			require.NoError(t, sub.Subscribe(ctx, "seq"))

			pub, err := conn.Dial(ctx, conn.Options{Addr: srv.Addr})
			require.NoError(t, err)
			defer pub.Close()
			published := make(chan error, 1)
			go func() {
				var b pipeline.Batch
				for first := 0; first < n; first += 1000 {
					b.Reset()
					for i := first; i < first+1000; i++ {
						b.Add("PUBLISH", "seq", strconv.Itoa(i))
					}
					if err := b.Exec(ctx, pub); err != nil {
						published <- err
						return
					}
					for i, v := range b.Replies() {
						if v.Int != 1 {
							published <- fmt.Errorf("PUBLISH %d reached %v subscribers", first+i, v)
							return
						}
					}
				}
				published <- nil
			}()
			for i := range n {
				m := receive(t, sub)
				require.Equal(t, "seq", m.Channel)
				require.Empty(t, m.Pattern)
				require.False(t, m.Sharded)
				require.Equal(t, i, seq(t, m), "message %d out of order", i)
			}
			require.NoError(t, <-published)
			st := sub.Stats()
			require.EqualValues(t, n, st.Received)
			require.Zero(t, st.Buffered)
			require.Zero(t, st.Reconnects)
		})
	}
}
