package emq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

// Flow bounds. A flow of up to flowOneCall nodes and dependencies is
// one atomic script call; a larger one is staged in parts of bounded
// size, none of which runs until the last is in (see [Queue.SubmitFlow]).
const (
	// MaxFlowNodes is the most jobs one flow holds.
	MaxFlowNodes = 100000
	// MaxFlowDeps is the most dependencies of one flow, in all.
	MaxFlowDeps = 1000000
	// flowOneCall bounds nodes + dependencies of a flow sent in one call.
	flowOneCall = 3000
	// flowPartEntries and flowPartDeps bound one staged part.
	flowPartEntries = 250
	flowPartDeps    = 500
	// flowPartsPipelined is how many staged parts after the first are
	// sent in one round trip (each its own bounded call).
	flowPartsPipelined = 8
	// flowPage is how many jobs one Flow or CancelFlow call reads.
	flowPage = 1000
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
// of the same flow, or (Queue set) a job of another queue, and what its
// failure does.
type FlowDep struct {
	Node   int
	Policy FlowPolicy
	// Queue and ID, when Queue is set, name a job of another queue (on a
	// cluster, another slot) that must not have ended: its end is posted
	// on its queue's outbox and applied here by [Queue.RelayFlows]
	// (LANES-FLOWS.md, "Across queues"). Node is then unused.
	Queue *Queue
	ID    string
}

// FlowNode is one job of a flow: its payload and the nodes it depends on
// (by index in the slice given to [Queue.SubmitFlow]).
type FlowNode struct {
	Payload []byte
	Deps    []FlowDep
	// Lane, when set, names a lane (as [Queue.LaneEnqueue]'s) the job
	// runs in: released, it joins the lane's tail instead of pending, and
	// runs in the lane's order, at most the lane's cap at once.
	Lane string
}

// SubmitFlow admits a DAG of jobs and returns the flow's id and the
// jobs' ids, ids[i] for nodes[i]. A job runs (is pending, claimable by any
// claim) once every dependency has completed, or failed under
// [FlowIgnore]; until then it is a row in state delayed, parked in the
// delayed set at a score that never falls due. Settle flow jobs with
// [Queue.FlowComplete] and [Queue.FlowRetry], which resolve the dependents
// (in bounded steps); a dependent reads a dependency's result at
// emq:{q}:result:<id>.
//
// A flow of up to 3,000 nodes and dependencies in all is one atomic call
// (the flow_submit script). A larger one, up to [MaxFlowNodes] nodes and
// [MaxFlowDeps] dependencies, is staged: sent in parts of at most 250
// entries and 500 dependencies in topological order, none of whose jobs
// runs until the last part is in and the flow is sealed; a part refused
// (or a call failed) deletes what was staged before the error is
// returned, in steps as bounded.
//
// Dependencies name nodes of the same call only, so a dependency on an
// unknown, finished or other queue's job cannot be expressed. A cycle, a
// self-dependency, an index out of range, a dependency given twice, more
// than [MaxFlowNodes] nodes or [MaxFlowDeps] dependencies is a
// *[FlowError] (matching [ErrFlow]) and nothing is sent; the script checks
// all of it again before it writes anything.
func (q *Queue) SubmitFlow(ctx context.Context, nodes []FlowNode) (flow string, ids []string, err error) {
	order, edges, err := checkFlow(nodes)
	if err != nil {
		return "", nil, err
	}
	flow = q.ids.Next()
	ids = make([]string, len(nodes))
	for i := range ids {
		ids[i] = q.ids.Next()
	}
	remote, err := q.checkRemote(ctx, nodes)
	if err != nil {
		return "", nil, err
	}
	lanes, err := flowLanes(nodes)
	if err != nil {
		return "", nil, err
	}
	if remote || lanes || len(nodes)+edges > flowOneCall {
		if err := q.stageFlow(ctx, flow, ids, nodes, order); err != nil {
			return "", nil, err
		}
		return flow, ids, nil
	}
	var a dispatch.Args
	a.Key(q.keys.Pending)
	a.Key(q.keys.Delayed)
	a.Key(q.keys.Base)
	a.Arg(flow)
	a.ArgInt(int64(len(nodes)))
	for i, nd := range nodes {
		a.Arg(ids[i])
		a.ArgBytes(nd.Payload)
		a.ArgInt(int64(len(nd.Deps)))
		for _, d := range nd.Deps {
			a.ArgInt(int64(d.Node + 1))
			a.Arg([...]string{"f", "i", "c"}[d.Policy])
		}
	}
	if err := q.submitCall(ctx, &a); err != nil {
		return "", nil, err
	}
	return flow, ids, nil
}

// submitCall runs one flow_submit call, mapping EMQFLOW to a *FlowError.
func (q *Queue) submitCall(ctx context.Context, a *dispatch.Args) error {
	err := q.reaper.Eval(ctx, scriptFlowSubmit, a, func(v resp.Value) error {
		if n, err := v.AsInt(); err != nil || n != 1 {
			return badReply("flow_submit", v, "1")
		}
		return nil
	})
	return submitErr(err)
}

// submitErr wraps a flow_submit error, an EMQFLOW refusal as a
// *FlowError.
func submitErr(err error) error {
	err = wrapErr("flow_submit", err)
	if se, ok := errors.AsType[*ScriptError](err); ok && se.Err.HasCode("EMQFLOW") {
		err = &FlowError{Node: -1, Reason: se.Error()}
	}
	return err
}

// submitBatch sends the staged parts in b as one pipeline and returns
// the first part's refusal (a *FlowError for EMQFLOW) or a reply that is
// not 1. The parts after a refused one run too (the flow is staging:
// nothing of it runs), and the caller's abort deletes them all.
func (q *Queue) submitBatch(ctx context.Context, b *dispatch.Batch) error {
	if err := q.reaper.EvalBatch(ctx, b); err != nil {
		return wrapErr("flow_submit", err)
	}
	for i := range b.Len() {
		if err := b.Err(i); err != nil {
			return submitErr(err)
		}
		if n, err := b.Reply(i).AsInt(); err != nil || n != 1 {
			return badReply("flow_submit", b.Reply(i), "1")
		}
	}
	return nil
}

// stageFlow sends a large flow in parts (flow_submit '+'), nodes in
// topological order so that every dependency points to an entry sent
// before, then seals it (flow_complete 'g') and runs the steps that
// release its roots. On an error it deletes what it staged.
func (q *Queue) stageFlow(ctx context.Context, flow string, ids []string, nodes []FlowNode, order []int) (err error) {
	type entry struct {
		node int
		kind string
		deps []FlowDep
	}
	var part []entry
	var deps, parts int
	// at[node] is its 'n' entry's position (1-based) in part, 0 when
	// not in it: a flat array, cleared by part's entries after a flush.
	at := make([]int32, len(nodes))
	pol := [...]string{"f", "i", "c"}
	// One Args for every part: a part is encoded into it, then sent (the
	// first) or copied into the batch, so its memory is reused.
	a := new(dispatch.Args)
	// The first part (it makes the flow) is sent alone; later parts go
	// flowPartsPipelined to a round trip, run in order by the server.
	var b dispatch.Batch
	send := func() error {
		if b.Len() == 0 {
			return nil
		}
		defer b.Reset()
		return q.submitBatch(ctx, &b)
	}
	flush := func() error {
		q.partArgs(a, flow, [...]string{"1", "0"}[min(parts, 1)], len(part))
		for _, e := range part {
			a.Arg(ids[e.node])
			a.Arg(e.kind)
			if e.kind != "+" {
				a.ArgBytes(nodes[e.node].Payload)
			} else {
				a.Arg("")
			}
			a.ArgInt(int64(len(e.deps)))
			for _, d := range e.deps {
				if d.Queue != nil {
					a.Arg(d.Queue.keys.Base + d.ID)
				} else if x := at[d.Node]; x > 0 {
					a.ArgInt(int64(x))
				} else {
					a.Arg(ids[d.Node])
				}
				a.Arg(pol[d.Policy])
			}
		}
		parts++
		for _, e := range part {
			at[e.node] = 0
		}
		part, deps = part[:0], 0
		if parts == 1 {
			return q.submitCall(ctx, a)
		}
		b.Add(scriptFlowSubmit, a)
		if b.Len() < flowPartsPipelined {
			return nil
		}
		return send()
	}
	defer func() {
		if err != nil && parts > 0 {
			q.abortFlow(context.WithoutCancel(ctx), flow)
		}
	}()
	for _, i := range order {
		rest := nodes[i].Deps
		kind := "n"
		for first := true; first || len(rest) > 0; first = false {
			if len(part) == flowPartEntries || (len(rest) > 0 && deps == flowPartDeps) {
				if err := flush(); err != nil {
					return err
				}
			}
			k := min(len(rest), flowPartDeps-deps)
			if kind == "n" && k < len(rest) {
				kind = "N" // its dependencies go on in '+' entries
			}
			part = append(part, entry{node: i, kind: kind, deps: rest[:k]})
			if kind != "+" {
				at[i] = int32(len(part))
			}
			deps += k
			rest = rest[k:]
			kind = "+"
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if err := send(); err != nil {
		return err
	}
	// Staged, nothing runs: link each remote dependency in its own queue
	// (its own slot), so that its end is posted for the relay.
	for i, nd := range nodes {
		for _, d := range nd.Deps {
			if d.Queue == nil {
				continue
			}
			la := d.Queue.flowArgs()
			la.Arg("L")
			la.Arg(d.ID)
			la.Arg(q.keys.Queue)
			la.Arg(ids[i])
			if _, err := d.Queue.settleCall(ctx, la); err != nil {
				return err
			}
		}
	}
	if err := q.markFlowLanes(ctx, ids, nodes); err != nil {
		return err
	}
	fa := q.flowArgs()
	fa.Arg("g")
	fa.Arg(flow)
	n, err := q.settleCall(ctx, fa)
	if err != nil {
		if se, ok := errors.AsType[*ScriptError](err); ok && se.Err.HasCode("EMQFLOW") {
			err = &FlowError{Node: -1, Reason: se.Error()}
		}
		return err
	}
	if n > 0 {
		// Sealed: the flow runs whatever happens here; the steps left
		// are run by the next settle, Flow or FlowStep.
		_, _ = q.runSteps(ctx)
	}
	return nil
}

// partArgs resets a and starts in it a staged part's flow_submit
// arguments: its keys, '+', the flow, first ("1" for the first part) and
// the count of entries.
func (q *Queue) partArgs(a *dispatch.Args, flow, first string, n int) {
	a.Reset()
	a.Key(q.keys.Pending)
	a.Key(q.keys.Delayed)
	a.Key(q.keys.Base)
	a.Arg("+")
	a.Arg(flow)
	a.Arg(first)
	a.ArgInt(int64(n))
}

// checkRemote reports whether nodes name a job of another queue, and
// refuses one of this queue, or one that is not pending, delayed or
// active (finished or unknown), with a *FlowError, before anything is
// written.
func (q *Queue) checkRemote(ctx context.Context, nodes []FlowNode) (bool, error) {
	remote := false
	for i, nd := range nodes {
		for _, d := range nd.Deps {
			if d.Queue == nil {
				continue
			}
			remote = true
			if d.Queue.keys.Base == q.keys.Base {
				return false, &FlowError{Node: i, Reason: "a remote dependency on a job of this queue (name its node instead)"}
			}
			v, err := d.Queue.sender.Do(ctx, "HGET", d.Queue.keys.Job(d.ID), "state")
			if err != nil {
				return false, err
			}
			switch State(v.Str) {
			case StatePending, StateDelayed, StateActive:
			default:
				what := "unknown"
				if !v.IsNull() {
					what = "finished (" + string(v.Str) + ")"
				}
				return false, &FlowError{Node: i, Reason: fmt.Sprintf("depends on job %s of queue %s: %s", d.ID, d.Queue.keys.Queue, what)}
			}
		}
	}
	return remote, nil
}

// relayHook, when set (tests), runs after an entry was applied and
// before it is acknowledged; its error stops the pass there, as a crash
// of the relay would.
var relayHook func(entry string) error

// RelayFlows moves up to max (1 to 1,000) entries of this queue's outbox
// (the ends of its jobs on which flows of other queues depend) to their
// queues, oldest first, and returns how many it moved. Each entry is
// applied in the target's slot by one script call (flow_complete 'e',
// idempotent: an entry applied twice counts once), then removed from
// the outbox (LREM): a relay that dies between the two leaves the entry,
// and the next pass applies it again to no effect. So every end reaches
// its dependent exactly once, and no script touches another slot's keys.
// target opens the queue of a name (on a cluster client, any name). A
// pass first posts the ends of up to 100 linked jobs that ended without
// the flow scripts (a peer's core complete or retry, a trim). Run it in
// a loop (or beside the reaper) per queue that has such dependents; any
// number of relays may run at once.
func (q *Queue) RelayFlows(ctx context.Context, target func(name string) (*Queue, error), max int) (int, error) {
	if max < 1 || max > 1000 {
		return 0, &ArgError{Arg: "max", Reason: fmt.Sprintf("%d, want 1 to 1000", max)}
	}
	ra := q.flowArgs()
	ra.Arg("l")
	ra.ArgInt(100)
	if _, err := q.settleCall(ctx, ra); err != nil {
		return 0, err
	}
	box := q.keys.Base + "outbox"
	v, err := q.sender.Do(ctx, "LRANGE", box, "0", strconv.Itoa(max-1))
	if err != nil {
		return 0, err
	}
	moved := 0
	for _, e := range v.Elems {
		entry := string(e.Str)
		f := strings.SplitN(entry, "\n", 5)
		if len(f) != 5 {
			return moved, fmt.Errorf("emq: outbox entry %q: malformed", quoteClipped(entry))
		}
		tq, err := target(f[0])
		if err != nil {
			return moved, err
		}
		a := tq.flowArgs()
		a.Arg("e")
		a.Arg(f[1])
		a.Arg(f[2])
		a.Arg(f[3])
		a.Arg(f[4])
		if _, err := tq.settleCall(ctx, a); err != nil {
			return moved, err
		}
		if relayHook != nil {
			if err := relayHook(entry); err != nil {
				return moved, err
			}
		}
		if _, err := q.sender.Do(ctx, "LREM", box, "1", entry); err != nil {
			return moved, err
		}
		moved++
	}
	return moved, nil
}

// abortFlow deletes staged flow f, 500 jobs a call.
func (q *Queue) abortFlow(ctx context.Context, f string) {
	for range MaxFlowNodes/500 + 2 {
		a := q.flowArgs()
		a.Arg("-")
		a.Arg(f)
		if n, err := q.settleCall(ctx, a); err != nil || n == 0 {
			return
		}
	}
}

// FlowStep runs up to 250 units of the queue's pending flow resolution
// steps (the dependents of ended flow jobs, the roots of a sealed flow)
// in one bounded call, and returns how many step entries are left.
// FlowComplete, FlowRetry, Flow and CancelFlow run steps too, so FlowStep
// is only needed when those are not called for a while (after a
// consumer's crash): run it beside the reaper.
func (q *Queue) FlowStep(ctx context.Context) (int, error) {
	a := q.flowArgs()
	a.Arg("s")
	n, err := q.settleCall(ctx, a)
	return int(n), err
}

// runSteps calls FlowStep until no step is left, at most 10,000 times.
func (q *Queue) runSteps(ctx context.Context) (int, error) {
	for range 10000 {
		n, err := q.FlowStep(ctx)
		if err != nil || n == 0 {
			return n, err
		}
	}
	return 0, nil
}

// checkFlow refuses what flow_submit would: the bounds, the indices, the
// policies, duplicates and cycles. It returns the nodes in a topological
// order and the count of dependencies.
func checkFlow(nodes []FlowNode) (order []int, edges int, err error) {
	if len(nodes) == 0 || len(nodes) > MaxFlowNodes {
		return nil, 0, &FlowError{Node: -1, Reason: fmt.Sprintf("%d nodes, want 1 to %d", len(nodes), MaxFlowNodes)}
	}
	// The graph in two flat arrays (no slice per node, no map): indeg
	// counts each node's dependencies, kids[at[x]:at[x+1]] lists the
	// dependents of x in the order they were given; mark[x] == i+1 says
	// node i named x already (a dependency given twice).
	indeg := make([]int32, len(nodes))
	at := make([]int32, len(nodes)+1)
	mark := make([]int32, len(nodes))
	local := 0
	for i, nd := range nodes {
		edges += len(nd.Deps)
		if edges > MaxFlowDeps {
			return nil, 0, &FlowError{Node: -1, Reason: fmt.Sprintf("more than %d dependencies", MaxFlowDeps)}
		}
		for _, d := range nd.Deps {
			if d.Queue != nil {
				if err := checkID(d.ID); err != nil {
					return nil, 0, &FlowError{Node: i, Reason: fmt.Sprintf("remote dependency: %v", err)}
				}
				if d.Policy > FlowContinue {
					return nil, 0, &FlowError{Node: i, Reason: "not a FlowPolicy"}
				}
				continue
			}
			switch {
			case d.Node < 0 || d.Node >= len(nodes):
				return nil, 0, &FlowError{Node: i, Reason: fmt.Sprintf("depends on node %d, unknown", d.Node)}
			case d.Node == i:
				return nil, 0, &FlowError{Node: i, Reason: "depends on itself"}
			case d.Policy > FlowContinue:
				return nil, 0, &FlowError{Node: i, Reason: "not a FlowPolicy"}
			case mark[d.Node] == int32(i+1):
				return nil, 0, &FlowError{Node: i, Reason: fmt.Sprintf("depends on node %d twice", d.Node)}
			}
			mark[d.Node] = int32(i + 1)
			indeg[i]++
			at[d.Node+1]++
			local++
		}
	}
	for x := range nodes {
		at[x+1] += at[x]
	}
	kids := make([]int32, local)
	next := mark // reused: the next free place of each node's dependents
	copy(next, at[:len(nodes)])
	for i, nd := range nodes {
		for _, d := range nd.Deps {
			if d.Queue == nil {
				kids[next[d.Node]] = int32(i)
				next[d.Node]++
			}
		}
	}
	ready := make([]int, 0, len(nodes))
	for i, d := range indeg {
		if d == 0 {
			ready = append(ready, i)
		}
	}
	for h := 0; h < len(ready); h++ {
		x := ready[h]
		for _, k := range kids[at[x]:at[x+1]] {
			if indeg[k]--; indeg[k] == 0 {
				ready = append(ready, int(k))
			}
		}
	}
	if len(ready) < len(nodes) {
		for i, d := range indeg {
			if d > 0 {
				return nil, 0, &FlowError{Node: i, Reason: fmt.Sprintf("on or behind a cycle (%d nodes are)", len(nodes)-len(ready))}
			}
		}
	}
	return ready, edges, nil
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

// flowCall runs flow_complete in mode 'a' or 'x' over every page of
// the flow's jobs.
func (q *Queue) flowCall(ctx context.Context, id, mode, errText string) (FlowInfo, error) {
	if err := checkID(id); err != nil {
		return FlowInfo{}, err
	}
	fi := FlowInfo{ID: id}
	cancelled := 0
	for off := 0; off == 0 || off < fi.Total; off += flowPage {
		found, err := q.flowPage(ctx, &fi, mode, errText, off)
		if err != nil {
			return FlowInfo{}, err
		}
		if !found {
			return FlowInfo{}, ErrNoFlow
		}
		cancelled += fi.Cancelled
	}
	fi.Cancelled = cancelled
	return fi, nil
}

// flowPage runs one flow_complete 'a' or 'x' call over the jobs from
// off, appending them to fi and setting its counts.
func (q *Queue) flowPage(ctx context.Context, fi *FlowInfo, mode, errText string, off int) (bool, error) {
	a := q.flowArgs()
	a.Arg(mode)
	a.Arg(fi.ID)
	if mode == "x" {
		a.Arg(errText)
	}
	a.ArgInt(int64(off))
	a.ArgInt(flowPage)
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
		return false, wrapErr("flow_complete", err)
	}
	return found, nil
}

// flowArgs starts flow_complete's arguments: its five keys.
func (q *Queue) flowArgs() *dispatch.Args {
	a := new(dispatch.Args)
	q.flowKeys(a)
	return a
}

// flowArgsPool holds the arguments of the settle and claim calls
// (FlowComplete, FlowCompleteBatch, FlowCompleteClaim, FlowRetry), which a
// consumer makes per job or batch: an Args reused keeps its memory, so
// a call encodes its jobs without growing a new buffer each time. The
// executors copy the arguments into the command before Eval returns.
var flowArgsPool = sync.Pool{New: func() any { return new(dispatch.Args) }}

// flowArgsPooled bounds the size of an Args put back in flowArgsPool.
const flowArgsPooled = 64 << 10

// pooledFlowArgs is flowArgs from flowArgsPool; give it back with
// putFlowArgs once its call returned.
func (q *Queue) pooledFlowArgs() *dispatch.Args {
	a := flowArgsPool.Get().(*dispatch.Args)
	a.Reset()
	q.flowKeys(a)
	return a
}

// putFlowArgs gives a back to flowArgsPool unless it grew large.
func putFlowArgs(a *dispatch.Args) {
	if a.Size() <= flowArgsPooled {
		flowArgsPool.Put(a)
	}
}

// flowKeys adds flow_complete's five keys to a.
func (q *Queue) flowKeys(a *dispatch.Args) {
	a.Key(q.keys.Active)
	a.Key(q.keys.Pending)
	a.Key(q.keys.Delayed)
	a.Key(q.keys.Dead)
	a.Key(q.keys.Base)
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
	a := q.pooledFlowArgs()
	a.Arg("c")
	a.Arg(id)
	a.ArgInt(token)
	a.ArgInt(ms)
	a.ArgBytes(result)
	n, err := q.settleCall(ctx, a)
	putFlowArgs(a)
	switch {
	case err != nil:
		return err
	case n == 3: // completed, steps left: run them now
		_, err := q.runSteps(ctx)
		return err
	case n != 1:
		return ErrStale
	}
	return nil
}

// FlowResult is one job for [Queue.FlowCompleteBatch]: its id, the token
// of its lease and its result.
type FlowResult struct {
	ID     string
	Token  int64
	Result []byte
}

// FlowCompleteBatch completes up to 1,000 claimed jobs as
// [Queue.FlowComplete] does, in one call (then in bounded steps for what
// their ends release), and reports for each whether it completed (false:
// its token no longer held the lease, nothing written for it). With
// retention 0 the ends are not published on emq:{q}:done:<id> (no row is
// kept to wait on, as with settle_claim).
func (q *Queue) FlowCompleteBatch(ctx context.Context, jobs []FlowResult, retention time.Duration) ([]bool, error) {
	if len(jobs) == 0 || len(jobs) > 1000 {
		return nil, &ArgError{Arg: "jobs", Reason: fmt.Sprintf("%d jobs, want 1 to 1000", len(jobs))}
	}
	for _, j := range jobs {
		if err := checkID(j.ID); err != nil {
			return nil, err
		}
	}
	ms, err := millis("retention", retention, false)
	if err != nil {
		return nil, err
	}
	a := q.pooledFlowArgs()
	defer putFlowArgs(a)
	a.Arg("C")
	a.ArgInt(ms)
	for _, j := range jobs {
		a.Arg(j.ID)
		a.ArgInt(j.Token)
		a.ArgBytes(j.Result)
	}
	ok := make([]bool, len(jobs))
	steps := int64(0)
	err = q.reaper.Eval(ctx, scriptFlowComplete, a, func(v resp.Value) error {
		if v.Type != resp.Array || len(v.Elems) != len(jobs)+1 {
			return badReply("flow_complete", v, "{flag, ..., steps}")
		}
		for i := range jobs {
			n, err := v.Elems[i].AsInt()
			if err != nil {
				return badReply("flow_complete", v, "{flag, ..., steps}")
			}
			ok[i] = n == 1
		}
		steps, _ = v.Elems[len(jobs)].AsInt()
		return nil
	})
	if err != nil {
		return nil, wrapErr("flow_complete", err)
	}
	if steps > 0 {
		if _, err := q.runSteps(ctx); err != nil {
			return ok, err
		}
	}
	return ok, nil
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
	a := q.pooledFlowArgs()
	a.Arg("r")
	a.Arg(id)
	a.ArgInt(token)
	a.ArgInt(ms)
	a.ArgInt(scriptInt(maxAttempts))
	a.Arg(errText)
	n, err := q.settleCall(ctx, a)
	putFlowArgs(a)
	if err != nil {
		return 0, err
	}
	if n == 4 { // dead, steps left: run them now
		n = 2
		if _, err := q.runSteps(ctx); err != nil {
			return RetryDead, err
		}
	}
	// flow_complete 'r' answers as retry: 2 dead, 1 retried, 0 stale.
	if out := [...]RetryOutcome{0, RetryRequeued, RetryDead}[min(max(n, 0), 2)]; out == RetryRequeued && ms > 0 {
		return RetryDelayed, nil
	} else if out != 0 {
		return out, nil
	}
	return 0, ErrStale
}

// FlowCompleteClaim is the worker's exchange for flow jobs: it completes
// done (0 to 1,000 claimed jobs) as [Queue.FlowCompleteBatch] does, then
// claims up to n (0 to 1,000) pending jobs for lease as [Queue.ClaimBatch]
// does, in one atomic call (flow_complete 'S'), so the dependents the
// completions release are claimable in it: after the pending jobs, the
// claim takes them straight from parked to active (they are never
// written pending), and the call releases about what it can claim.
// ok[i] reports whether done[i]
// completed (false: its token no longer held the lease). Steps left by
// a large fan-out are drained by the next call (every call drains some);
// when the claim found nothing and steps are left, FlowCompleteClaim
// runs them before it returns.
func (q *Queue) FlowCompleteClaim(ctx context.Context, done []FlowResult, retention, lease time.Duration, n int) (ok []bool, jobs []Job, err error) {
	if len(done) > 1000 {
		return nil, nil, &ArgError{Arg: "done", Reason: fmt.Sprintf("%d jobs, want 0 to 1000", len(done))}
	}
	if n < 0 || n > 1000 {
		return nil, nil, &ArgError{Arg: "n", Reason: fmt.Sprintf("%d, want 0 to 1000", n)}
	}
	for _, j := range done {
		if err := checkID(j.ID); err != nil {
			return nil, nil, err
		}
	}
	ms, err := millis("retention", retention, false)
	if err != nil {
		return nil, nil, err
	}
	lms, err := leaseMillis(lease)
	if err != nil {
		return nil, nil, err
	}
	a := q.pooledFlowArgs()
	defer putFlowArgs(a)
	a.Arg("S")
	a.ArgInt(ms)
	a.ArgInt(lms)
	a.ArgInt(int64(n))
	for _, j := range done {
		a.Arg(j.ID)
		a.ArgInt(j.Token)
		a.ArgBytes(j.Result)
	}
	ok = make([]bool, len(done))
	steps := int64(0)
	err = q.reaper.Eval(ctx, scriptFlowComplete, a, func(v resp.Value) error {
		const want = "{flag, ..., steps, id, payload, attempts, ...}"
		if v.Type != resp.Array || len(v.Elems) < len(done)+1 {
			return badReply("flow_complete", v, want)
		}
		for i := range done {
			f, err := v.Elems[i].AsInt()
			if err != nil {
				return badReply("flow_complete", v, want)
			}
			ok[i] = f == 1
		}
		var err error
		if steps, err = v.Elems[len(done)].AsInt(); err != nil {
			return badReply("flow_complete", v, want)
		}
		rest := v
		rest.Elems = v.Elems[len(done)+1:]
		jobs, err = appendJobs(make([]Job, 0, len(rest.Elems)/3), "flow_complete", rest)
		return err
	})
	if err != nil {
		return nil, nil, wrapErr("flow_complete", err)
	}
	if steps > 0 && len(jobs) == 0 {
		if _, err := q.runSteps(ctx); err != nil {
			return ok, nil, err
		}
	}
	return ok, jobs, nil
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
