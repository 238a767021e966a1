package emq

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// safety bounds a wait that a broken implementation would make endless;
// reaching it fails the test, and no assertion depends on it.
const safety = 20 * time.Second

// recv returns the next value from ch, failing the test after safety.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(safety):
		t.Fatalf("no %s after %v", what, safety)
		panic("unreachable")
	}
}

// events records a worker's events.
type events struct {
	mu  sync.Mutex
	all []Event
}

func (e *events) add(ev Event) {
	e.mu.Lock()
	e.all = append(e.all, ev)
	e.mu.Unlock()
}

// of returns the events about job id.
func (e *events) of(id string) []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Event
	for _, ev := range e.all {
		if ev.Job.ID == id {
			out = append(out, ev)
		}
	}
	return out
}

// TestWorkerJobContextEndsWithHandler: a job's ctx, leaked by its handler
// to a goroutine, is Done (context.Canceled) once the handler has
// returned, and stays so while the worker runs later jobs.
func TestWorkerJobContextEndsWithHandler(t *testing.T) {
	q := fresh(t, "jobctx")
	ctx := tctx(t)
	leaked := make(chan context.Context, 2)
	causes := make(chan error, 2)
	startWorker(t, q, HandlerFunc(func(ctx context.Context, j *Job) error {
		leaked <- ctx
		go func() {
			<-ctx.Done()
			causes <- context.Cause(ctx)
		}()
		return nil
	}), WorkerConfig{Concurrency: 1, PollMax: 10 * time.Millisecond})

	_, err := q.Enqueue(ctx, []byte("first"))
	require.NoError(t, err)
	first := recv(t, leaked, "the first job")
	require.ErrorIs(t, recv(t, causes, "the first job's ctx to end"), context.Canceled)

	_, err = q.Enqueue(ctx, []byte("second"))
	require.NoError(t, err)
	second := recv(t, leaked, "the second job")
	require.ErrorIs(t, recv(t, causes, "the second job's ctx to end"), context.Canceled)
	require.NotSame(t, first, second)
	require.ErrorIs(t, first.Err(), context.Canceled, "the first job's ctx stays done")
}
