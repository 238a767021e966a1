package cluster_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/servertest"
)

// haCluster starts 3 primaries with a replica each, and returns it with
// the primary and replica of queue tag's slot.
func haCluster(t *testing.T, tag string) (c *servertest.Cluster, primary, replica *servertest.Server) {
	t.Helper()
	return haClusterWith(t, tag, servertest.Options{})
}

// haClusterWith is haCluster with the nodes' options.
func haClusterWith(t *testing.T, tag string, o servertest.Options) (c *servertest.Cluster, primary, replica *servertest.Server) {
	t.Helper()
	c, err := servertest.StartCluster(3, 1, o)
	if err != nil {
		if servertest.InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Cleanup(c.Stop)
	primary = owner(c, int(emq.Slot("{"+tag+"}")))
	for i, p := range c.Primaries {
		if p == primary {
			replica = c.Replicas[i]
		}
	}
	return c, primary, replica
}

// waitRole waits until s reports role (master or slave).
func waitRole(t *testing.T, s *servertest.Server, role string) {
	t.Helper()
	eventually(t, s.Addr+" becoming "+role, func() bool {
		info, err := s.Do("INFO", "replication")
		return err == nil && strings.Contains(info, "role:"+role+"\r\n")
	})
}

// runUntil waits until the worker has run half the jobs, calls fault,
// then waits until every job has run or the wait is over.
func runUntil(t *testing.T, log *jobLog, total int, fault func()) {
	log.waitCount(total/2, waitLong)
	fault()
	log.waitCount(total, 2*waitLong)
}

// A manual failover (CLUSTER FAILOVER on the queue's replica) during a
// worker run of 20,000 jobs: the client follows the new topology and no
// job is lost.
func TestFailoverDuringWorkerRun(t *testing.T) {
	const tag = "fo"
	c, _, replica := haCluster(t, tag)
	cl := newClient(t, c)
	ctx := testCtx(t)
	q, err := emq.Open(ctx, cl, tag)
	require.NoError(t, err)
	ids := enqueueAll(t, ctx, q, 20000)
	log := &jobLog{runs: map[string]int{}}
	var errEvents atomic.Int64
	w, err := emq.NewWorker(q, log.handler(), emq.WorkerConfig{
		Concurrency: 32, Lease: 3 * time.Second, ReapInterval: 500 * time.Millisecond,
		OnEvent: func(e emq.Event) {
			if e.Err != nil && errEvents.Add(1) <= 3 {
				t.Logf("worker event during failover: %v", e.Err)
			}
		},
	})
	require.NoError(t, err)
	require.NoError(t, w.Start())
	runUntil(t, log, len(ids), func() {
		_, err := replica.Do("CLUSTER", "FAILOVER")
		require.NoError(t, err)
		waitRole(t, replica, "master")
	})
	require.NoError(t, w.Shutdown(ctx))
	missing, dups := log.missing(ids)
	st := cl.Stats()
	t.Logf("failover: %d jobs, %d missing, %d run twice, %d error events; client %+v", len(ids), len(missing), dups, errEvents.Load(), st)
	require.Empty(t, missing)
	require.Positive(t, st.Moved+st.Refreshes, "the client never noticed the new topology")
}

// A primary killed (SIGKILL) under the same load: once its replica is
// promoted the client recovers. What is missing afterwards is only what
// the server's asynchronous replication dropped: the rows the new
// primary never received, never a job whose row survived.
func TestPrimaryKilledDuringWorkerRun(t *testing.T) {
	const tag = "kill"
	c, primary, replica := haCluster(t, tag)
	cl := newClient(t, c, func(o *cluster.Options) { o.Seeds = []string{replica.Addr} })
	ctx := testCtx(t)
	q, err := emq.Open(ctx, cl, tag)
	require.NoError(t, err)
	ids := enqueueAll(t, ctx, q, 20000)
	log := &jobLog{runs: map[string]int{}}
	var broken, other atomic.Int64 // calls failed by the kill: never re-sent
	w, err := emq.NewWorker(q, log.handler(), emq.WorkerConfig{
		Concurrency: 32, Lease: 3 * time.Second, ReapInterval: 500 * time.Millisecond,
		OnEvent: func(e emq.Event) {
			switch {
			case errors.Is(e.Err, conn.ErrBroken) || errors.Is(e.Err, conn.ErrNotConnected):
				broken.Add(1)
			case e.Err != nil:
				other.Add(1)
			}
		},
	})
	require.NoError(t, err)
	require.NoError(t, w.Start())
	runUntil(t, log, len(ids), func() {
		primary.Kill()
		waitRole(t, replica, "master")
	})
	require.NoError(t, w.Shutdown(ctx))
	missing, dups := log.missing(ids)
	// A missing job whose row the new primary still holds would be one
	// the client lost; one without a row, one the server dropped.
	var clientLost []string
	keys, err := emq.NewKeys(tag)
	require.NoError(t, err)
	for _, id := range missing {
		n, err := replica.Do("EXISTS", keys.Job(id))
		require.NoError(t, err)
		if n != "0" {
			clientLost = append(clientLost, id)
		}
	}
	t.Logf("primary killed: %d jobs, %d missing (all dropped by replication: %v), %d run twice, "+
		"%d calls failed with ErrBroken/ErrNotConnected, %d other errors; client %+v",
		len(ids), len(missing), len(clientLost) == 0, dups, broken.Load(), other.Load(), cl.Stats())
	require.Positive(t, broken.Load(), "no call saw the kill")
	require.Empty(t, clientLost, "jobs whose rows survived were never run")
}
