package emq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

// Flow bounds: one flow is one atomic script call, so its size is bounded.
const (
	// MaxFlowNodes is the most jobs one flow holds.
	MaxFlowNodes = 1000
	// MaxFlowDeps is the most dependencies of one flow, in all.
	MaxFlowDeps = 10000
)

// ErrFlow is the error class of a flow refused before anything was
// written: a cycle, an unknown dependency, a flow too large, an id taken.
// Every such error is a *[FlowError] matching it with errors.Is, whether
// found host-side or by the script (code EMQFLOW: the server's text is its
// Reason).
var ErrFlow = errors.New("emq: invalid flow")

// ErrNoFlow is returned for a flow id that names no flow.
var ErrNoFlow = errors.New("emq: no such flow")

// FlowError says why a flow was refused. Nothing was written.
type FlowError struct {
	Node   int    // the node at fault (its index), or -1
	Reason string // what is wrong
}

// Error names the node and the problem.
func (e *FlowError) Error() string {
	if e.Node < 0 {
		return "emq: invalid flow: " + e.Reason
	}
	return fmt.Sprintf("emq: invalid flow: node %d: %s", e.Node, e.Reason)
}

// Is matches [ErrFlow].
func (e *FlowError) Is(target error) bool { return target == ErrFlow }

// FlowPolicy says what a dependency's failure (its job ends dead) does to
// the job that depends on it.
type FlowPolicy uint8

// The policies of a [FlowDep].
const (
	// FlowFail (the default) ends the dependent dead too, with the cause
	// in its error, and so on down the graph.
	FlowFail FlowPolicy = iota
	// FlowIgnore counts the failure as resolved: the dependent runs once
	// its other dependencies have resolved.
	FlowIgnore
	// FlowContinue runs the dependent at once, without waiting for its
	// other dependencies.
	FlowContinue
)

// FlowDep is one dependency of a [FlowNode]: the index of another node
// of the same flow, and what its failure does.
type FlowDep struct {
	Node   int
	Policy FlowPolicy
}

// FlowNode is one job of a flow: its payload and the nodes it depends on
// (by index in the slice given to [Queue.SubmitFlow]).
type FlowNode struct {
	Payload []byte
	Deps    []FlowDep
}

// SubmitFlow admits a DAG of jobs in one atomic call (the flow_submit
// script) and returns the flow's id and the jobs' ids, ids[i] for
// nodes[i]. A job runs (is pending, claimable by any claim) once every
// dependency has completed, or failed under [FlowIgnore]; until then it is
// a row in state delayed, parked in the delayed set at a score that never
// falls due. Settle flow jobs with [Queue.FlowComplete] and
// [Queue.FlowRetry], which resolve the dependents in the same step; a
// dependent reads a dependency's result at emq:{q}:result:<id>.
//
// Dependencies name nodes of the same call only, so a dependency on an
// unknown, finished or other queue's job cannot be expressed. A cycle, a
// self-dependency, an index out of range, a dependency given twice, more
// than [MaxFlowNodes] nodes or [MaxFlowDeps] dependencies is a
// *[FlowError] (matching [ErrFlow]) and nothing is sent; the script checks
// all of it again before it writes anything.
func (q *Queue) SubmitFlow(ctx context.Context, nodes []FlowNode) (flow string, ids []string, err error) {
	if err := checkFlow(nodes); err != nil {
		return "", nil, err
	}
	flow = q.ids.Next()
	ids = make([]string, len(nodes))
	var a dispatch.Args
	a.Key(q.keys.Pending)
	a.Key(q.keys.Delayed)
	a.Key(q.keys.Base)
	a.Arg(flow)
	a.ArgInt(int64(len(nodes)))
	for i, nd := range nodes {
		ids[i] = q.ids.Next()
		a.Arg(ids[i])
		a.ArgBytes(nd.Payload)
		a.ArgInt(int64(len(nd.Deps)))
		for _, d := range nd.Deps {
			a.ArgInt(int64(d.Node + 1))
			a.Arg([...]string{"f", "i", "c"}[d.Policy])
		}
	}
	err = q.reaper.Eval(ctx, scriptFlowSubmit, &a, func(v resp.Value) error {
		if n, err := v.AsInt(); err != nil || n != 1 {
			return badReply("flow_submit", v, "1")
		}
		return nil
	})
	if err != nil {
		err = wrapErr("flow_submit", err)
		if se, ok := errors.AsType[*ScriptError](err); ok && se.Err.HasCode("EMQFLOW") {
			err = &FlowError{Node: -1, Reason: se.Error()}
		}
		return "", nil, err
	}
	return flow, ids, nil
}

// checkFlow refuses what flow_submit would: the bounds, the indices, the
// policies, duplicates and cycles.
func checkFlow(nodes []FlowNode) error {
	if len(nodes) == 0 || len(nodes) > MaxFlowNodes {
		return &FlowError{Node: -1, Reason: fmt.Sprintf("%d nodes, want 1 to %d", len(nodes), MaxFlowNodes)}
	}
	edges := 0
	indeg := make([]int, len(nodes))
	kids := make([][]int, len(nodes))
	for i, nd := range nodes {
		edges += len(nd.Deps)
		if edges > MaxFlowDeps {
			return &FlowError{Node: -1, Reason: fmt.Sprintf("more than %d dependencies", MaxFlowDeps)}
		}
		for j, d := range nd.Deps {
			switch {
			case d.Node < 0 || d.Node >= len(nodes):
				return &FlowError{Node: i, Reason: fmt.Sprintf("depends on node %d, unknown", d.Node)}
			case d.Node == i:
				return &FlowError{Node: i, Reason: "depends on itself"}
			case d.Policy > FlowContinue:
				return &FlowError{Node: i, Reason: "not a FlowPolicy"}
			}
			for _, e := range nd.Deps[:j] {
				if e.Node == d.Node {
					return &FlowError{Node: i, Reason: fmt.Sprintf("depends on node %d twice", d.Node)}
				}
			}
			indeg[i]++
			kids[d.Node] = append(kids[d.Node], i)
		}
	}
	ready := make([]int, 0, len(nodes))
	for i, d := range indeg {
		if d == 0 {
			ready = append(ready, i)
		}
	}
	for h := 0; h < len(ready); h++ {
		for _, k := range kids[ready[h]] {
			if indeg[k]--; indeg[k] == 0 {
				ready = append(ready, k)
			}
		}
	}
	if len(ready) < len(nodes) {
		for i, d := range indeg {
			if d > 0 {
				return &FlowError{Node: i, Reason: fmt.Sprintf("on or behind a cycle (%d nodes are)", len(nodes)-len(ready))}
			}
		}
	}
	return nil
}

// FlowState is a flow's state.
type FlowState string

// The states of a flow.
const (
	FlowRunning FlowState = "running" // some job has not ended
	FlowDone    FlowState = "done"    // every job completed
	FlowFailed  FlowState = "failed"  // every job ended, some dead (or cancelled)
)

// FlowJob is one job of a flow and the state of its row ("" when the row
// is gone: completed without retention, or deleted).
type FlowJob struct {
	ID    string
	State State
}

// FlowInfo is a flow as [Queue.Flow] and [Queue.CancelFlow] read it.
type FlowInfo struct {
	ID     string
	State  FlowState
	Total  int // jobs in the flow
	Left   int // jobs not yet ended
	Failed int // jobs ended dead
	// Cancelled is the jobs [Queue.CancelFlow] ended (0 for Flow).
	Cancelled int
	Jobs      []FlowJob // in submission order
}

// Flow repairs and reads flow id in one atomic call: a job of the flow
// that ended without [Queue.FlowComplete] or [Queue.FlowRetry] (a peer's
// core complete, retry, reap or cancel, a delete) is resolved for its
// dependents first, so none waits on a dependency that has ended. A row
// that is gone counts as completed. An unknown flow is [ErrNoFlow].
func (q *Queue) Flow(ctx context.Context, id string) (FlowInfo, error) {
	return q.flowCall(ctx, id, "a", "")
}

// CancelFlow repairs flow id as [Queue.Flow] does, then ends dead with the
// error "cancelled" every job of it that has not run (pending, or waiting
// on its dependencies); a running job runs on and its end releases
// nothing. It returns the flow as it then is, Cancelled counting the jobs
// it ended.
func (q *Queue) CancelFlow(ctx context.Context, id string) (FlowInfo, error) {
	return q.flowCall(ctx, id, "x", "cancelled")
}

// flowCall runs flow_complete in mode 'a' or 'x'.
func (q *Queue) flowCall(ctx context.Context, id, mode, errText string) (FlowInfo, error) {
	if err := checkID(id); err != nil {
		return FlowInfo{}, err
	}
	a := q.flowArgs()
	a.Arg(mode)
	a.Arg(id)
	if mode == "x" {
		a.Arg(errText)
	}
	fi := FlowInfo{ID: id}
	found := false
	err := q.reaper.Eval(ctx, scriptFlowComplete, a, func(v resp.Value) error {
		const want = "{state, total, left, failed, cancelled, id, state, ...}"
		if v.Type != resp.Array || (len(v.Elems) != 0 && (len(v.Elems) < 5 || len(v.Elems)%2 != 1)) {
			return badReply("flow_complete", v, want)
		}
		if len(v.Elems) == 0 {
			return nil
		}
		found = true
		fi.State = FlowState(v.Elems[0].Str)
		var n [4]int64
		for i := range n {
			var err error
			if n[i], err = v.Elems[i+1].AsInt(); err != nil {
				return badReply("flow_complete", v, want)
			}
		}
		fi.Total, fi.Left, fi.Failed, fi.Cancelled = int(n[0]), int(n[1]), int(n[2]), int(n[3])
		for i := 5; i+1 < len(v.Elems); i += 2 {
			fi.Jobs = append(fi.Jobs, FlowJob{ID: string(v.Elems[i].Str), State: State(v.Elems[i+1].Str)})
		}
		return nil
	})
	if err != nil {
		return FlowInfo{}, wrapErr("flow_complete", err)
	}
	if !found {
		return FlowInfo{}, ErrNoFlow
	}
	return fi, nil
}

// flowArgs starts flow_complete's arguments: its five keys.
func (q *Queue) flowArgs() *dispatch.Args {
	a := new(dispatch.Args)
	a.Key(q.keys.Active)
	a.Key(q.keys.Pending)
	a.Key(q.keys.Delayed)
	a.Key(q.keys.Dead)
	a.Key(q.keys.Base)
	return a
}

// FlowComplete completes a claimed job as [Queue.Complete] does (the
// flow_complete script), for any job: plain, a lane's or a flow's. In the
// same step a lane job frees its place in its lane, and a flow job
// releases the dependents whose dependencies have all resolved; with a
// retention (rounded up to a millisecond) the row and result are kept at
// emq:{q}:result:<id> for it, 0 deletes the row and keeps no result. The
// end is published on emq:{q}:done:<id>. A token that no longer holds the
// lease is [ErrStale].
func (q *Queue) FlowComplete(ctx context.Context, id string, token int64, result []byte, retention time.Duration) error {
	if err := checkID(id); err != nil {
		return err
	}
	ms, err := millis("retention", retention, false)
	if err != nil {
		return err
	}
	a := q.flowArgs()
	a.Arg("c")
	a.Arg(id)
	a.ArgInt(token)
	a.ArgInt(ms)
	a.ArgBytes(result)
	n, err := q.settleCall(ctx, a)
	if err == nil && n != 1 {
		err = ErrStale
	}
	return err
}

// FlowRetry gives back a claimed job that failed as [Queue.Retry] does
// (the flow_complete script), for any job. A retried lane job keeps its
// place: the lane's next job waits for it. A job that goes dead frees its
// lane's place or halts the lane ([LaneHaltOnDead]), and fails, ignores
// or continues its flow's dependents by their [FlowPolicy], in the same
// step. A token that no longer holds the lease is [ErrStale].
func (q *Queue) FlowRetry(ctx context.Context, id string, token int64, delay time.Duration, maxAttempts int, errText string) (RetryOutcome, error) {
	if err := checkID(id); err != nil {
		return 0, err
	}
	if maxAttempts < 0 {
		return 0, &ArgError{Arg: "maxAttempts", Reason: "negative"}
	}
	ms, _ := millis("delay", delay, true)
	a := q.flowArgs()
	a.Arg("r")
	a.Arg(id)
	a.ArgInt(token)
	a.ArgInt(ms)
	a.ArgInt(scriptInt(maxAttempts))
	a.Arg(errText)
	n, err := q.settleCall(ctx, a)
	if err != nil {
		return 0, err
	}
	// flow_complete 'r' answers as retry: 2 dead, 1 retried, 0 stale.
	if out := [...]RetryOutcome{0, RetryRequeued, RetryDead}[min(max(n, 0), 2)]; out == RetryRequeued && ms > 0 {
		return RetryDelayed, nil
	} else if out != 0 {
		return out, nil
	}
	return 0, ErrStale
}

// settleCall runs flow_complete in mode 'c' or 'r' and returns its integer.
func (q *Queue) settleCall(ctx context.Context, a *dispatch.Args) (int64, error) {
	var n int64
	err := q.reaper.Eval(ctx, scriptFlowComplete, a, func(v resp.Value) error {
		var err error
		if n, err = v.AsInt(); err != nil {
			return badReply("flow_complete", v, "an integer")
		}
		return nil
	})
	return n, wrapErr("flow_complete", err)
}
