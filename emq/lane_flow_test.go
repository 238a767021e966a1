package emq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// claimIDs claims up to 10 jobs (a minute's lease) and returns them by
// id.
func claimIDs(t *testing.T, q *Queue) map[string]Job {
	t.Helper()
	got := map[string]Job{}
	for _, j := range claimLane(t, q, 10) {
		got[j.ID] = j
	}
	return got
}

// TestLaneFlow: flow jobs naming a lane run in it. In lane "acct" two
// plain lane jobs p0, p1 are enqueued first; the flow is A → B (acct),
// A → C (acct), {B, C} → D. B and C are released into the lane when A
// completes, behind p1, and run one at a time in lane order (p0, p1, B,
// C) while D waits for both. With peer=true, B is completed by a peer's
// core complete: the lane is repaired by the claim's reap and the flow
// by Flow, and D still runs only after B and C.
func TestLaneFlow(t *testing.T) {
	for _, peer := range []bool{false, true} {
		name := "settled"
		if peer {
			name = "peer"
		}
		t.Run(name, func(t *testing.T) {
			q := fresh(t, "laneflow")
			ctx := tctx(t)
			p := laneJobs(t, q, "acct", LaneOptions{}, 2)
			f, ids, err := q.SubmitFlow(ctx, []FlowNode{
				{Payload: []byte("A")},
				{Payload: []byte("B"), Deps: []FlowDep{{Node: 0}}, Lane: "acct"},
				{Payload: []byte("C"), Deps: []FlowDep{{Node: 0}}, Lane: "acct"},
				{Payload: []byte("D"), Deps: []FlowDep{{Node: 1}, {Node: 2}}},
			})
			require.NoError(t, err)
			a, b, c, d := ids[0], ids[1], ids[2], ids[3]
			require.Equal(t, "acct", do(t, "HGET", q.keys.Job(b), "lane"))

			got := claimIDs(t, q)
			require.Len(t, got, 2, "the lane's head and the flow's root")
			require.Contains(t, got, p[0])
			require.Contains(t, got, a)
			require.NoError(t, q.FlowComplete(ctx, a, got[a].Token, nil, 0))
			require.Empty(t, claimIDs(t, q), "B and C wait in the lane behind p0 and p1")

			done, js, err := q.LaneCompleteClaim(ctx, []Ack{{ID: p[0], Token: got[p[0]].Token}}, 0, time.Minute, 10)
			require.NoError(t, err)
			require.Equal(t, []bool{true}, done)
			require.Len(t, js, 1)
			require.Equal(t, p[1], js[0].ID, "lane order: p1 before the flow's jobs")
			done, js, err = q.LaneCompleteClaim(ctx, []Ack{{ID: p[1], Token: js[0].Token}}, 0, time.Minute, 10)
			require.NoError(t, err)
			require.Equal(t, []bool{true}, done)
			require.Len(t, js, 1)
			require.Equal(t, b, js[0].ID, "then B, released first")
			require.Equal(t, []byte("B"), js[0].Payload)
			require.Empty(t, claimIDs(t, q), "C waits for B (cap 1); D for both")

			if peer {
				require.NoError(t, q.Complete(ctx, b, js[0].Token, 0))
			} else {
				require.NoError(t, q.FlowComplete(ctx, b, js[0].Token, nil, 0))
			}
			got = claimIDs(t, q)
			require.Len(t, got, 1, "the lane goes on with C only")
			require.Contains(t, got, c)
			require.NoError(t, q.FlowComplete(ctx, c, got[c].Token, nil, 0))
			if peer {
				require.Empty(t, claimIDs(t, q), "the flow has not seen B's end")
				fi, err := q.Flow(ctx, f) // the flow's repair
				require.NoError(t, err)
				require.Equal(t, FlowRunning, fi.State)
			}
			got = claimIDs(t, q)
			require.Len(t, got, 1, "D, after B and C")
			require.Contains(t, got, d)
			require.NoError(t, q.FlowComplete(ctx, d, got[d].Token, nil, 0))
			fi, err := q.Flow(ctx, f)
			require.NoError(t, err)
			require.Equal(t, FlowDone, fi.State)
			require.Empty(t, claimIDs(t, q))
			li, err := q.Lane(ctx, "acct")
			require.NoError(t, err)
			require.Equal(t, LaneInfo{}, li, "the lane is idle")
			require.Equal(t, "0", do(t, "HLEN", q.keys.Base+"laneheld"))
		})
	}
}

// TestLaneFlowBadLane: a flow node's lane name is checked as
// LaneEnqueue's, before anything is written.
func TestLaneFlowBadLane(t *testing.T) {
	q := fresh(t, "laneflowbad")
	before := do(t, "DBSIZE")
	_, _, err := q.SubmitFlow(tctx(t), []FlowNode{{Payload: []byte("x")}, {Payload: []byte("y"), Lane: "a{b}"}})
	require.ErrorIs(t, err, ErrInvalidLane)
	require.Equal(t, before, do(t, "DBSIZE"), "nothing written")
}
