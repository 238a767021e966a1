package emqmodule

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
	"github.com/stretchr/testify/require"
)

// TestOOMWorker: at maxmemory with noeviction a Worker goes on running
// the jobs already queued, on either executor (completing jobs is what
// frees memory): each of 300 jobs runs.
func TestOOMWorker(t *testing.T) {
	s, n := pair(t)
	for _, c := range []struct {
		name   string
		addr   string
		choice emq.ExecutorChoice
	}{{"script", s.Addr, emq.ExecutorScript}, {"native", n.Addr, emq.ExecutorNative}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := tctx(t)
			admin := newSide(t, c.name, c.addr, c.choice == emq.ExecutorNative)
			t.Cleanup(func() { admin.raw(t, "CONFIG", "SET", "maxmemory", "0") })
			cl, err := conn.NewClient(ctx, conn.Options{Addr: c.addr})
			require.NoError(t, err)
			t.Cleanup(func() { cl.Close() })
			q, err := emq.Open(ctx, cl, "oomw", emq.WithExecutorChoice(c.choice))
			require.NoError(t, err)
			payloads := make([][]byte, 300)
			for i := range payloads {
				payloads[i] = []byte(fmt.Sprintf("job %d", i))
			}
			_, err = q.EnqueueBatch(ctx, payloads)
			require.NoError(t, err)
			admin.must(t, "CONFIG", "SET", "maxmemory-policy", "noeviction")
			admin.must(t, "CONFIG", "SET", "maxmemory", "1")
			var ran atomic.Int64
			all := make(chan struct{})
			w, err := emq.NewWorker(q, emq.HandlerFunc(func(context.Context, *emq.Job) error {
				if ran.Add(1) == int64(len(payloads)) {
					close(all)
				}
				return nil
			}), emq.WorkerConfig{Concurrency: 4, PollMax: 10 * time.Millisecond})
			require.NoError(t, err)
			require.NoError(t, w.Start())
			select {
			case <-all:
			case <-time.After(2 * time.Minute): // only against a hang
				t.Fatalf("%s worker at maxmemory ran %d of %d jobs", c.name, ran.Load(), len(payloads))
			}
			sctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			require.NoError(t, w.Shutdown(sctx))
			admin.must(t, "CONFIG", "SET", "maxmemory", "0")
		})
	}
}
