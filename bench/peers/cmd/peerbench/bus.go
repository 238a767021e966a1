package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

// The pubsub workload: one op is one message, PUBLISHed on busChannel by
// the client's usual path (depth or goroutines, as for the other
// workloads; the reply, the number of receivers, must be 1) and received
// by one subscriber of the same client in the same process, started
// before timing. run returns when every message of the call has arrived,
// so ops/s is publish-to-receive throughput, and the CPU is the
// publishers' and the subscriber's together.

// busChannel is unique to the process: a subscriber of a previous run
// that the server has not dropped yet counts nobody.
var busChannel = "bench:bus:" + strconv.Itoa(os.Getpid())

// busQuiet is how long run waits with no message arriving before it
// reports the rest lost.
const busQuiet = 10 * time.Second

// bus counts what the subscriber received.
type bus struct {
	recv    atomic.Int64
	goal    atomic.Int64
	reached chan struct{}
}

// received counts one message, checking its payload.
func (w *workload) received(payload []byte) {
	if string(payload) != w.payload {
		w.fail(uint64(w.bus.recv.Load()), string(payload))
	}
	if w.bus.recv.Add(1) == w.bus.goal.Load() {
		select {
		case w.bus.reached <- struct{}{}:
		default:
		}
	}
}

// expect readies the count for n more messages and returns the wait for
// them: call it before publishing.
func (w *workload) expect(n int) func(ctx context.Context) error {
	goal := w.bus.recv.Load() + int64(n)
	w.bus.goal.Store(goal)
	return func(ctx context.Context) error {
		last := w.bus.recv.Load()
		t := time.NewTicker(busQuiet)
		defer t.Stop()
		for {
			if got := w.bus.recv.Load(); got >= goal {
				return nil
			}
			select {
			case <-w.bus.reached:
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
				got := w.bus.recv.Load()
				if got == last {
					return fmt.Errorf("pubsub: %d of %d messages never arrived", goal-got, n)
				}
				last = got
			}
		}
	}
}

// publishRun runs publish (the adapter's usual loop of PUBLISH commands)
// and waits for the subscriber to receive every message.
func publishRun(ctx context.Context, w *workload, n int, publish func() error) error {
	wait := w.expect(n)
	if err := publish(); err != nil {
		return err
	}
	return wait(ctx)
}
