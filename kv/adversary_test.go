package kv_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/kv"
)

// The adversary's test of a cancelled blocking XReadGroup under load:
// consumers (more than the lent connections) read with Block forever and
// are cancelled at random moments while a producer adds entries at full
// rate. Every entry the group delivered (pending, since nobody acks) was
// returned to a caller, exactly once; none was delivered to nobody.
func TestAdversaryXReadGroupCancelledUnderLoad(t *testing.T) {
	servertest.Need(t, srv)
	for name, s := range map[string]*servertest.Server{"RESP3": srv, "RESP2": srv2} {
		t.Run(name, func(t *testing.T) {
			require.NotNil(t, s)
			s.Flush(t)
			ctx := testCtx(t)
			cl, err := conn.NewClient(ctx, conn.Options{Addr: s.Addr, BlockingConns: 2})
			require.NoError(t, err)
			defer cl.Close()
			_, err = kv.XGroupCreate(ctx, cl, "adv-s", "g", "$")
			require.NoError(t, err)

			const consumers, calls, entries = 6, 50, 400
			produced := make(chan error, 1)
			go func() {
				for i := range entries {
					if _, err := kv.XAdd(ctx, cl, "adv-s", "n", strconv.Itoa(i)); err != nil {
						produced <- err
						return
					}
				}
				produced <- nil
			}()
			var mu sync.Mutex
			got := map[string]int{}
			var others []error
			won, cancelled := 0, 0
			var wg sync.WaitGroup
			for c := range consumers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range calls {
						cctx, cancel := context.WithCancel(ctx)
						time.AfterFunc(time.Duration(rand.IntN(2000))*time.Microsecond, cancel)
						st, err := kv.XReadGroup(cctx, cl, kv.XReadGroupArgs{
							Group: "g", Consumer: "c" + strconv.Itoa(c), Streams: []string{"adv-s"},
							Count: 3, Block: kv.BlockForever,
						})
						late := cctx.Err() != nil
						cancel()
						mu.Lock()
						switch {
						case errors.Is(err, context.Canceled):
							cancelled++
						case err != nil:
							others = append(others, err)
						default:
							if late {
								won++
							}
							for _, x := range st {
								for _, e := range x.Entries {
									got[e.ID]++
								}
							}
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			require.NoError(t, <-produced)
			require.Empty(t, others)
			pending, err := s.Do("XPENDING", "adv-s", "g", "-", "+", "100000")
			require.NoError(t, err)
			delivered := map[string]bool{}
			for line := range strings.Lines(pending) {
				// Flattened: id, consumer, idle, deliveries per entry.
				if line = strings.TrimSpace(line); strings.Contains(line, "-") && !strings.HasPrefix(line, "c") {
					delivered[line] = true
				}
			}
			t.Logf("%d reads: %d entries returned (%d after ctx ended), %d cancelled; %d delivered by the group",
				consumers*calls, len(got), won, cancelled, len(delivered))
			for id, n := range got {
				require.Equal(t, 1, n, "entry %s returned %d times", id, n)
				require.True(t, delivered[id], "entry %s returned but not pending", id)
			}
			for id := range delivered {
				require.Contains(t, got, id, "entry %s delivered to nobody", id)
			}
		})
	}
}
