package emq

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/internal/servertest"
)

// innerCalls is the server's command count (INFO commandstats, the
// commands scripts ran included) without the script calls themselves and
// the test's own reads.
func innerCalls(t *testing.T) int {
	t.Helper()
	n := 0
	for _, l := range strings.Split(do(t, "INFO", "commandstats"), "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		switch strings.TrimPrefix(name, "cmdstat_") {
		case "evalsha", "eval", "info", "config|resetstat", "script|load", "hello", "get", "set", "client|setinfo", "client|setname", "command|info":
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		c, err := strconv.Atoi(calls)
		require.NoError(t, err, l)
		n += c
	}
	return n
}

// fanOutIn is a flow of a root, n-2 children of it and a fan-in on them.
func fanOutIn(n int) []FlowNode {
	nodes := make([]FlowNode, n)
	for i := range nodes {
		nodes[i].Payload = []byte(strconv.Itoa(i))
		if i > 0 && i < n-1 {
			nodes[i].Deps = []FlowDep{{Node: 0}}
			nodes[n-1].Deps = append(nodes[n-1].Deps, FlowDep{Node: i})
		}
	}
	return nodes
}

// TestFlowCallsPerJob bounds the server commands a flow job costs, from
// its submission to its completion, through the batched calls
// (ClaimBatch and FlowCompleteBatch of 100): the scripts read and write
// what a batch needs in a few calls for all of it, so a job costs about
// what a plain job does (about 4) plus its release. The per-job reads of
// the dependents' lists and policies, the per-dependency writes of the
// submission and the fan-in's counter moved once per completion cost 48
// a job before.
func TestFlowCallsPerJob(t *testing.T) {
	q := fresh(t, "flowcalls")
	ctx := tctx(t)
	const n = 2000
	do(t, "CONFIG", "RESETSTAT")
	f, ids, err := q.SubmitFlow(ctx, fanOutIn(n))
	require.NoError(t, err)
	done := 0
	for {
		js, err := q.ClaimBatch(ctx, time.Minute, 100)
		require.NoError(t, err)
		if len(js) == 0 {
			break
		}
		rs := make([]FlowResult, len(js))
		for i, j := range js {
			rs[i] = FlowResult{ID: j.ID, Token: j.Token}
		}
		ok, err := q.FlowCompleteBatch(ctx, rs, 0)
		require.NoError(t, err)
		require.NotContains(t, ok, false)
		done += len(js)
	}
	calls := innerCalls(t)
	require.Equal(t, n, done)
	fi, err := q.Flow(ctx, f)
	require.NoError(t, err)
	require.Equal(t, FlowDone, fi.State)
	require.Equal(t, []State{}, append([]State{}, where(t, q, ids[n-1])...), "the fan-in's row is gone")
	t.Logf("%d server commands for %d flow jobs: %.2f a job", calls, n, float64(calls)/n)
	require.LessOrEqual(t, float64(calls)/n, 9.0, "server commands per flow job")
}

// TestFlowCompleteClaim runs a flow through FlowCompleteClaim alone: the
// dependents a completion releases are claimed in the same call, a stale
// token is flagged and writes nothing, a paused queue settles but claims
// nothing.
func TestFlowCompleteClaim(t *testing.T) {
	q := fresh(t, "flowexchange")
	ctx := tctx(t)
	// a root with 3 children (inline dependents) and a join on two of
	// them (a counted dependency), then a fan-out of 20 of the join
	// (listed dependents)
	nodes := []FlowNode{{Payload: []byte("root")}}
	for i := 1; i <= 3; i++ {
		nodes = append(nodes, FlowNode{Payload: []byte("c" + strconv.Itoa(i)), Deps: []FlowDep{{Node: 0}}})
	}
	nodes = append(nodes, FlowNode{Payload: []byte("join"), Deps: []FlowDep{{Node: 1}, {Node: 2, Policy: FlowIgnore}}})
	for i := range 20 {
		nodes = append(nodes, FlowNode{Payload: []byte("x" + strconv.Itoa(i)), Deps: []FlowDep{{Node: 4}}})
	}
	f, ids, err := q.SubmitFlow(ctx, nodes)
	require.NoError(t, err)

	_, js, err := q.FlowCompleteClaim(ctx, nil, 0, time.Minute, 10)
	require.NoError(t, err)
	require.Len(t, js, 1)
	require.Equal(t, ids[0], js[0].ID)

	ok, _, err := q.FlowCompleteClaim(ctx, []FlowResult{{ID: ids[0], Token: js[0].Token + 1}}, 0, time.Minute, 0)
	require.NoError(t, err)
	require.Equal(t, []bool{false}, ok, "a token that does not hold")
	require.Equal(t, []State{StateActive}, where(t, q, ids[0]))

	ok, js, err = q.FlowCompleteClaim(ctx, []FlowResult{{ID: ids[0], Token: js[0].Token}}, 0, time.Minute, 10)
	require.NoError(t, err)
	require.Equal(t, []bool{true}, ok)
	got := map[string]Job{}
	for _, j := range js {
		got[j.ID] = j
	}
	require.Len(t, got, 3, "the children, released and claimed in the same call")
	for i := 1; i <= 3; i++ {
		require.Contains(t, got, ids[i])
	}

	require.NoError(t, q.Pause(ctx))
	ok, js, err = q.FlowCompleteClaim(ctx, []FlowResult{{ID: ids[1], Token: got[ids[1]].Token}, {ID: ids[2], Token: got[ids[2]].Token}}, 0, time.Minute, 10)
	require.NoError(t, err)
	require.Equal(t, []bool{true, true}, ok)
	require.Empty(t, js, "paused: nothing claimed")
	require.Equal(t, []State{StatePending}, where(t, q, ids[4]), "the join, released by its two dependencies")
	require.NoError(t, q.Resume(ctx))

	pending := []FlowResult{{ID: ids[3], Token: got[ids[3]].Token}}
	claimed := 0
	for range 100 {
		ok, js, err := q.FlowCompleteClaim(ctx, pending, 0, time.Minute, 5)
		require.NoError(t, err)
		require.NotContains(t, ok, false)
		if len(js) == 0 {
			break
		}
		claimed += len(js)
		pending = pending[:0]
		for _, j := range js {
			pending = append(pending, FlowResult{ID: j.ID, Token: j.Token})
		}
	}
	require.Equal(t, 21, claimed, "the join, then its 20 dependents")
	fi, err := q.Flow(ctx, f)
	require.NoError(t, err)
	require.Equal(t, FlowDone, fi.State)
	require.Equal(t, "0", do(t, "HLEN", q.keys.Base+"flowwait"), "nothing waits")
	require.Equal(t, "0", do(t, "HLEN", q.keys.Base+"flowjob"), "every end resolved")

	_, _, err = q.FlowCompleteClaim(ctx, nil, 0, time.Minute, 1001)
	require.ErrorAs(t, err, new(*ArgError))
}

// TestFlowStagedPartsRefused sends staged parts by hand: a dependency
// given again in a later part (the parent's dependents inline, listed, or
// listed since), or more dependencies of a node not sent as 'N', is
// EMQARG and writes nothing.
func TestFlowStagedPartsRefused(t *testing.T) {
	q := fresh(t, "flowparts")
	ctx := tctx(t)
	f := q.ids.Next()
	part := func(first string, ents ...[]string) error {
		a := new(dispatch.Args)
		q.partArgs(a, f, first, len(ents))
		for _, e := range ents {
			for _, s := range e {
				a.Arg(s)
			}
		}
		return q.submitCall(ctx, a)
	}
	id := func() string { return q.ids.Next() }
	p, c, l := id(), id(), id()
	// part 1: p, c split ('N') on p, l with 9 dependents (listed)
	ents := [][]string{{p, "n", "p", "0"}, {c, "N", "c", "1", "1", "f"}, {l, "n", "l", "0"}}
	for i := range 9 {
		ents = append(ents, []string{id(), "n", "k" + strconv.Itoa(i), "1", "3", "f"})
	}
	require.NoError(t, part("1", ents...))
	snapshot := func() string {
		var b strings.Builder
		for _, k := range []string{"flowjob", "flowwait", "flowedge:" + f, "flowjobs:" + f, "flowkids:" + l} {
			b.WriteString(do(t, "DUMP", q.keys.Base+k) + "|")
		}
		return b.String()
	}
	before := snapshot()
	for _, bad := range [][][]string{
		{{c, "+", "", "1", p, "f"}},                            // again, p's dependents inline
		{{c, "+", "", "2", l, "f", l, "i"}},                    // twice in one entry
		{{p, "+", "", "1", l, "f"}},                            // p was sent as 'n'
		{{c, "+", "", "1", l, "f"}, {c, "+", "", "1", l, "f"}}, // twice in one part
	} {
		err := part("0", bad...)
		require.ErrorContains(t, err, "EMQARG", "%v", bad)
		require.Equal(t, before, snapshot(), "nothing written for %v", bad)
	}
	// c on l, then again once l is listed
	require.NoError(t, part("0", []string{c, "+", "", "1", l, "f"}))
	before = snapshot()
	require.ErrorContains(t, part("0", []string{c, "+", "", "1", l, "i"}), "given twice")
	require.Equal(t, before, snapshot())
	// p gains 9 dependents (its inline list moves to flowkids), then c on
	// p again is still refused
	ents = ents[:0]
	for i := range 9 {
		ents = append(ents, []string{id(), "n", "m" + strconv.Itoa(i), "1", p, "f"})
	}
	require.NoError(t, part("0", ents...))
	before = snapshot()
	require.ErrorContains(t, part("0", []string{c, "+", "", "1", p, "f"}), "given twice")
	require.Equal(t, before, snapshot())

	// sealed, the flow runs to done
	a := q.flowArgs()
	a.Arg("g")
	a.Arg(f)
	_, err := q.settleCall(ctx, a)
	require.NoError(t, err)
	_, _ = q.runSteps(ctx)
	_ = flowRunBatch(t, q, nil)
	fi, err := q.Flow(context.WithoutCancel(ctx), f)
	require.NoError(t, err)
	require.Equal(t, FlowDone, fi.State)
	require.Equal(t, 3+9+9, fi.Total)
}

// TestFlowStagedPipelined: a staged flow's parts after the first go
// several to a round trip (flowPartsPipelined), and a part refused inside
// such a pipeline (a job id taken by a row made meanwhile) aborts the
// flow: SubmitFlow returns a *FlowError and nothing of the flow is left.
func TestFlowStagedPipelined(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	ctx := tctx(t)
	c := dial(t)
	var mu sync.Mutex
	var sizes []int // flow_submit '+' calls per submission
	var take func(id string)
	wrapped := conn.SendFunc(func(ctx context.Context, cs conn.Cmds, h conn.Handler) error {
		n := 0
		for _, args := range cs.All() {
			if len(args) > 7 && strings.EqualFold(string(args[0]), "EVALSHA") && string(args[2]) == "3" && string(args[6]) == "+" {
				n++
				if n == 3 && take != nil {
					take(string(args[10])) // its first entry's id
				}
			}
		}
		if n > 0 {
			mu.Lock()
			sizes = append(sizes, n)
			mu.Unlock()
		}
		return c.Send(ctx, cs, h)
	})
	q, err := Open(ctx, wrapped, "flowpipe")
	require.NoError(t, err)
	const n = 2000 // 8 parts of children, 4 of the fan-in's dependencies
	f, _, err := q.SubmitFlow(ctx, fanOutIn(n))
	require.NoError(t, err)
	mu.Lock()
	got := append([]int(nil), sizes...)
	mu.Unlock()
	// the first part alone (sent again after the script's NOSCRIPT on a
	// fresh server), then the other 11 in two round trips
	require.GreaterOrEqual(t, len(got), 3)
	require.Equal(t, []int{8, 3}, got[len(got)-2:], "parts per round trip: %v", got)
	for _, k := range got[:len(got)-2] {
		require.Equal(t, 1, k, "parts per round trip: %v", got)
	}
	require.Len(t, flowRunBatch(t, q, nil), n)
	fi, err := q.Flow(ctx, f)
	require.NoError(t, err)
	require.Equal(t, FlowDone, fi.State)

	srv.Flush(t)
	var taken string
	take = func(id string) {
		taken = id
		do(t, "HSET", q.keys.Job(id), "state", "pending")
	}
	_, _, err = q.SubmitFlow(ctx, fanOutIn(n))
	require.ErrorIs(t, err, ErrFlow)
	require.ErrorContains(t, err, "exists")
	require.NotEmpty(t, taken)
	keys := strings.Fields(do(t, "KEYS", "*"))
	require.Equal(t, []string{q.keys.Job(taken)}, keys, "only the row made meanwhile is left")
}

// TestFlowCompleteClaimHandOff bounds the server commands of a flow run
// by FlowCompleteClaim alone (a worker's exchange): the dependents its
// completions release go straight from parked to active in its claim
// (no pending state written, no pending entry added and taken back), and
// its drain releases about what the claim takes, so that a surplus does
// not go through pending in every call. Before, every released job was
// written pending and claimed from there: 4.2 commands a job (2 HSETs),
// now 3.3 (1).
func TestFlowCompleteClaimHandOff(t *testing.T) {
	q := fresh(t, "flowhandoff")
	ctx := tctx(t)
	const n = 2000
	f, _, err := q.SubmitFlow(ctx, fanOutIn(n))
	require.NoError(t, err)
	do(t, "CONFIG", "RESETSTAT")
	var rs []FlowResult
	done := 0
	for range 10 * n {
		ok, js, err := q.FlowCompleteClaim(ctx, rs, 0, time.Minute, 100)
		require.NoError(t, err)
		require.NotContains(t, ok, false)
		done += len(ok)
		if len(js) == 0 {
			break
		}
		rs = rs[:0]
		for _, j := range js {
			rs = append(rs, FlowResult{ID: j.ID, Token: j.Token})
		}
	}
	calls := innerCalls(t)
	require.Equal(t, n, done)
	hset := 0
	for _, l := range strings.Split(do(t, "INFO", "commandstats"), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "cmdstat_hset:calls="); ok {
			hset, _ = strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
		}
	}
	t.Logf("%d server commands, %d HSET for %d flow jobs run: %.2f a job", calls, hset, n, float64(calls)/n)
	require.LessOrEqual(t, hset, n+n/10, "one HSET a job (its claim), not two")
	fi, err := q.Flow(ctx, f)
	require.NoError(t, err)
	require.Equal(t, FlowDone, fi.State)
}

// TestCheckFlowFlat: the host-side check of a 10,000-node fan-out and
// fan-in builds its graph in a fixed handful of allocations (flat arrays),
// not a slice per node and a map for the fan-in's dependencies, and gives
// the same topological order (the root, the children in order, the
// fan-in).
func TestCheckFlowFlat(t *testing.T) {
	const n = 10000
	nodes := make([]FlowNode, n)
	in := &nodes[n-1]
	for i := 1; i < n-1; i++ {
		nodes[i].Deps = []FlowDep{{Node: 0}}
		in.Deps = append(in.Deps, FlowDep{Node: i})
	}
	order, edges, err := checkFlow(nodes)
	if err != nil || edges != 2*(n-2) || len(order) != n {
		t.Fatalf("checkFlow: %d nodes in order, %d edges, %v", len(order), edges, err)
	}
	for i, x := range order {
		if x != i {
			t.Fatalf("order[%d] = %d, want %d", i, x, i)
		}
	}
	if raceEnabled {
		return // allocation counts are not meaningful under -race
	}
	if got := testing.AllocsPerRun(5, func() { _, _, _ = checkFlow(nodes) }); got > 8 {
		t.Errorf("checkFlow of %d nodes: %.0f allocations, want at most 8", n, got)
	}
	in.Deps = append(in.Deps, FlowDep{Node: 5})
	if _, _, err := checkFlow(nodes); err == nil || !strings.Contains(err.Error(), "node 5 twice") {
		t.Errorf("a dependency given twice: %v", err)
	}
	in.Deps = in.Deps[:n-2]
}
