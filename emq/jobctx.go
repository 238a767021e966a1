package emq

import (
	"context"
	"sync"
	"sync/atomic"
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
	state atomic.Uint32           // ctxEnded, ctxStd
	mu    sync.Mutex              // guards std, end and cause, and makes std and a cancel with a cause one step
	std   context.Context         // made on first need; nil before
	end   context.CancelCauseFunc // std's
	cause error                   // the cancel's cause (nil: context.Canceled)
}

// The bits of jobCtx.state.
const (
	ctxEnded uint32 = 1 << iota // cancelled
	ctxStd                      // std is made (then a cancel takes mu)
)

// Deadline reports none: a job's timeout ends it by a cancel, whose cause
// is the ErrJobTimeout.
func (c *jobCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done returns the channel of the standard context made on first need.
func (c *jobCtx) Done() <-chan struct{} { return c.standard().Done() }

// Err returns nil until the cancel, then context.Canceled.
func (c *jobCtx) Err() error {
	if c.state.Load()&ctxEnded != 0 {
		return context.Canceled
	}
	return nil
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
		// From here a cancel takes mu; one that ended c before (without
		// it, or with it and its cause) is passed on now.
		if c.state.Or(ctxStd)&ctxEnded != 0 {
			c.end(c.cause)
		}
	}
	return c.std
}

// cancel ends the context with cause (nil: context.Canceled); only the
// first cancel counts. The handler's return, the one cancel of most
// jobs (nil cause, nobody asked for Done or Value), is one atomic
// compare-and-swap: no lock (the lock per job was ~3% of the client's
// CPU in the native e2e profile).
func (c *jobCtx) cancel(cause error) {
	if cause == nil && c.state.CompareAndSwap(0, ctxEnded) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		st := c.state.Load()
		if st&ctxEnded != 0 {
			return
		}
		if c.state.CompareAndSwap(st, st|ctxEnded) {
			break
		}
	}
	// Under mu: standard, which reads cause, waits for it.
	c.cause = cause
	if c.end != nil {
		c.end(cause)
	}
}
