package emq

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A panic in one of the worker's callbacks (TimeoutFor, Backoff, OnEvent)
// is the user's bug, but it runs on the worker's goroutines, where the
// user cannot recover it: it would take the whole process down. The
// worker recovers it, goes on with its own rule, and tells it as an
// EventError whose Err is a *PanicError naming the callback; every job
// is still completed exactly once.
func TestWorkerCallbackPanics(t *testing.T) {
	q := fresh(t, "cbpanic")
	ctx := tctx(t)
	const n = 12
	for i := range n {
		_, err := q.Enqueue(ctx, []byte{byte('a' + i)})
		require.NoError(t, err)
	}
	var mu sync.Mutex
	completed := map[string]int{}
	var panics []*PanicError
	var ops []string
	tried := map[string]bool{}
	h := HandlerFunc(func(ctx context.Context, j *Job) error {
		mu.Lock()
		defer mu.Unlock()
		if !tried[j.ID] {
			tried[j.ID] = true
			return errors.New("first attempt fails")
		}
		return nil
	})
	w := startWorker(t, q, h, WorkerConfig{
		Concurrency: 3, MaxAttempts: 5, BackoffBase: time.Millisecond, BackoffMax: 2 * time.Millisecond,
		PollMax: 10 * time.Millisecond, PromoteInterval: 5 * time.Millisecond,
		TimeoutFor: func(j *Job) time.Duration {
			if j.Payload[0]%2 == 0 {
				panic("TimeoutFor of " + string(j.Payload))
			}
			return time.Minute
		},
		Backoff: func(attempt int64, err error) time.Duration {
			panic(errors.New("backoff bug"))
		},
		OnEvent: func(e Event) {
			mu.Lock()
			defer mu.Unlock()
			switch e.Kind {
			case EventCompleted:
				completed[e.Job.ID]++
				if len(completed)%3 == 0 {
					panic("OnEvent bug") // after counting: the worker must go on
				}
			case EventError:
				var p *PanicError
				if errors.As(e.Err, &p) {
					panics = append(panics, p)
					ops = append(ops, e.Op)
				}
			}
		},
	})
	waitFor(t, 30*time.Second, "every job completed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(completed) == n
	})
	st := w.Stats()
	mu.Lock()
	defer mu.Unlock()
	for id, c := range completed {
		require.Equal(t, 1, c, "job %s completed %d times", id, c)
	}
	var timeoutFor, backoff int
	for i, p := range panics {
		switch p.Func {
		case "TimeoutFor":
			timeoutFor++
			require.Equal(t, "timeout", ops[i])
			require.Contains(t, p.Error(), "emq: TimeoutFor panicked: TimeoutFor of ")
		case "Backoff":
			backoff++
			require.Equal(t, "backoff", ops[i])
			require.ErrorContains(t, p, "backoff bug")
			require.True(t, strings.Contains(string(p.Stack), "callback_panic_test.go"), "the stack is the callback's")
		default:
			t.Fatalf("a panic of %q", p.Func)
		}
	}
	// Jobs b, d, f, h, j, l (payload even) panic in TimeoutFor on both
	// attempts; every job's first attempt fails, so Backoff is called
	// (and panics) once per job.
	require.Equal(t, 2*n/2, timeoutFor)
	require.Equal(t, n, backoff)
	require.GreaterOrEqual(t, st.Panics, uint64(timeoutFor+backoff+n/3), "every recovered panic is counted: %+v", st)
	require.Equal(t, uint64(n), st.Completed)
}
