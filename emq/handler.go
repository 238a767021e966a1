package emq

import (
	"context"
	"errors"
	"fmt"
)

// Handler processes one claimed job for a [Worker]. Returning nil
// completes the job; an error retries it with backoff (dead after the
// worker's MaxAttempts), [ErrSkipRetry] sends it to dead at once, and
// [ErrAbandon] leaves it leased for the reaper.
//
// ctx ends when the job's lease is lost (context.Cause is [ErrLeaseLost]),
// when the job's timeout passes (a cause matching [ErrJobTimeout]: the
// job is retried, see [WorkerConfig].Timeout), when the worker's shutdown
// deadline passes ([ErrShutdown]), or when the
// worker stops because its connection is finished (the worker's terminal
// error, matching [ErrSenderDone]); a handler should then return promptly:
// its job is no longer its own. ctx is the job's own and is cancelled
// (context.Canceled) when ProcessJob returns, as net/http cancels a
// request's context: work the handler leaves running on ctx is told to
// stop. The Job, its id and payload are the handler's to keep.
type Handler interface {
	ProcessJob(ctx context.Context, job *Job) error
}

// HandlerFunc adapts a function to a [Handler].
type HandlerFunc func(ctx context.Context, job *Job) error

// ProcessJob calls f(ctx, job).
func (f HandlerFunc) ProcessJob(ctx context.Context, job *Job) error { return f(ctx, job) }

// Middleware wraps a Handler, as net/http middleware wraps an http.Handler:
// logging, metrics, timeouts, payload decoding.
type Middleware func(Handler) Handler

// Chain wraps h in mw, the first outermost: Chain(h, a, b) runs a, then b,
// then h.
func Chain(h Handler, mw ...Middleware) Handler {
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	return h
}

// Handler outcomes and handler context causes.
var (
	// ErrAbandon, returned by a handler (or wrapped), makes the worker
	// leave the job as it is: neither completed nor retried, still leased.
	// When the lease runs out the reaper returns it to pending (or to dead
	// after MaxAttempts), as it does for a worker that crashed.
	ErrAbandon = errors.New("emq: job abandoned to the reaper")
	// ErrSkipRetry, returned by a handler (or wrapped), sends the job to
	// dead at once, whatever its attempts.
	ErrSkipRetry = errors.New("emq: skip retry: the job goes to dead")
	// ErrLeaseLost is the cause of a handler's context when extending its
	// lease answered stale: the job was reaped, and perhaps claimed again.
	ErrLeaseLost = errors.New("emq: the job's lease was lost")
	// ErrShutdown is the cause of a handler's context when the worker's
	// shutdown deadline passed; the job is left to the reaper.
	ErrShutdown = errors.New("emq: worker shut down before the job finished")
	// ErrJobTimeout is matched by the cause of a handler's context when
	// the job's timeout passed ([WorkerConfig].Timeout), and by the
	// failure its retry reports (EventRetried, EventDead): "emq: job
	// timed out after 30m0s", the text the row's error field keeps.
	ErrJobTimeout = errors.New("emq: job timed out")
)

// PanicError is the failure of a handler that panicked: the worker
// recovers, and retries the job like any failure. A panic in one of the
// worker's callbacks (WorkerConfig.TimeoutFor, Backoff, OnEvent) is
// recovered too, and named by Func: the worker goes on with its own rule
// (Timeout, the default backoff) and reports it as an EventError whose Err
// is the *PanicError (OnEvent's own panics are only counted, in
// WorkerStats.Panics, since telling OnEvent could panic again).
type PanicError struct {
	Value any    // what the handler panicked with
	Stack []byte // the goroutine's stack at the panic
	// Func is "" for the handler, else the callback that panicked:
	// "TimeoutFor", "Backoff" or "OnEvent".
	Func string
}

// Error describes the panic.
func (e *PanicError) Error() string {
	if e.Func != "" {
		return fmt.Sprintf("emq: %s panicked: %v", e.Func, e.Value)
	}
	return fmt.Sprintf("emq: handler panicked: %v", e.Value)
}

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// EventKind says what happened to a job, or to the worker, in an [Event].
type EventKind int

// The kinds of [Event].
const (
	EventCompleted EventKind = iota + 1 // complete answered 1: the job is done
	EventRetried                        // the handler failed; the job is back in pending or delayed
	EventDead                           // the handler failed; the job is dead
	EventStale                          // complete or retry answered stale: the lease had been lost
	EventAbandoned                      // the handler returned ErrAbandon
	EventLeaseLost                      // extend answered stale; the handler's ctx was cancelled
	EventError                          // an exchange with the server failed (Err), or was never sent, or a callback panicked; Op names it
	EventTimedOut                       // the handler ran past its timeout (Err matches ErrJobTimeout); the job is retried
)

// String names the kind.
func (k EventKind) String() string {
	switch k {
	case EventCompleted:
		return "completed"
	case EventRetried:
		return "retried"
	case EventDead:
		return "dead"
	case EventStale:
		return "stale"
	case EventAbandoned:
		return "abandoned"
	case EventLeaseLost:
		return "lease-lost"
	case EventError:
		return "error"
	case EventTimedOut:
		return "timed-out"
	}
	return "EventKind(?)"
}

// Event reports one outcome to [WorkerConfig.OnEvent].
type Event struct {
	Kind EventKind // what happened
	Job  Job       // the job concerned; zero for a claim, promote or reap error
	Op   string    // for EventError: "claim", "complete", "retry", "release", "extend", "promote", "reap" or "trim"; "timeout" or "backoff" when TimeoutFor or Backoff panicked (Err is the *PanicError)
	// Err is the handler's error for EventRetried and EventDead (for a
	// job that timed out, an error matching [ErrJobTimeout]), the
	// timeout for EventTimedOut, the exchange's for EventError. A completion or retry the worker never
	// sent because it gave up (the shutdown deadline passed, or its
	// connection is finished) is an EventError whose Err is why:
	// [ErrShutdown], or the terminal error matching [ErrSenderDone]; its
	// job is left leased, for the reaper.
	Err error
}
