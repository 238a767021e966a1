package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/resp"
)

// e2e -failover: the run goes on across a failover of its node (a
// sentinel URL's master set failing over, a connection killed). What a
// failed call did is accounted for instead of failing the run:
//
//   - An enqueue that was not sent (conn.ErrNotSent, conn.ErrNotConnected,
//     a READONLY reply) is sent again, its jobs unchanged; one whose
//     answer was lost (conn.ErrBroken, a timeout) is never sent again:
//     its jobs are "ambiguous", counted apart, and neither lost nor
//     duplicates whether they turn up or not.
//   - A completion whose answer was lost marks its job "settled" unless
//     the job is seen completed later, and only if its row says completed
//     at the end (completed rows are kept, failoverRetain; a settled job
//     whose row is not completed is lost); a worker exchange that failed
//     (EventError), a stale completion or extension (EventStale,
//     EventLeaseLost: the fencing token kept a stale handler out) is
//     counted. Leases are short (failoverLease) and reaped often, so that
//     jobs claimed before the failover come back soon.
//   - The run ends when the producers are done and the queue holds no
//     pending, active or delayed job (or nothing completed for e2eStall):
//     a job acknowledged by its enqueue and neither seen completed nor
//     settled is lost; one completed twice is a duplicate.
//   - Through a sentinel URL, -after-switch N makes the run last until it
//     has run on the new primary, however long the sentinels take to fail
//     over: the producers go on past -n until N jobs were acknowledged by
//     enqueue calls sent once the master set named a primary other than
//     the run's first (a call already under way at the switch may have
//     gone to the old one, so it does not count). Past -switch-within
//     from the run's start without them, the producers stop, what they
//     enqueued is drained and accounted for as above, and the run fails
//     with what it saw (no switch, or how many jobs after it).
const (
	failoverLease    = 2 * time.Second
	failoverInterval = 200 * time.Millisecond // reap and promote
	failoverAttempts = 1000
	failoverRetain   = 10 * time.Minute      // completed rows kept, so that a settled job can be checked
	failoverResend   = 10 * time.Millisecond // before an unsent enqueue is sent again
)

// Values of e2eJob.enq.
const (
	jobEnqueued  = 1 // the enqueue was acknowledged
	jobAmbiguous = 2 // the enqueue was sent and its answer lost
)

// failoverCounts are the -failover run's counters.
type failoverCounts struct {
	resent, ambiguousJobs             atomic.Int64
	workerErrors, completeLost, stale atomic.Int64
	leaseLost, emptyTicks             atomic.Int64

	switched    atomic.Bool  // the master set named a primary other than the first
	afterSwitch atomic.Int64 // jobs acknowledged by calls sent after that

	mu      sync.Mutex
	settled map[int64]string // job index → id, of the completions whose answer was lost
}

// failoverReport is the -failover part of the e2e report.
type failoverReport struct {
	EnqueueResent      int64 `json:"enqueue_calls_resent"`      // not sent, sent again
	AmbiguousJobs      int64 `json:"ambiguous_jobs"`            // enqueued by a call whose answer was lost
	AmbiguousCompleted int64 `json:"ambiguous_completed"`       // of those, seen completed
	WorkerErrors       int64 `json:"worker_errors"`             // EventError
	CompleteLost       int64 `json:"completions_answer_lost"`   // completions sent whose answer was lost
	Settled            int64 `json:"settled_answer_lost"`       // jobs not seen completed whose completion was sent, their row completed
	SettledNotDone     int64 `json:"settled_row_not_completed"` // jobs not seen completed whose completion was sent, their row not completed
	Stale              int64 `json:"stale"`                     // EventStale: fencing refused a completion
	LeaseLost          int64 `json:"lease_lost"`                // EventLeaseLost
	Left               int64 `json:"left_in_queue"`             // pending, active or delayed at the end
	AcknowledgedLost   int64 `json:"acknowledged_enqueue_lost"` // = e2e.lost

	// Through a sentinel URL: the master set's primary at the start and,
	// once it named another, at the end (sentinel.MasterSet.Primary), and
	// the jobs acknowledged by enqueue calls sent once it named another.
	FirstPrimary string `json:"first_primary,omitempty"`
	NewPrimary   string `json:"new_primary,omitempty"` // "" when it never switched
	AfterSwitch  int64  `json:"acknowledged_after_switch"`
}

// failoverWorker sets the worker up for a failover: short leases, reaped
// and promoted often, attempts enough for the reaps.
func failoverWorker(wc *emq.WorkerConfig) {
	wc.Lease = failoverLease
	wc.ReapInterval, wc.PromoteInterval = failoverInterval, failoverInterval
	wc.MaxAttempts = failoverAttempts
	wc.Retention = failoverRetain
}

// unsent reports whether a failed call was surely not run: nothing was
// sent, or the node refused it as a replica.
func unsent(err error) bool {
	return errors.Is(err, conn.ErrNotSent) || errors.Is(err, conn.ErrNotConnected) || resp.IsCode(err, resp.CodeReadOnly)
}

// failoverEvent counts the events a failover causes; it reports whether
// it took ev (the caller handles the others as without -failover).
func (r *e2eRun) failoverEvent(ev emq.Event) bool {
	switch ev.Kind {
	case emq.EventError:
		r.fo.workerErrors.Add(1)
		if ev.Op == "complete" && !unsent(ev.Err) {
			r.fo.completeLost.Add(1)
			if e, i, _ := r.decode(ev.Job.Payload); e != nil {
				e.settle.Store(1)
				r.fo.mu.Lock()
				if r.fo.settled == nil {
					r.fo.settled = map[int64]string{}
				}
				r.fo.settled[i] = ev.Job.ID
				r.fo.mu.Unlock()
			}
		}
	case emq.EventStale:
		r.fo.stale.Add(1)
	case emq.EventLeaseLost:
		r.fo.leaseLost.Add(1)
	default:
		return false
	}
	return true
}

// enqueueAcross enqueues the jobs from first: sent again while the call
// was not sent (until ctx ends: the jobs are then not enqueued), never
// after an answer was lost.
func (r *e2eRun) enqueueAcross(ctx context.Context, call context.Context, q *emq.Queue, first int64, payloads [][]byte) error {
	for {
		across := r.sawSwitch() // before the call is sent
		res, err := r.send(call, q, payloads)
		switch {
		case err == nil:
			for i, x := range res {
				e := r.jobs.at(first + int64(i))
				switch {
				case x.Err == nil:
					e.id = idHash(x.ID)
					e.enq.Store(jobEnqueued)
					r.enqueued.Add(1)
					if across {
						r.fo.afterSwitch.Add(1)
					}
				case unsent(x.Err):
				case errors.Is(x.Err, conn.ErrBroken) || errors.Is(x.Err, conn.ErrTimeout):
					e.enq.Store(jobAmbiguous)
					r.fo.ambiguousJobs.Add(1)
				default:
					return fmt.Errorf("enqueue: %w", x.Err)
				}
			}
			return nil
		case unsent(err):
			r.fo.resent.Add(1)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(failoverResend):
			}
		case errors.Is(err, conn.ErrBroken) || errors.Is(err, conn.ErrTimeout):
			for i := range payloads {
				r.jobs.at(first + int64(i)).enq.Store(jobAmbiguous)
			}
			r.fo.ambiguousJobs.Add(int64(len(payloads)))
			return nil
		default:
			return err
		}
	}
}

// sawSwitch reports whether the master set of a sentinel URL has named a
// primary other than the run's first (once it did, for the rest of the
// run).
func (r *e2eRun) sawSwitch() bool {
	switch {
	case r.primary == nil:
		return false
	case r.fo.switched.Load():
		return true
	case r.primary() == r.firstPrimary:
		return false
	}
	r.fo.switched.Store(true)
	return true
}

// enoughAcross reports whether, with -after-switch, the producers are
// done at job first: -n jobs sent, and -after-switch acknowledged after
// the switch.
func (r *e2eRun) enoughAcross(first int64) bool {
	return r.cfg.afterSwitch > 0 && first >= r.cfg.n && r.fo.afterSwitch.Load() >= r.cfg.afterSwitch
}

// switchShort is, with -after-switch, the run's failure once
// -switch-within has passed without -after-switch jobs acknowledged after
// the switch; nil before then, or once they were.
func (r *e2eRun) switchShort() error {
	n, want := r.fo.afterSwitch.Load(), r.cfg.afterSwitch
	if want == 0 || n >= want || time.Since(r.start) <= r.cfg.switchWithin {
		return nil
	}
	if !r.sawSwitch() {
		return fmt.Errorf("-after-switch %d: the master set's primary stayed %s for %v (-switch-within): no failover to run across",
			want, r.firstPrimary, r.cfg.switchWithin)
	}
	return fmt.Errorf("-after-switch %d: only %d jobs acknowledged on the new primary %s (was %s) within %v (-switch-within)",
		want, n, r.primary(), r.firstPrimary, r.cfg.switchWithin)
}

// drained reports whether every job enqueued has completed: without
// -failover by the count of completions; with it, when the queue has
// held no pending, active or delayed job on two checks in a row.
func (r *e2eRun) drained(ctx context.Context) bool {
	if !r.cfg.failover {
		return r.completed.Load() >= r.enqueued.Load()
	}
	if n, err := r.leftInQueue(ctx); err != nil || n > 0 {
		r.fo.emptyTicks.Store(0)
		return false
	}
	return r.fo.emptyTicks.Add(1) >= 2
}

// leftInQueue counts the jobs pending, active or delayed in every member
// queue.
func (r *e2eRun) leftInQueue(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var n int64
	for _, q := range r.pqs[0] {
		for _, st := range []emq.State{emq.StatePending, emq.StateActive, emq.StateDelayed} {
			c, err := q.Count(ctx, st)
			if err != nil {
				return 0, err
			}
			n += c
		}
	}
	return n, nil
}

// rowCompleted reports whether the row of job i, whose completion's
// answer was lost, says completed on the node now.
func (r *e2eRun) rowCompleted(i int64) bool {
	r.fo.mu.Lock()
	id := r.fo.settled[i]
	r.fo.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, q := range r.pqs[0] {
		v, err := r.pconns[0].Do(ctx, "HGET", q.Keys().JobPrefix+id, "state")
		if err == nil && v.Text() == string(emq.StateCompleted) {
			return true
		}
	}
	return false
}

// fillFailover fills in what became of every job the producers sent,
// and returns the jobs completed under another id than their enqueue's.
func (r *e2eRun) fillFailover(x *e2eReport) (mismatch int64) {
	f := &failoverReport{
		EnqueueResent: r.fo.resent.Load(), AmbiguousJobs: r.fo.ambiguousJobs.Load(),
		WorkerErrors: r.fo.workerErrors.Load(), CompleteLost: r.fo.completeLost.Load(),
		Stale: r.fo.stale.Load(), LeaseLost: r.fo.leaseLost.Load(),
		FirstPrimary: r.firstPrimary, AfterSwitch: r.fo.afterSwitch.Load(),
	}
	if r.sawSwitch() {
		f.NewPrimary = r.primary()
	}
	if n, err := r.leftInQueue(context.Background()); err == nil {
		f.Left = n
	}
	hi := min(r.next.Load(), r.total)
	for i := range hi {
		e := r.jobs.at(i)
		if e == nil {
			continue
		}
		done := e.done.Load() > 0
		switch e.enq.Load() {
		case jobEnqueued:
			switch {
			case done && e.doneID != e.id:
				mismatch++
			case !done && e.settle.Load() != 0 && r.rowCompleted(i):
				f.Settled++
			case !done:
				x.Lost++
				f.SettledNotDone += int64(e.settle.Load())
			}
		case jobAmbiguous:
			switch {
			case done:
				f.AmbiguousCompleted++
			case e.settle.Load() != 0 && r.rowCompleted(i):
				f.Settled++
			case e.settle.Load() != 0:
				f.SettledNotDone++
			}
		default:
			if done {
				mismatch++ // completed, and its enqueue was never sent
			}
		}
		if done {
			x.Failed += int64(e.failed.Load())
			x.ExtraRuns += int64(e.runs.Load()) - 1 - int64(e.failed.Load())
		}
	}
	f.AcknowledgedLost = x.Lost
	x.Failover = f
	return mismatch
}
