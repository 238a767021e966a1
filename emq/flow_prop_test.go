package emq

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFlowProperty: random DAGs (up to 1,000 nodes, random policies; the
// largest are staged) run by simulated workers with injected failures
// (a retry, up to dead), lease losses (the lease runs out and the reaper
// gives the job to another claim; the first holder's complete is stale)
// and worker kills (a claimed job never settled: reaped, up to dead).
// Checked: no job starts before its dependencies allow it (each
// completed, or dead under FlowIgnore; or one dead under FlowContinue),
// none completes twice, and at quiescence (after Flow's repair) the flow
// has ended and no job of it waits.
func TestFlowProperty(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { flowProperty(t, seed) })
	}
}

func flowProperty(t *testing.T, seed uint64) {
	q := fresh(t, "prop")
	ctx := tctx(t)
	rng := rand.New(rand.NewPCG(seed, 27))
	n := 1 + rng.IntN(1000)
	if seed == 1 {
		n = 1000
	}
	nodes := make([]FlowNode, n)
	for i := range nodes {
		nodes[i].Payload = fmt.Appendf(nil, "%d", i)
		// dependencies on earlier nodes of a random order: acyclic
		for range rng.IntN(4) {
			if i == 0 {
				break
			}
			d := rng.IntN(i)
			dup := false
			for _, e := range nodes[i].Deps {
				dup = dup || e.Node == d
			}
			if !dup {
				nodes[i].Deps = append(nodes[i].Deps, FlowDep{Node: d, Policy: FlowPolicy(rng.IntN(3))})
			}
		}
	}
	// shuffle, so that the graph's order is not the slice's
	perm := rng.Perm(n)
	shuffled := make([]FlowNode, n)
	for i, nd := range nodes {
		nd.Deps = append([]FlowDep(nil), nd.Deps...)
		for k := range nd.Deps {
			nd.Deps[k].Node = perm[nd.Deps[k].Node]
		}
		shuffled[perm[i]] = nd
	}
	f, ids, err := q.SubmitFlow(ctx, shuffled)
	require.NoError(t, err)
	index := make(map[string]int, n)
	for i, id := range ids {
		index[id] = i
	}
	state := func(id string) State {
		v, err := q.sender.Do(ctx, "HGET", q.keys.Job(id), "state")
		require.NoError(t, err)
		return State(v.Str)
	}
	completed := make(map[string]int, n)
	const maxAttempts = 3
	check := func(j Job) {
		nd := shuffled[index[j.ID]]
		cont := false
		for _, d := range nd.Deps {
			cont = cont || (d.Policy == FlowContinue && state(ids[d.Node]) == StateDead)
		}
		if cont {
			return
		}
		for _, d := range nd.Deps {
			s := state(ids[d.Node])
			ok := s == StateCompleted || (s == StateDead && d.Policy == FlowIgnore)
			require.True(t, ok, "job %d started with dependency %d %s (policy %d)", index[j.ID], d.Node, s, d.Policy)
		}
	}
	type held struct {
		j     Job
		stale bool
	}
	for {
		js, err := q.LaneClaim(ctx, time.Minute, 1+rng.IntN(20))
		require.NoError(t, err)
		if len(js) == 0 {
			// expired leases (lost, killed) come back, or end dead
			if expireAll(t, q) == 0 {
				break
			}
			_, err := q.Reap(ctx, 1000, maxAttempts)
			require.NoError(t, err)
			_, err = q.Flow(ctx, f) // repair: reaped to dead
			require.NoError(t, err)
			continue
		}
		var lost []held
		for _, j := range js {
			check(j)
			switch r := rng.IntN(20); {
			case r == 0: // killed: never settled
			case r == 1: // lease lost: reaped and claimed again first
				lost = append(lost, held{j: j, stale: true})
			case r < 5: // failure
				_, err := q.FlowRetry(ctx, j.ID, j.Token, 0, maxAttempts, "injected")
				require.NoError(t, err)
			default:
				require.NoError(t, q.FlowComplete(ctx, j.ID, j.Token, nil, time.Hour))
				completed[j.ID]++
				require.Equal(t, 1, completed[j.ID], "completed twice")
			}
		}
		if len(lost) > 0 {
			for _, h := range lost {
				expire(t, q, h.j.ID)
			}
			_, err := q.Reap(ctx, 1000, maxAttempts)
			require.NoError(t, err)
			_, err = q.Flow(ctx, f)
			require.NoError(t, err)
			for _, h := range lost {
				err := q.FlowComplete(ctx, h.j.ID, h.j.Token, nil, time.Hour)
				require.True(t, errors.Is(err, ErrStale), "a lost lease's complete: %v", err)
			}
		}
	}
	fi, err := q.Flow(ctx, f)
	require.NoError(t, err)
	require.NotEqual(t, FlowRunning, fi.State, "quiescent: %d left", fi.Left)
	require.Zero(t, fi.Left)
	for _, j := range fi.Jobs {
		require.Contains(t, []State{StateCompleted, StateDead}, j.State, "job %d", index[j.ID])
	}
	require.Equal(t, "0", do(t, "HLEN", q.keys.Base+"flowwait"), "nothing waits")
	require.Equal(t, "0", do(t, "ZCARD", q.keys.Delayed))
	require.Equal(t, "0", do(t, "EXISTS", q.keys.Base+"flowstep"))
	t.Logf("%d nodes: %d completed, %d dead", n, len(completed), fi.Failed)
}

// expire makes job id's lease due now.
func expire(t *testing.T, q *Queue, id string) {
	t.Helper()
	do(t, "ZADD", q.keys.Active, "XX", "0", id)
}

// expireAll makes every lease due now and returns how many are held.
func expireAll(t *testing.T, q *Queue) int {
	t.Helper()
	v, err := q.sender.Do(tctx(t), "ZRANGE", q.keys.Active, "0", "-1")
	require.NoError(t, err)
	for _, e := range v.Elems {
		expire(t, q, string(e.Str))
	}
	return len(v.Elems)
}
