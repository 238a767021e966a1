package emq

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

// flowRun claims and completes every claimable job with FlowComplete,
// each one's result "r:" + its payload, until nothing is claimable, and
// returns the payloads in completion order. check runs before each
// completion.
func flowRun(t *testing.T, q *Queue, check func(Job)) []string {
	t.Helper()
	ctx := tctx(t)
	var order []string
	for {
		j, ok, err := q.Claim(ctx, time.Minute)
		require.NoError(t, err)
		if !ok {
			return order
		}
		if check != nil {
			check(j)
		}
		require.NoError(t, q.FlowComplete(ctx, j.ID, j.Token, append([]byte("r:"), j.Payload...), time.Hour))
		order = append(order, string(j.Payload))
	}
}

// TestFlowDiamond: A → B, C → D runs in dependency order, D reading the
// results of B and C, and the flow ends done; every id is in exactly one
// set (or completed) all along.
func TestFlowDiamond(t *testing.T) {
	q := fresh(t, "flows")
	ctx := tctx(t)
	f, ids, err := q.SubmitFlow(ctx, []FlowNode{
		{Payload: []byte("A")},
		{Payload: []byte("B"), Deps: []FlowDep{{Node: 0}}},
		{Payload: []byte("C"), Deps: []FlowDep{{Node: 0}}},
		{Payload: []byte("D"), Deps: []FlowDep{{Node: 1}, {Node: 2}}},
	})
	require.NoError(t, err)
	for _, id := range ids[1:] {
		require.Equal(t, []State{StateDelayed}, where(t, q, id), "waiting, parked")
	}
	fi, err := q.Flow(ctx, f)
	require.NoError(t, err)
	require.Equal(t, FlowRunning, fi.State)
	require.Equal(t, 4, fi.Left)
	done := map[string]bool{}
	order := flowRun(t, q, func(j Job) {
		switch string(j.Payload) {
		case "B", "C":
			require.True(t, done["A"])
		case "D":
			require.True(t, done["B"] && done["C"])
			for _, p := range ids[1:3] {
				r := do(t, "GET", q.keys.Base+"result:"+p)
				require.True(t, r == "r:B" || r == "r:C", r)
			}
		}
		for _, id := range ids {
			if s := where(t, q, id); len(s) != 1 && row(t, q, id)["state"] != "completed" {
				t.Fatalf("%s in %v", id, s)
			}
		}
		done[string(j.Payload)] = true
	})
	require.Len(t, order, 4)
	require.Equal(t, "A", order[0])
	require.Equal(t, "D", order[3])
	fi, err = q.Flow(ctx, f)
	require.NoError(t, err)
	require.Equal(t, FlowDone, fi.State)
	require.Equal(t, 0, fi.Left)
	require.Len(t, fi.Jobs, 4)
	for i, j := range fi.Jobs {
		require.Equal(t, ids[i], j.ID)
		require.Equal(t, StateCompleted, j.State)
	}
	_, err = q.Flow(ctx, q.ids.Next())
	require.ErrorIs(t, err, ErrNoFlow)
}

// TestFlowRefused: cycles, self-dependencies, unknown nodes, duplicate
// dependencies and graphs over the bounds are typed errors with nothing
// written, host-side and, for a cycle sent raw, by the script.
func TestFlowRefused(t *testing.T) {
	q := fresh(t, "refuse")
	ctx := tctx(t)
	before := do(t, "DBSIZE")
	huge := make([]FlowNode, 1000000) // a million nodes
	chain := make([]FlowNode, 200)
	for i := 1; i < len(chain); i++ {
		chain[i].Deps = []FlowDep{{Node: i - 1}}
	}
	chain[0].Deps = []FlowDep{{Node: len(chain) - 1}} // closes a ring of 200
	wide := make([]FlowNode, 2501)                    // 2000 nodes of 501 dependencies: > MaxFlowDeps
	for i := 501; i < len(wide); i++ {
		wide[i].Deps = make([]FlowDep, 501)
		for j := range wide[i].Deps {
			wide[i].Deps[j].Node = j
		}
	}
	for name, nodes := range map[string][]FlowNode{
		"cycle":    {{Deps: []FlowDep{{Node: 1}}}, {Deps: []FlowDep{{Node: 0}}}, {}},
		"ring":     chain,
		"self":     {{Deps: []FlowDep{{Node: 0}}}},
		"unknown":  {{Deps: []FlowDep{{Node: 5}}}},
		"negative": {{}, {Deps: []FlowDep{{Node: -1}}}},
		"twice":    {{}, {Deps: []FlowDep{{Node: 0}, {Node: 0}}}},
		"policy":   {{}, {Deps: []FlowDep{{Node: 0, Policy: 7}}}},
		"empty":    nil,
		"huge":     huge,
		"deps":     wide,
	} {
		_, _, err := q.SubmitFlow(ctx, nodes)
		require.ErrorIs(t, err, ErrFlow, name)
	}
	// The script's own check, sent raw: a cycle 1 → 2 → 1.
	ids := []string{q.ids.Next(), q.ids.Next(), q.ids.Next()}
	raw := func(argv ...string) error {
		var a dispatch.Args
		a.Key(q.keys.Pending)
		a.Key(q.keys.Delayed)
		a.Key(q.keys.Base)
		for _, s := range argv {
			a.Arg(s)
		}
		return wrapErr("flow_submit", q.reaper.Eval(ctx, scriptFlowSubmit, &a, func(resp.Value) error { return nil }))
	}
	err := raw(q.ids.Next(), "3", ids[0], "a", "1", "2", "f", ids[1], "b", "1", "1", "f", ids[2], "c", "0")
	require.ErrorContains(t, err, "EMQFLOW cycle")
	require.ErrorContains(t, raw(q.ids.Next(), "1", ids[0], "a", "1", "1", "f"), "EMQARG")         // self
	require.ErrorContains(t, raw(q.ids.Next(), "1", ids[0], "a", "1", "2", "f"), "EMQARG")         // unknown
	require.ErrorContains(t, raw(q.ids.Next(), "2", ids[0], "a", "0", ids[0], "b", "0"), "EMQARG") // same id
	require.ErrorContains(t, raw(q.ids.Next(), "1001"), "EMQARG")
	require.Equal(t, before, do(t, "DBSIZE"), "nothing written")
	// A node naming an existing job: refused whole.
	existing, err := q.Enqueue(ctx, []byte("x"))
	require.NoError(t, err)
	err = raw(q.ids.Next(), "2", ids[0], "a", "0", existing, "b", "1", "1", "f")
	require.ErrorContains(t, err, "EMQFLOW exists")
	require.Equal(t, []State{StatePending}, where(t, q, existing))
	require.Empty(t, where(t, q, ids[0]))
}

// TestFlowPolicies: P1 fails, P2 completes. F (fail on P1) ends dead with
// the cause, and so does its own dependent G; C (continue on P1) runs at
// once, before P2 completes; I (ignore P1) waits for P2, then runs. The
// flow ends failed.
func TestFlowPolicies(t *testing.T) {
	q := fresh(t, "policies")
	ctx := tctx(t)
	f, ids, err := q.SubmitFlow(ctx, []FlowNode{
		{Payload: []byte("P1")},
		{Payload: []byte("P2")},
		{Payload: []byte("F"), Deps: []FlowDep{{Node: 0, Policy: FlowFail}, {Node: 1}}},
		{Payload: []byte("I"), Deps: []FlowDep{{Node: 0, Policy: FlowIgnore}, {Node: 1}}},
		{Payload: []byte("C"), Deps: []FlowDep{{Node: 0, Policy: FlowContinue}, {Node: 1}}},
		{Payload: []byte("G"), Deps: []FlowDep{{Node: 2}}},
	})
	require.NoError(t, err)
	p1 := claimID(t, q, ids[0])
	out, err := q.FlowRetry(ctx, p1.ID, p1.Token, 0, 1, "boom")
	require.NoError(t, err)
	require.Equal(t, RetryDead, out)
	require.Equal(t, []State{StateDead}, where(t, q, ids[2]))
	require.Contains(t, row(t, q, ids[2])["error"], "dependency "+ids[0]+" failed: boom")
	require.Equal(t, []State{StateDead}, where(t, q, ids[5]), "the failure cascades")
	require.Equal(t, []State{StatePending}, where(t, q, ids[4]), "continue: at once")
	require.Equal(t, []State{StateDelayed}, where(t, q, ids[3]), "ignore: waits for P2")
	fi, err := q.Flow(ctx, f)
	require.NoError(t, err)
	require.Equal(t, FlowRunning, fi.State)
	require.Equal(t, 3, fi.Failed)
	order := flowRun(t, q, nil)
	require.Contains(t, order, "P2")
	require.Contains(t, order, "I")
	require.Less(t, slices.Index(order, "P2"), slices.Index(order, "I"))
	fi, err = q.Flow(ctx, f)
	require.NoError(t, err)
	require.Equal(t, FlowFailed, fi.State)
	require.Equal(t, 0, fi.Left)
	require.Equal(t, 3, fi.Failed)
}

// TestFlowCancel: cancelling a flow ends dead what has not run; the
// running job runs on and its completion releases nothing.
func TestFlowCancel(t *testing.T) {
	q := fresh(t, "cancel")
	ctx := tctx(t)
	f, ids, err := q.SubmitFlow(ctx, []FlowNode{
		{Payload: []byte("A")},
		{Payload: []byte("B"), Deps: []FlowDep{{Node: 0, Policy: FlowIgnore}}},
		{Payload: []byte("C"), Deps: []FlowDep{{Node: 1}}},
		{Payload: []byte("X")},
	})
	require.NoError(t, err)
	a := claimID(t, q, ids[0])
	fi, err := q.CancelFlow(ctx, f)
	require.NoError(t, err)
	require.Equal(t, 3, fi.Cancelled)
	for _, id := range ids[1:] {
		require.Equal(t, []State{StateDead}, where(t, q, id))
	}
	require.Equal(t, []State{StateActive}, where(t, q, ids[0]))
	require.NoError(t, q.FlowComplete(ctx, a.ID, a.Token, nil, time.Hour))
	fi, err = q.Flow(ctx, f)
	require.NoError(t, err)
	require.Equal(t, FlowFailed, fi.State)
	require.Equal(t, 0, fi.Left)
	st, err := q.Stats(ctx)
	require.NoError(t, err)
	require.Zero(t, st.Pending+st.Delayed+st.Active)
}

// TestFlowPeerCoreComplete: a flow job completed by a peer's core complete
// (row kept, or deleted with retention 0) leaves its dependent parked
// until the next touch of the flow, which releases it.
func TestFlowPeerCoreComplete(t *testing.T) {
	for _, keep := range []time.Duration{0, time.Hour} {
		t.Run(keep.String(), func(t *testing.T) {
			q := fresh(t, "peerflow")
			ctx := tctx(t)
			f, ids, err := q.SubmitFlow(ctx, []FlowNode{
				{Payload: []byte("A")},
				{Payload: []byte("B"), Deps: []FlowDep{{Node: 0}}},
			})
			require.NoError(t, err)
			a := claimID(t, q, ids[0])
			require.NoError(t, q.Complete(ctx, a.ID, a.Token, keep)) // the peer's core script
			require.Equal(t, []State{StateDelayed}, where(t, q, ids[1]))
			fi, err := q.Flow(ctx, f)
			require.NoError(t, err)
			require.Equal(t, 1, fi.Left)
			require.Equal(t, []State{StatePending}, where(t, q, ids[1]), "repaired")
			require.Equal(t, []string{"B"}, flowRun(t, q, nil))
			fi, err = q.Flow(ctx, f)
			require.NoError(t, err)
			require.Equal(t, FlowDone, fi.State)
		})
	}
}

// TestFlowConcurrent: a layered DAG of 300 jobs (15 layers of 20, each
// job depending on 3 of the next layer's, listed first so that their ids
// sort before their dependencies') run by 4 consumers: no job starts
// before all of its dependencies completed; the flow ends done.
func TestFlowConcurrent(t *testing.T) {
	q := fresh(t, "layers")
	ctx := tctx(t)
	var nodes []FlowNode
	for i := range 300 {
		nd := FlowNode{Payload: []byte(strconv.Itoa(i))}
		if i < 280 { // dependents before their dependencies: lower ids
			for d := 1; d <= 3; d++ {
				nd.Deps = append(nd.Deps, FlowDep{Node: (i/20+1)*20 + (i+d*7)%20})
			}
		}
		nodes = append(nodes, nd)
	}
	f, _, err := q.SubmitFlow(ctx, nodes)
	require.NoError(t, err)
	var mu sync.Mutex
	done := make([]bool, len(nodes))
	var wg sync.WaitGroup
	var prog progress // a completion releases dependents
	errs := make(chan string, 4*len(nodes))
	for range 4 {
		c := openPeer(t, "layers")
		wg.Go(func() {
			for {
				n, changed := prog.now()
				if n == len(nodes) {
					return
				}
				j, ok, err := c.Claim(context.Background(), time.Minute)
				if err != nil {
					errs <- err.Error()
					return
				}
				if !ok {
					// Nothing claimable until another consumer completes.
					if !prog.wait(changed) {
						errs <- "no completion for " + hangGuard.String()
						return
					}
					continue
				}
				i, _ := strconv.Atoi(string(j.Payload))
				mu.Lock()
				for _, d := range nodes[i].Deps {
					if !done[d.Node] {
						errs <- "job " + string(j.Payload) + " started before " + strconv.Itoa(d.Node)
						break
					}
				}
				mu.Unlock()
				// done is set before the completion that releases dependents.
				mu.Lock()
				done[i] = true
				mu.Unlock()
				if err := c.FlowComplete(context.Background(), j.ID, j.Token, nil, 0); err != nil {
					errs <- err.Error()
					return
				}
				prog.mark()
			}
		})
	}
	wg.Wait()
	close(errs)
	var all []string
	for e := range errs {
		all = append(all, e)
	}
	require.Empty(t, all, strings.Join(all, "\n"))
	fi, err := q.Flow(ctx, f)
	require.NoError(t, err)
	require.Equal(t, FlowDone, fi.State)
}

// TestFlowCompleteStale: FlowComplete and FlowRetry under a token that no
// longer holds the lease are ErrStale and write nothing, and malformed
// arguments are EMQARG.
func TestFlowCompleteStale(t *testing.T) {
	q := fresh(t, "stale")
	ctx := tctx(t)
	_, ids, err := q.SubmitFlow(ctx, []FlowNode{{Payload: []byte("A")}, {Payload: []byte("B"), Deps: []FlowDep{{Node: 0}}}})
	require.NoError(t, err)
	a := claimID(t, q, ids[0])
	require.ErrorIs(t, q.FlowComplete(ctx, a.ID, a.Token+1, nil, time.Hour), ErrStale)
	_, err = q.FlowRetry(ctx, a.ID, a.Token-1, 0, 1, "x")
	require.ErrorIs(t, err, ErrStale)
	require.Equal(t, []State{StateActive}, where(t, q, ids[0]))
	require.Equal(t, []State{StateDelayed}, where(t, q, ids[1]))
	require.ErrorIs(t, q.FlowComplete(ctx, a.ID, a.Token, nil, -time.Second), ErrArg)
	for _, argv := range [][]string{{"c", a.ID, "1", "-5", ""}, {"r", a.ID, "1", "0", "x", "e"}, {"z"}, {"c", a.ID}} {
		a := q.flowArgs()
		for _, s := range argv {
			a.Arg(s)
		}
		_, err := q.settleCall(ctx, a)
		require.ErrorIs(t, err, ErrArg, "%v", argv)
	}
	require.Equal(t, []State{StateActive}, where(t, q, ids[0]))
	require.NoError(t, q.FlowComplete(ctx, a.ID, a.Token, []byte("ok"), time.Hour))
	require.Equal(t, []State{StatePending}, where(t, q, ids[1]))
}

// TestFlowFanOutFanIn: one job fanning out to 10,000 and back in to one
// (a staged flow: 10,002 nodes, 20,000 dependencies) runs to done, the
// fan-in last, after every child; the longest command is logged from
// SLOWLOG (the bound is structural: every call drains at most 500 steps;
// wall time is not asserted on a shared machine).
func TestFlowFanOutFanIn(t *testing.T) {
	q := fresh(t, "fan")
	ctx := tctx(t)
	const kids = 10000
	nodes := make([]FlowNode, kids+2)
	last := &nodes[kids+1]
	for i := 1; i <= kids; i++ {
		nodes[i].Deps = []FlowDep{{Node: 0}}
		last.Deps = append(last.Deps, FlowDep{Node: i})
	}
	// Every command of 1 ms or more is logged.
	do(t, "CONFIG", "SET", "slowlog-log-slower-than", "1000", "slowlog-max-len", "10000")
	do(t, "SLOWLOG", "RESET")
	t.Cleanup(func() { do(t, "CONFIG", "SET", "slowlog-log-slower-than", "10000", "slowlog-max-len", "128") })
	f, ids, err := q.SubmitFlow(ctx, nodes)
	require.NoError(t, err)
	fi, err := q.Flow(ctx, f)
	require.NoError(t, err)
	require.Equal(t, FlowRunning, fi.State)
	require.Len(t, fi.Jobs, kids+2)
	require.Equal(t, []State{StatePending}, where(t, q, ids[0]), "the root alone runs")
	require.Equal(t, "1", do(t, "ZCARD", q.keys.Pending))
	var seen int
	order := flowRunBatch(t, q, func(j Job) {
		if j.ID == ids[kids+1] {
			require.Equal(t, kids+1, seen, "the fan-in after every child")
		}
		seen++
	})
	require.Len(t, order, kids+2)
	fi, err = q.Flow(ctx, f)
	require.NoError(t, err)
	require.Equal(t, FlowDone, fi.State)
	require.Equal(t, StateCompleted, fi.Jobs[len(ids)-1].State)
	require.Equal(t, "0", do(t, "EXISTS", q.keys.Base+"flowstep"))
	worst, what, n := slowest(t, q)
	t.Logf("SLOWLOG: %d commands of 1 ms or more; the longest %d µs: %s", n, worst, what)
}

// flowRunBatch is flowRun through LaneClaim batches of 100 and
// FlowCompleteBatch.
func flowRunBatch(t *testing.T, q *Queue, check func(Job)) []string {
	t.Helper()
	ctx := tctx(t)
	var order []string
	for {
		js, err := q.LaneClaim(ctx, time.Minute, 100)
		require.NoError(t, err)
		if len(js) == 0 {
			return order
		}
		rs := make([]FlowResult, len(js))
		for i, j := range js {
			if check != nil {
				check(j)
			}
			rs[i] = FlowResult{ID: j.ID, Token: j.Token, Result: append([]byte("r:"), j.Payload...)}
			order = append(order, string(j.Payload))
		}
		ok, err := q.FlowCompleteBatch(ctx, rs, time.Hour)
		require.NoError(t, err)
		require.NotContains(t, ok, false)
	}
}

// slowest reads SLOWLOG: the longest entry's µs, its command clipped, and
// the entries logged.
func slowest(t *testing.T, q *Queue) (int64, string, int) {
	t.Helper()
	v, err := q.sender.Do(tctx(t), "SLOWLOG", "GET", "-1")
	require.NoError(t, err)
	var worst int64
	what := ""
	for _, e := range v.Elems {
		if len(e.Elems) > 3 {
			if us, err := e.Elems[2].AsInt(); err == nil && us > worst {
				worst, what = us, e.Elems[3].String()
			}
		}
	}
	if len(what) > 80 {
		what = what[:80]
	}
	return worst, what, len(v.Elems)
}

// TestFlowTrimmedDead: a flow job ended dead by a peer's core retry and
// trimmed (trim_dead) before the flow is next touched counts as failed,
// not completed: its dependent under FlowFail ends dead with the cause,
// the one under FlowIgnore runs, and the flow ends failed. (Before
// trim_dead's tombstone, the gone row counted as completed and both ran.)
func TestFlowTrimmedDead(t *testing.T) {
	q := fresh(t, "trimflow")
	ctx := tctx(t)
	f, ids, err := q.SubmitFlow(ctx, []FlowNode{
		{Payload: []byte("A")},
		{Payload: []byte("F"), Deps: []FlowDep{{Node: 0}}},
		{Payload: []byte("I"), Deps: []FlowDep{{Node: 0, Policy: FlowIgnore}}},
	})
	require.NoError(t, err)
	a := claimID(t, q, ids[0])
	out, err := q.Retry(ctx, a.ID, a.Token, 0, 1, "boom") // the peer's core script
	require.NoError(t, err)
	require.Equal(t, RetryDead, out)
	n, err := q.TrimDead(ctx, 0, -1)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Empty(t, where(t, q, ids[0]), "trimmed")
	fi, err := q.Flow(ctx, f)
	require.NoError(t, err)
	require.Equal(t, []State{StateDead}, where(t, q, ids[1]))
	require.Contains(t, row(t, q, ids[1])["error"], "dependency "+ids[0]+" failed: boom")
	require.Equal(t, []State{StatePending}, where(t, q, ids[2]))
	require.Equal(t, 1, fi.Left)
	require.Equal(t, []string{"I"}, flowRun(t, q, nil))
	fi, err = q.Flow(ctx, f)
	require.NoError(t, err)
	require.Equal(t, FlowFailed, fi.State)
	require.Equal(t, "0", do(t, "HLEN", q.keys.Base+"flowgone"), "the tombstone is dropped once seen")
}

// TestFlowStaged: a flow too large for one call (2,000 nodes, a chain of
// fan-outs whose fan-in node has 1,999 dependencies, split over parts)
// runs nothing until sealed, then in dependency order through
// single-job settles; Flow reads every page.
func TestFlowStaged(t *testing.T) {
	q := fresh(t, "staged")
	ctx := tctx(t)
	const n = 2000
	nodes := make([]FlowNode, n)
	// listed backwards: node i depends on i+1 (a chain) and the root is
	// last, so the topological order is not the slice's
	for i := 0; i < n-1; i++ {
		nodes[i].Payload = []byte(strconv.Itoa(i))
		nodes[i].Deps = []FlowDep{{Node: n - 1}}
	}
	nodes[n-1].Payload = []byte("root")
	fanIn := FlowNode{Payload: []byte("in")}
	for i := 0; i < n-1; i++ {
		fanIn.Deps = append(fanIn.Deps, FlowDep{Node: i, Policy: FlowIgnore})
	}
	nodes = append(nodes, fanIn)
	f, ids, err := q.SubmitFlow(ctx, nodes)
	require.NoError(t, err)
	require.Equal(t, "1", do(t, "ZCARD", q.keys.Pending), "the root alone")
	require.Equal(t, []State{StatePending}, where(t, q, ids[n-1]))
	done := map[string]bool{}
	order := flowRun(t, q, func(j Job) {
		if j.ID == ids[n] {
			require.Len(t, done, n, "the fan-in last")
		} else if j.ID != ids[n-1] {
			require.True(t, done[ids[n-1]], "a child after the root")
		}
		done[j.ID] = true
	})
	require.Len(t, order, n+1)
	fi, err := q.Flow(ctx, f)
	require.NoError(t, err)
	require.Equal(t, FlowDone, fi.State)
	require.Len(t, fi.Jobs, n+1)
	require.Equal(t, n+1, fi.Total)
}

// progress counts the completions of consumers that wait for each other:
// a consumer that found nothing to claim waits for the next completion
// (which may release what it waits for) rather than polling.
type progress struct {
	mu      sync.Mutex
	n       int
	changed chan struct{} // closed at the next mark
}

// now returns the completions so far and a channel closed at the next.
func (p *progress) now() (int, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.changed == nil {
		p.changed = make(chan struct{})
	}
	return p.n, p.changed
}

// mark counts one completion and wakes the waiters.
func (p *progress) mark() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if p.changed != nil {
		close(p.changed)
	}
	p.changed = make(chan struct{})
}

// wait waits for changed (from now) to close; false after hangGuard.
func (p *progress) wait(changed <-chan struct{}) bool {
	t := time.NewTimer(hangGuard)
	defer t.Stop()
	select {
	case <-changed:
		return true
	case <-t.C:
		return false
	}
}
