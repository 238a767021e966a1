package jobs

import (
	"context"
	"errors"

	"github.com/echomq/echomq-go/emq"
)

// Lanes (emq's LaneEnqueue, LANES-FLOWS.md): a lane is a named ordered
// sub-queue of a queue (a user, an account): its jobs run in enqueue
// order, at most its cap at once, lanes beside each other.
//
// The Client enqueues into a lane ([Client.EnqueueLane]) or submits a
// flow ([Client.SubmitFlow]); a Server runs the lane and flow jobs of the
// queues named in ServerConfig.LaneFlowQueues: it claims them with emq's
// LaneClaim (lane jobs wait parked until it hands them out) and settles
// them with FlowComplete and FlowRetry (exchangeLaneFlow, the one hook in
// the claim round).

// ErrLaneOption is returned for an option EnqueueLane and SubmitFlow cannot
// honour: a delay or a unique key.
var ErrLaneOption = errors.New("jobs: a lane or flow task cannot be delayed or unique")

// EnqueueLane admits t at the tail of lane (of the queue of the options),
// with the lane's options o (a zero field keeps what the lane has), and
// returns its id. The task's envelope is the one [Client.Enqueue] writes.
// A lane name that is not an emq lane name is an *emq.LaneError and
// nothing is sent; so is a delay or a unique option (ErrLaneOption).
func (c *Client) EnqueueLane(ctx context.Context, lane string, lo emq.LaneOptions, t *Task, opts ...Option) (*Info, error) {
	if _, err := emq.LaneKey(lane); err != nil {
		return nil, err
	}
	o, err := c.options(opts)
	if err != nil {
		return nil, err
	}
	if o.delay > 0 || o.unique != nil {
		return nil, ErrLaneOption
	}
	p, err := payload(nil, t, &o)
	if err != nil {
		return nil, err
	}
	q, err := c.qs.get(ctx, o.queue)
	if err != nil {
		return nil, err
	}
	ids, err := q.LaneEnqueue(ctx, lane, lo, p)
	if err != nil {
		return nil, err
	}
	return &Info{ID: ids[0], Queue: o.queue, State: emq.StateDelayed}, nil
}

// exchangeLaneFlow is exchange for a queue of ServerConfig.LaneFlowQueues:
// it settles the round's outcomes through emq's flow scripts (the
// completions in one FlowCompleteBatch, each other outcome by its own
// FlowComplete or FlowRetry), so that a lane job frees its place and a
// flow job releases its dependents in the same step, then claims up to n
// jobs with LaneClaim (plain and lane jobs, the lanes round-robin in the
// script); for a queue of ServerConfig.FlowQueues the last 1,000
// completions and the claim are one FlowCompleteClaim call. A release (a
// job claimed and never run) is a FlowRetry at once, which counts an
// attempt; a lane job keeps its place meanwhile.
func (srv *Server) exchangeLaneFlow(l *lane, outs []outcome, n int) []emq.Job {
	ctx := srv.life
	emit := func(o *outcome, k EventKind, text string, err error) {
		switch {
		case errors.Is(err, emq.ErrStale):
			k, text = EventStale, o.text
		case err != nil:
			srv.fail(err)
			k, text = EventUnsent, err.Error()
		}
		if srv.cfg.OnEvent != nil {
			srv.cfg.OnEvent(Event{Kind: k, Queue: l.name, Job: o.job, Err: text})
		}
	}
	var rs []emq.FlowResult
	var ri []int
	for i := range outs {
		o := &outs[i]
		var err error
		k := EventCompleted
		switch o.kind {
		case outComplete:
			rs = append(rs, emq.FlowResult{ID: o.job.ID, Token: o.job.Token})
			ri = append(ri, i)
			continue
		case outResult:
			err = l.q.FlowComplete(ctx, o.job.ID, o.job.Token, o.data, o.retention)
		case outRetry, outDead, outRelease:
			maxA, text, delay := o.max, o.text, o.delay
			switch o.kind {
			case outDead:
				maxA, delay = 0, 0
			case outRelease:
				maxA, text, delay = 1<<30, "", 0
			}
			var out emq.RetryOutcome
			out, err = l.q.FlowRetry(ctx, o.job.ID, o.job.Token, delay, maxA, text)
			k = map[emq.RetryOutcome]EventKind{emq.RetryDead: EventDead, emq.RetryRequeued: EventRetried, emq.RetryDelayed: EventRetried}[out]
			if o.kind == outRelease {
				k = EventReleased
			}
		default:
			continue
		}
		srv.calls.Add(1)
		emit(o, k, o.text, err)
	}
	settled := func(ri []int, ok []bool, err error) {
		for j, i := range ri {
			var e error
			switch {
			case err != nil:
				e = err
			case !ok[j]:
				e = emq.ErrStale
			}
			emit(&outs[i], EventCompleted, "", e)
		}
	}
	for len(rs) > 1000 || (len(rs) > 0 && !l.flowOnly) {
		m := min(len(rs), 1000)
		srv.calls.Add(1)
		ok, err := l.q.FlowCompleteBatch(ctx, rs[:m], srv.cfg.Retention)
		settled(ri[:m], ok, err)
		rs, ri = rs[m:], ri[m:]
	}
	if l.flowOnly && (len(rs) > 0 || n > 0) {
		// the last completions and the claim in one call
		srv.calls.Add(1)
		ok, jobs, err := l.q.FlowCompleteClaim(ctx, rs, srv.cfg.Retention, srv.cfg.Lease, n)
		if ok != nil { // the call ran: a later error is its steps'
			settled(ri, ok, nil)
		} else {
			settled(ri, nil, err)
		}
		if err != nil {
			srv.fail(err)
			return nil
		}
		return jobs
	}
	if n == 0 {
		return nil
	}
	srv.calls.Add(1)
	jobs, err := l.q.LaneClaim(ctx, srv.cfg.Lease, n)
	if err != nil {
		srv.fail(err)
		return nil
	}
	return jobs
}
