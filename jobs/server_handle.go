package jobs

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/lazytimer"
)

// slot is one handler goroutine's record of the job it runs, shared with
// the extender, the cancel listener and the slot's timeout timer. A
// server has Concurrency slots, scanned (they are few) rather than
// indexed: a cancel or an extension is rare next to a job.
type slot struct {
	mu        sync.Mutex
	busy      bool
	gen       uint64 // bumped per job, so that a late answer is not misapplied
	lane      *lane
	job       emq.Job
	cancel    context.CancelCauseFunc
	since     time.Time // the claim or the last extension that held
	cancelled bool      // its cancel was heard: the outcome is dropped
	lost      bool      // an extension answered stale: the outcome is dropped

	started time.Time     // when the handler started
	timeout time.Duration // the job's timeout, from started
	// The timer runs expire; it is lazy (package lazytimer), as
	// emq.Worker's.
	timer lazytimer.Timer

	task Task // the running job's, handed to its handler: no allocation per job
}

// newSlot returns a slot whose stopped timer runs its timeouts.
func newSlot() *slot {
	s := new(slot)
	s.timer = lazytimer.New(s.expire)
	return s
}

// expire runs when s's timer fires: the running job's context ends
// (cause *TimeoutError) once its timeout passed; else the timer is armed
// for the time left.
func (s *slot) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timer.Fired()
	if !s.busy {
		return
	}
	if left := s.timeout - time.Since(s.started); left > 0 {
		s.timer.Arm(time.Now(), left)
		return
	}
	s.cancel(&TimeoutError{After: s.timeout})
}

// early holds the cancels heard for jobs not running (claimed ahead).
type early struct {
	n  atomic.Int32 // len(m), read without the lock
	mu sync.Mutex
	m  map[runKey]time.Time
}

type runKey struct {
	lane *lane
	id   string
}

// take reports whether a cancel for k was heard, forgetting it.
func (e *early) take(k runKey) bool {
	if e.n.Load() == 0 {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.m[k]
	if ok {
		delete(e.m, k)
		e.n.Store(int32(len(e.m)))
	}
	return ok
}

// add remembers a cancel for k, forgetting those older than keep.
func (e *early) add(k runKey, now time.Time, keep time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[runKey]time.Time{}
	}
	for k, at := range e.m {
		if now.Sub(at) > keep {
			delete(e.m, k)
		}
	}
	e.m[k] = now
	e.n.Store(int32(len(e.m)))
}

// cancelID ends the handler of job id of l (cause ErrCancelled), or
// remembers the cancel for a job claimed ahead.
func (srv *Server) cancelID(l *lane, id string) {
	for _, s := range srv.slots {
		s.mu.Lock()
		hit := s.busy && s.lane == l && s.job.ID == id
		if hit {
			s.cancelled = true
			s.cancel(ErrCancelled)
		}
		s.mu.Unlock()
		if hit {
			return
		}
	}
	srv.early.add(runKey{l, id}, time.Now(), srv.cfg.Lease)
}

// cancelAll ends every running handler with cause.
func (srv *Server) cancelAll(cause error) {
	for _, s := range srv.slots {
		s.mu.Lock()
		if s.busy {
			s.cancel(cause)
		}
		s.mu.Unlock()
	}
}

// process is one handler goroutine.
func (srv *Server) process(s *slot) {
	defer srv.procWG.Done()
	for it := range srv.jobs {
		srv.out.Put(srv.runItem(s, it))
	}
}

// runItem runs one claimed job in s and returns its outcome.
func (srv *Server) runItem(s *slot, it item) outcome {
	job := *it.job
	o := outcome{lane: it.lane, job: job}
	if srv.abandon.Load() {
		return o // the server gave up: the job stays active, for the reaper
	}
	t := &s.task
	*t = Task{ID: job.ID, Queue: it.lane.name, Attempt: job.Token, Retries: -1}
	if IsEnveloped(job.Payload) {
		e, err := ParseEnvelope(job.Payload)
		if err != nil {
			return srv.dead(o, err) // no attempt could parse it
		}
		t.Type, t.Body, t.Retries, t.Timeout, t.Retention = e.Type, e.Body, e.Retries, e.Timeout, e.Retention
	} else {
		t.Raw, t.Body = true, job.Payload
	}
	now := time.Now() // the handler's start: one clock read per job
	if srv.cfg.ExtendInterval > 0 && now.Sub(it.at) >= srv.cfg.ExtendInterval {
		// Claimed ahead and kept waiting: make sure the lease still holds.
		if err := it.lane.q.Extend(srv.life, job.ID, job.Token, srv.cfg.Lease); errors.Is(err, emq.ErrStale) {
			return o // outDrop: not ours any more
		}
		now = time.Now()
		it.at = now
	}
	if srv.early.take(runKey{it.lane, job.ID}) {
		return o // cancelled before it started: the job is dead already
	}
	timeout := srv.cfg.Timeout
	if t.Timeout > 0 {
		timeout = t.Timeout
	}
	// Each job has a context of its own, ended when its handler returns
	// (as net/http's request context is).
	ctx, cancel := context.WithCancelCause(context.Background())
	s.mu.Lock()
	s.busy, s.lane, s.job, s.cancel, s.since = true, it.lane, job, cancel, it.at
	s.cancelled, s.lost = false, false
	s.gen++
	s.started, s.timeout = now, timeout
	s.timer.Arm(now, timeout)
	s.mu.Unlock()
	if srv.abandon.Load() {
		cancel(emq.ErrShutdown)
	}
	it.lane.served.Add(1)
	res, err := srv.call(ctx, t)
	cause := context.Cause(ctx)
	cancel(nil)
	s.mu.Lock()
	drop := s.cancelled || s.lost
	s.busy, s.job, s.cancel = false, emq.Job{}, nil
	s.mu.Unlock()
	if drop || srv.abandon.Load() {
		return o // cancelled, lease lost, or the server gave up: nothing to send
	}
	if err == nil && errors.Is(cause, ErrJobTimeout) {
		err = cause
	}
	return srv.settle(o, t, res, err)
}

// settle maps a handler's return to the job's outcome.
func (srv *Server) settle(o outcome, t *Task, res []byte, err error) outcome {
	switch {
	case errors.Is(err, emq.ErrAbandon):
		return o // left to the reaper
	case err != nil:
		retries := srv.cfg.MaxRetries
		if t.Retries >= 0 {
			retries = t.Retries
		}
		if errors.Is(err, ErrSkipRetry) || errors.Is(err, emq.ErrSkipRetry) || o.job.Token > int64(retries) {
			return srv.dead(o, err)
		}
		o.kind, o.text, o.max = outRetry, errorText(err), retries+1
		o.delay = srv.cfg.backoff(o.job.Token, err)
		return o
	case len(res) > srv.cfg.MaxResult:
		return srv.dead(o, &ResultTooLargeError{Size: len(res), Max: srv.cfg.MaxResult})
	case res != nil || t.Retention > 0:
		o.kind, o.data, o.retention = outResult, res, t.Retention
		if o.retention <= 0 {
			o.retention = srv.cfg.ResultRetention
		}
		return o
	}
	o.kind = outComplete
	return o
}

// dead is the outcome of a job that ends in dead with err.
func (srv *Server) dead(o outcome, err error) outcome {
	o.kind, o.text = outDead, errorText(err)
	return o
}

// maxErrorText bounds the failure text kept in a row.
const maxErrorText = 4 << 10

func errorText(err error) string {
	s := err.Error()
	if len(s) > maxErrorText {
		s = s[:maxErrorText]
	}
	return s
}

// call runs the handler, a panic recovered as a *PanicError.
func (srv *Server) call(ctx context.Context, t *Task) (res []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &emq.PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return srv.h.ProcessTask(ctx, t)
}

// ErrJobTimeout is matched by the cause of a handler's context past its
// task's timeout, and by the failure its retry records.
var ErrJobTimeout = emq.ErrJobTimeout

// TimeoutError is the cause of a handler's context past its task's
// timeout; it matches [ErrJobTimeout].
type TimeoutError struct{ After time.Duration }

func (e *TimeoutError) Error() string        { return fmt.Sprintf("jobs: task timed out after %v", e.After) }
func (e *TimeoutError) Is(target error) bool { return target == ErrJobTimeout }

// bytesString views b as a string without copying; b must not change.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
