package jobs

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
	"unsafe"

	"github.com/echomq/echomq-go/emq"
)

// run is one job a handler runs, as the extender and the cancel listener
// see it.
type run struct {
	lane   *lane
	job    emq.Job
	cancel context.CancelCauseFunc
	since  time.Time // the claim or the last extension that held

	// Guarded by runs.mu.
	cancelled bool // its cancel was heard: the outcome is dropped
	lost      bool // an extension answered stale: the outcome is dropped
}

type runKey struct {
	lane *lane
	id   string
}

// runs is the registry of running jobs, and of the cancels heard for jobs
// not yet running (claimed ahead).
type runs struct {
	mu    sync.Mutex
	m     map[runKey]*run
	early map[runKey]time.Time // cancels heard for jobs not running
}

func (rs *runs) init() {
	rs.m = map[runKey]*run{}
	rs.early = map[runKey]time.Time{}
}

// add registers r, unless a cancel for it was heard already (then false).
func (rs *runs) add(r *run) bool {
	k := runKey{r.lane, r.job.ID}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if _, ok := rs.early[k]; ok {
		delete(rs.early, k)
		return false
	}
	rs.m[k] = r
	return true
}

// remove unregisters r and reports whether its outcome is to be dropped.
func (rs *runs) remove(r *run) (drop bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.m, runKey{r.lane, r.job.ID})
	return r.cancelled || r.lost
}

// cancelID ends the handler of job id of l (cause ErrCancelled), or
// remembers the cancel for a job claimed ahead.
func (rs *runs) cancelID(l *lane, id string, now time.Time, keep time.Duration) {
	k := runKey{l, id}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r, ok := rs.m[k]; ok {
		r.cancelled = true
		r.cancel(ErrCancelled)
		return
	}
	for k, at := range rs.early {
		if now.Sub(at) > keep {
			delete(rs.early, k)
		}
	}
	rs.early[k] = now
}

// cancelAll ends every running handler with cause.
func (rs *runs) cancelAll(cause error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.m {
		r.cancel(cause)
	}
}

// due returns the runs whose lease is due for an extension at now.
func (rs *runs) due(now time.Time, every time.Duration) []*run {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var out []*run
	for _, r := range rs.m {
		if !r.lost && !r.cancelled && now.Sub(r.since) >= every {
			out = append(out, r)
		}
	}
	return out
}

// process is one handler goroutine.
func (srv *Server) process() {
	defer srv.procWG.Done()
	for it := range srv.jobs {
		srv.out.put(srv.runItem(it))
	}
}

// runItem runs one claimed job and returns its outcome.
func (srv *Server) runItem(it item) outcome {
	job := *it.job
	o := outcome{lane: it.lane, job: job}
	t := Task{ID: job.ID, Queue: it.lane.name, Attempt: job.Token, Retries: -1}
	if IsEnveloped(job.Payload) {
		e, err := ParseEnvelope(job.Payload)
		if err != nil {
			return srv.dead(o, err) // no attempt could parse it
		}
		t.Type, t.Body, t.Retries, t.Timeout, t.Retention = e.Type, e.Body, e.Retries, e.Timeout, e.Retention
	} else {
		t.Raw, t.Body = true, job.Payload
	}
	if srv.cfg.ExtendInterval > 0 && time.Since(it.at) >= srv.cfg.ExtendInterval {
		// Claimed ahead and kept waiting: make sure the lease still holds.
		if err := it.lane.q.Extend(srv.life, job.ID, job.Token, srv.cfg.Lease); errors.Is(err, emq.ErrStale) {
			return o // outDrop: not ours any more
		}
		it.at = time.Now()
	}
	timeout := srv.cfg.Timeout
	if t.Timeout > 0 {
		timeout = t.Timeout
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	r := &run{lane: it.lane, job: job, cancel: cancel, since: it.at}
	if !srv.runs.add(r) {
		cancel(nil)
		return o // cancelled before it started: the job is dead already
	}
	if srv.abandon.Load() {
		cancel(emq.ErrShutdown)
	}
	tctx, stop := context.WithTimeoutCause(ctx, timeout, &TimeoutError{After: timeout})
	it.lane.served.Add(1)
	res, err := srv.call(tctx, &t)
	stop()
	cancel(nil)
	if srv.runs.remove(r) || srv.abandon.Load() {
		return o // cancelled, lease lost, or the server gave up: nothing to send
	}
	if err == nil && context.Cause(tctx) != nil && errors.Is(context.Cause(tctx), ErrJobTimeout) {
		err = context.Cause(tctx)
	}
	return srv.settle(o, &t, res, err)
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
