package emq

import (
	"context"
	"sync"
	"time"
)

// jobCtx is the context a handler runs one job under. It is cancelled
// once, with a cause: when the handler returns (nil: context.Canceled),
// at a timeout, a lost lease, a cancel of the job, or when the worker
// gives up. A context.WithCancelCause per job cost two allocations and
// most of a handler goroutine's time per job when the handler is quick; a
// jobCtx costs none of its own (each handler goroutine allocates its
// jobs' contexts in slabs, see slot.nextCtx) and a lock at its cancel.
//
// What only a standard cancelCtx can do is delegated to one made on first
// need: Done (its channel), and Value (context.Cause and context.AfterFunc
// find the cancelCtx through Value; a child context then hangs from it
// directly). One made after the cancel is cancelled at once, with the same
// cause. A handler that never asks for Done or Value pays neither.
//
// A jobCtx is never reused: a context a handler leaked to a goroutine ends
// with its job and stays ended.
type jobCtx struct {
	mu    sync.Mutex
	std   context.Context         // made on first need; nil before
	end   context.CancelCauseFunc // std's
	err   error                   // context.Canceled once cancelled
	cause error                   // the cancel's cause (nil: err)
}

// Deadline reports none: a job's timeout ends it by a cancel, whose cause
// is the ErrJobTimeout.
func (c *jobCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done returns the channel of the standard context made on first need.
func (c *jobCtx) Done() <-chan struct{} { return c.standard().Done() }

// Err returns nil until the cancel, then context.Canceled.
func (c *jobCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Value asks the standard context: the job context holds no value of its
// own, and context.Cause finds the cause through it.
func (c *jobCtx) Value(key any) any { return c.standard().Value(key) }

// String names the context, as the standard ones do.
func (c *jobCtx) String() string { return "emq.jobContext" }

// standard returns the standard context, made now if need be and, when
// c is cancelled already, cancelled with its cause.
func (c *jobCtx) standard() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.std == nil {
		c.std, c.end = context.WithCancelCause(context.Background())
		if c.err != nil {
			c.end(c.cause)
		}
	}
	return c.std
}

// cancel ends the context with cause (nil: context.Canceled); only the
// first cancel counts.
func (c *jobCtx) cancel(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err, c.cause = context.Canceled, cause
	if c.end != nil {
		c.end(cause)
	}
}
