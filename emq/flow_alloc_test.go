package emq

import (
	"context"
	"testing"
	"time"
)

// TestFlowAllocBudgets holds the flow consumer's exchange and the staged
// submit to allocation budgets against the real server: a
// FlowCompleteClaim round allocates its flags, the claimed jobs (their
// slice, ids string and payload slab) and its reply's closure, not its
// arguments (pooled: 13 allocations before, 7 after); a
// staged SubmitFlow encodes every part into one reused Args, so its
// allocations do not grow with the parts' bytes (2,307 before for 2,000
// nodes, 2,078 after: the ids and about 80 more).
func TestFlowAllocBudgets(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts are not meaningful under -race or -short")
	}
	q := fresh(t, "flowallocs")
	ctx := context.Background()
	// One job completed and one claimed per round.
	if _, err := q.EnqueueBulk(ctx, make([][]byte, 400)); err != nil {
		t.Fatal(err)
	}
	_, jobs, err := q.FlowCompleteClaim(ctx, nil, 0, time.Minute, 1)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("FlowCompleteClaim: %d jobs, %v", len(jobs), err)
	}
	done := []FlowResult{{}}
	allocBudget(t, "FlowCompleteClaim", 200, 7, func() {
		done[0] = FlowResult{ID: jobs[0].ID, Token: jobs[0].Token}
		ok, js, err := q.FlowCompleteClaim(ctx, done, 0, time.Minute, 1)
		if err != nil || !ok[0] || len(js) != 1 {
			t.Fatalf("FlowCompleteClaim: %v %d jobs, %v", ok, len(js), err)
		}
		jobs = js
	})

	// A fan-out and fan-in of 2,000 nodes (3,996 dependencies: staged).
	nodes := make([]FlowNode, 2000)
	in := &nodes[len(nodes)-1]
	for i := range nodes {
		nodes[i].Payload = make([]byte, 100)
		if i > 0 && i < len(nodes)-1 {
			nodes[i].Deps = []FlowDep{{Node: 0}}
			in.Deps = append(in.Deps, FlowDep{Node: i})
		}
	}
	// The ids are one string each (len(nodes)); the rest is bounded.
	allocBudget(t, "SubmitFlow staged", 3, float64(len(nodes)+100), func() {
		if _, _, err := q.SubmitFlow(ctx, nodes); err != nil {
			t.Fatal(err)
		}
	})
}
