package emq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/internal/servertest"
)

// errRelayKilled stands for the relay's death between an entry's apply
// and its acknowledgement.
var errRelayKilled = errors.New("relay killed")

// relayRun drives a flow of queue dst whose nodes depend on jobs of the
// queues srcs (other slots): node i waits on srcs[i%len].jobs[i] and
// srcs[(i+1)%len].jobs[i+1 mod n] (two remote dependencies, so a double
// apply would release it early), the fan-in on every node. Source jobs
// i%7 == 3 go dead (FlowFail dependents end dead), i%11 == 5 are completed
// by the core Complete (a peer: the relay's repair posts them). Relays are
// killed after applying one entry in three, and two run at once. It
// checks: no dependent starts before both of its dependencies ended, none
// runs twice, at quiescence the outboxes are empty and no job waits.
func relayRun(t *testing.T, open func(name string) (*Queue, error), srcNames []string, dstName string) {
	t.Helper()
	ctx := tctx(t)
	const n = 40
	var srcs []*Queue
	for _, name := range srcNames {
		q, err := open(name)
		require.NoError(t, err)
		srcs = append(srcs, q)
	}
	dst, err := open(dstName)
	require.NoError(t, err)
	type src struct {
		q  *Queue
		id string
	}
	xs := make([]src, n)
	for i := range xs {
		q := srcs[i%len(srcs)]
		id, err := q.Enqueue(ctx, fmt.Appendf(nil, "x%d", i))
		require.NoError(t, err)
		xs[i] = src{q, id}
	}
	nodes := make([]FlowNode, n+1)
	for i := range n {
		a, b := xs[i], xs[(i+1)%n]
		nodes[i].Payload = fmt.Appendf(nil, "y%d", i)
		nodes[i].Deps = []FlowDep{{Queue: a.q, ID: a.id}, {Queue: b.q, ID: b.id, Policy: FlowIgnore}}
		nodes[n].Deps = append(nodes[n].Deps, FlowDep{Node: i, Policy: FlowIgnore})
	}
	nodes[n].Payload = []byte("in")
	f, ys, err := dst.SubmitFlow(ctx, nodes)
	require.NoError(t, err)

	var mu sync.Mutex
	ended := map[string]bool{} // source ids ended
	var kills atomic.Int64
	relayHook = func(string) error {
		if kills.Add(1)%3 == 0 {
			return errRelayKilled
		}
		return nil
	}
	t.Cleanup(func() { relayHook = nil })
	relay := func() {
		for _, q := range srcs {
			if _, err := q.RelayFlows(ctx, open, 7); err != nil && !errors.Is(err, errRelayKilled) {
				t.Error(err)
			}
		}
	}
	// The sources: every job ends, one way or another.
	for i, x := range xs {
		j := claimID(t, x.q, x.id)
		switch {
		case i%7 == 3:
			out, err := x.q.FlowRetry(ctx, j.ID, j.Token, 0, 1, "boom")
			require.NoError(t, err)
			require.Equal(t, RetryDead, out)
		case i%11 == 5:
			require.NoError(t, x.q.Complete(ctx, j.ID, j.Token, time.Hour))
		default:
			require.NoError(t, x.q.FlowComplete(ctx, j.ID, j.Token, nil, time.Hour))
		}
		mu.Lock()
		ended[x.id] = true
		mu.Unlock()
		if i%5 == 0 {
			var wg sync.WaitGroup
			wg.Go(relay)
			wg.Go(relay)
			wg.Wait()
		}
	}
	runs := map[string]int{}
	for {
		relay()
		js, err := dst.LaneClaim(ctx, time.Minute, 10)
		require.NoError(t, err)
		if len(js) == 0 {
			left := 0
			for _, q := range srcs {
				l, err := q.sender.Do(ctx, "LLEN", q.keys.Base+"outbox")
				require.NoError(t, err)
				left += int(l.Int)
			}
			if left == 0 {
				break
			}
			continue
		}
		for _, j := range js {
			runs[j.ID]++
			require.Equal(t, 1, runs[j.ID], "ran twice: %s", j.Payload)
			for i, y := range ys[:n] {
				if y == j.ID {
					require.True(t, ended[xs[i].id] && ended[xs[(i+1)%n].id], "%s started before its dependencies ended", j.Payload)
				}
			}
			require.NoError(t, dst.FlowComplete(ctx, j.ID, j.Token, nil, time.Hour))
		}
	}
	require.Greater(t, kills.Load(), int64(3), "relays were killed")
	fi, err := dst.Flow(ctx, f)
	require.NoError(t, err)
	require.Equal(t, FlowFailed, fi.State, "some nodes' fail-dependencies died")
	require.Zero(t, fi.Left, "nothing waits at quiescence")
	for i, y := range ys[:n] {
		want := StateCompleted
		if i%7 == 3 {
			want = StateDead
			v, err := dst.sender.Do(ctx, "HGET", dst.keys.Job(y), "error")
			require.NoError(t, err)
			require.Contains(t, string(v.Str), "failed: boom")
		}
		require.Equal(t, want, fi.Jobs[i].State, "y%d", i)
	}
	require.Equal(t, StateCompleted, fi.Jobs[n].State, "the fan-in ignores failures")
	require.Equal(t, 1, runs[ys[n]])
}

// TestFlowAcrossQueues: relayRun on one server (two source queues and
// the flow's queue, three slots).
func TestFlowAcrossQueues(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	c := dial(t)
	relayRun(t, func(name string) (*Queue, error) { return Open(context.Background(), c, name) }, []string{"srca", "srcb"}, "dstq")
}

// TestFlowAcrossQueuesCluster: relayRun on a 3-primary cluster, the
// queues on different primaries: every script call is routed to its
// queue's slot (a script touching another slot would fail CROSSSLOT).
func TestFlowAcrossQueuesCluster(t *testing.T) {
	c, err := servertest.StartCluster(3, 0, servertest.Options{})
	if err != nil {
		if servertest.InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	defer c.Stop()
	ctx := tctx(t)
	cl, err := cluster.NewClient(ctx, cluster.Options{Seeds: []string{c.Primaries[0].Addr}})
	require.NoError(t, err)
	defer cl.Close()
	// Three queues on three different primaries.
	names := []string{}
	owners := map[int]bool{}
	per := 16384 / len(c.Primaries)
	for i := 0; len(names) < 3 && i < 1000; i++ {
		name := fmt.Sprintf("q%d", i)
		k, err := NewKeys(name)
		require.NoError(t, err)
		owner := min(int(k.Slot)/per, len(c.Primaries)-1)
		if !owners[owner] {
			owners[owner] = true
			names = append(names, name)
		}
	}
	require.Len(t, names, 3)
	relayRun(t, func(name string) (*Queue, error) { return Open(context.Background(), cl, name) }, names[:2], names[2])
}

// TestFlowRemoteRefused: a remote dependency on an unknown job, a
// finished one (completed, dead), a job of the flow's own queue, or with
// a malformed id is a *FlowError (ErrFlow), and nothing is written in
// either queue (the local cases are TestFlowRefused's).
// dependency... (the local cases are TestFlowRefused's).
func TestFlowRemoteRefused(t *testing.T) {
	dst := fresh(t, "rdst")
	ctx := tctx(t)
	src, err := Open(ctx, dial(t), "rsrc")
	require.NoError(t, err)
	done, err := src.Enqueue(ctx, []byte("done"))
	require.NoError(t, err)
	j := claimID(t, src, done)
	require.NoError(t, src.FlowComplete(ctx, j.ID, j.Token, nil, time.Hour))
	dead, err := src.Enqueue(ctx, []byte("dead"))
	require.NoError(t, err)
	j = claimID(t, src, dead)
	_, err = src.FlowRetry(ctx, j.ID, j.Token, 0, 1, "x")
	require.NoError(t, err)
	own, err := dst.Enqueue(ctx, []byte("own"))
	require.NoError(t, err)
	before := do(t, "DBSIZE")
	for name, d := range map[string]FlowDep{
		"unknown":   {Queue: src, ID: src.ids.Next()},
		"completed": {Queue: src, ID: done},
		"dead":      {Queue: src, ID: dead},
		"own queue": {Queue: dst, ID: own},
		"bad id":    {Queue: src, ID: "not{an}id"},
	} {
		_, _, err := dst.SubmitFlow(ctx, []FlowNode{{Payload: []byte("a"), Deps: []FlowDep{d}}})
		require.ErrorIs(t, err, ErrFlow, name)
		require.Equal(t, before, do(t, "DBSIZE"), "%s: nothing written", name)
	}
}
