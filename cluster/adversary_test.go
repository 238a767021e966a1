package cluster_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// moveSlotSlowly moves slot s from src to dst one key per MIGRATE, with
// pause between keys, so that transactions meet the slot half-moved (ASK,
// TRYAGAIN) and then moved (MOVED to a client with a stale map).
func moveSlotSlowly(t *testing.T, c *servertest.Cluster, s int, src, dst *servertest.Server, pause func()) {
	t.Helper()
	slot := strconv.Itoa(s)
	_, err := dst.Do("CLUSTER", "SETSLOT", slot, "IMPORTING", c.IDs[src.Addr])
	require.NoError(t, err)
	_, err = src.Do("CLUSTER", "SETSLOT", slot, "MIGRATING", c.IDs[dst.Addr])
	require.NoError(t, err)
	pause()
	for {
		out, err := src.Do("CLUSTER", "GETKEYSINSLOT", slot, "1")
		require.NoError(t, err)
		keys := strings.Fields(out)
		if len(keys) == 0 {
			break
		}
		_, err = src.Do("MIGRATE", "127.0.0.1", strconv.Itoa(dst.Port), keys[0], "0", "5000")
		require.NoError(t, err)
		pause()
	}
	// The new owner first, then the old one (see BRIEF), then the rest.
	for _, n := range append([]*servertest.Server{dst, src}, c.Primaries...) {
		_, err := n.Do("CLUSTER", "SETSLOT", slot, "NODE", c.IDs[dst.Addr])
		require.NoError(t, err)
	}
	pause()
}

// Transactions (MULTI; INCR {t}c; INCR {t}g<i>; EXEC), alone and inside
// batches with commands on other slots, run while their slot is moved
// back and forth between two primaries six times, a key at a time: each
// transaction acknowledged by its EXEC applied exactly once, each one
// that failed applied nothing (a clean, typed failure: nothing was
// ambiguous here), and none ran part-way: the counters on the server
// equal the acknowledged transactions, and the values EXEC returned are
// each seen once.
func TestAdversaryTransactionsThroughReshards(t *testing.T) {
	c := privateCluster(t, 2, 0)
	cl := newClient(t, c)
	ctx := testCtx(t)
	a, b := c.Primaries[0], c.Primaries[1]
	tag := tagOn(c, a, "tx")
	s := int(emq.Slot(tag))
	other := tagOn(c, b, "ot")

	const workers, rounds = 4, 150
	var mu sync.Mutex
	acked := make([]int, workers)
	cSeen := map[int64]int{}
	failures := map[string]int{}
	progress := make(chan struct{}, 1)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := tag + "g" + strconv.Itoa(w)
			var bt pipeline.Batch
			for i := range rounds {
				bt.Reset()
				mixed := i%3 == 1
				if mixed {
					bt.Add("SET", other+"x", strconv.Itoa(i))
				}
				at := bt.Len()
				bt.Add("MULTI")
				bt.Add("INCR", tag+"c")
				bt.Add("INCR", g)
				bt.Add("EXEC")
				if mixed {
					bt.Add("GET", other+"x")
				}
				err := bt.Exec(ctx, cl)
				mu.Lock()
				switch {
				case err != nil:
					failures["batch: "+err.Error()]++
				default:
					exec := bt.Reply(at + 3)
					switch {
					case exec.Type == resp.Array && len(exec.Elems) == 2:
						acked[w]++
						cSeen[exec.Elems[0].Int]++
						if exec.Elems[1].Int != int64(acked[w]) {
							failures[fmt.Sprintf("worker %d: EXEC's INCR %s = %d after %d acknowledged", w, g, exec.Elems[1].Int, acked[w]-1)]++
						}
					case exec.Err() != nil:
						failures["EXEC: "+exec.Err().Error()]++
					default:
						failures["EXEC: "+exec.String()]++
					}
					if mixed && bt.Reply(at+4).Text() != strconv.Itoa(i) {
						failures["mixed GET: "+bt.Reply(at+4).String()]++
					}
				}
				mu.Unlock()
				select {
				case progress <- struct{}{}:
				default:
				}
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	moves := 0
	pause := func() {
		select {
		case <-progress:
		case <-finished:
		case <-time.After(20 * time.Millisecond):
		}
	}
	src, dst := a, b
	for moves < 6 {
		select {
		case <-finished:
		default:
			moveSlotSlowly(t, c, s, src, dst, pause)
			moves++
			src, dst = dst, src
			continue
		}
		break
	}
	<-finished
	total := 0
	for _, n := range acked {
		total += n
	}
	st := cl.Stats()
	t.Logf("%d transactions through %d moves: %d acknowledged, failures %v; stats %+v", workers*rounds, moves, total, failures, st)
	owner := src // where the last move left the slot
	get := func(k string) int {
		v, err := owner.Do("GET", k)
		require.NoError(t, err)
		if v == "" {
			return 0
		}
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		return n
	}
	for w := range workers {
		require.Equal(t, acked[w], get(tag+"g"+strconv.Itoa(w)), "worker %d: acknowledged transactions vs its counter", w)
	}
	require.Equal(t, total, get(tag+"c"), "acknowledged transactions vs the shared counter")
	for v, n := range cSeen {
		require.Equal(t, 1, n, "EXEC returned c = %d %d times", v, n)
	}
	for f := range failures {
		require.NotContains(t, f, "after", "a transaction applied twice or part-way")
		require.NotContains(t, f, "mixed GET", "a mixed batch's other command got a wrong reply")
	}
	require.GreaterOrEqual(t, moves, 2, "the slot moved too few times to test anything")
	require.Positive(t, st.Ask+st.Moved+st.TryAgain, "no redirection was met")
	_ = cluster.Options{}
}

// Blocking calls through cluster.Client on the primary of their slot
// while that primary is failed over by hand (CLUSTER FAILOVER on its
// replica), then killed (SIGKILL) once it is the replica's replica again:
// every call returns (the server's own error, ErrBroken, ErrNotConnected,
// or a cancel), none hangs, none returns an element it did not pop; a
// cancelled one leaves its element on the server; after each fault a
// BLPOP on the new primary gets its element.
func TestAdversaryBlockingThroughFailover(t *testing.T) {
	const tag = "bl"
	c, primary, replica := haCluster(t, tag)
	cl := newClient(t, c, func(o *cluster.Options) {
		o.Seeds = []string{replica.Addr}
		o.Node.BlockingConns = 3
	})
	ctx := testCtx(t)
	key := "{" + tag + "}q"
	blockedOn := func(s *servertest.Server, n int) {
		t.Helper()
		eventually(t, fmt.Sprintf("%s having %d blocked clients", s.Addr, n), func() bool {
			info, err := s.Do("INFO", "clients")
			return err == nil && strings.Contains(info, "blocked_clients:"+strconv.Itoa(n)+"\r\n")
		})
	}
	// blockAll starts n BLPOPs without a timeout and returns their ends.
	blockAll := func(n int) chan error {
		ended := make(chan error, n)
		for range n {
			go func() {
				v, err := cl.Do(ctx, "BLPOP", key, "0")
				if err == nil {
					err = fmt.Errorf("BLPOP returned %s from a node going away", v)
				}
				ended <- err
			}()
		}
		return ended
	}
	collect := func(what string, ended chan error, n int) map[string]int {
		t.Helper()
		got := map[string]int{}
		for i := range n {
			select {
			case err := <-ended:
				require.NotContains(t, err.Error(), "returned", what)
				got[err.Error()[:min(len(err.Error()), 60)]]++
			case <-time.After(waitLong):
				t.Fatalf("%s: %d of %d blocking calls never returned", what, n-i, n)
			}
		}
		return got
	}
	popAfter := func(what, elem string) {
		t.Helper()
		var v resp.Value
		eventually(t, what+": a BLPOP that works", func() bool {
			_, err := cl.Do(ctx, "RPUSH", key, elem)
			if err == nil {
				v, err = cl.Do(ctx, "BLPOP", key, "1")
			}
			return err == nil && !v.IsNull()
		})
		require.Equal(t, elem, v.Elems[1].Text(), what)
	}

	// A cancelled BLPOP on the cluster leaves what is pushed after it.
	bctx, cancel := context.WithCancel(ctx)
	ended := make(chan error, 1)
	go func() { _, err := cl.Do(bctx, "BLPOP", key, "0"); ended <- err }()
	blockedOn(primary, 1)
	cancel()
	require.ErrorIs(t, <-ended, context.Canceled)
	_, err := cl.Do(ctx, "RPUSH", key, "kept")
	require.NoError(t, err)
	n, err := primary.Do("LLEN", key)
	require.NoError(t, err)
	require.Equal(t, "1", n, "the element pushed after the cancelled BLPOP returned")
	_, err = cl.Do(ctx, "DEL", key)
	require.NoError(t, err)

	// A manual failover while three BLPOPs wait on the primary.
	ended = blockAll(3)
	blockedOn(primary, 3)
	_, err = replica.Do("CLUSTER", "FAILOVER")
	require.NoError(t, err)
	waitRole(t, replica, "master")
	t.Logf("manual failover: %v", collect("manual failover", ended, 3))
	popAfter("after the failover", "f1")

	// The new primary (the old replica) killed while three wait on it.
	waitRole(t, primary, "slave")
	ended = blockAll(3)
	blockedOn(replica, 3)
	replica.Kill()
	t.Logf("primary killed: %v", collect("kill", ended, 3))
	waitRole(t, primary, "master")
	popAfter("after the kill", "f2")
}

// A batch holding a blocking command whose commands go to several
// primaries is refused before anything is sent, with a *RouteError that
// says how: it used to be refused by the blocking command's node client
// ("send it with … pipeline.Batch", which it was) after the other
// primary's part had run, so a refusal that says nothing was sent
// followed a SET that ran.
func TestAdversaryClusterBlockingBatchSpread(t *testing.T) {
	c := needCluster(t)
	cl := newClient(t, c)
	ctx := testCtx(t)
	a, b := c.Primaries[0], c.Primaries[1]
	ka, kb := tagOn(c, a, "ba")+"q", tagOn(c, b, "bb")+"x"
	for _, cmds := range [][][]string{
		{{"SET", kb, "ran"}, {"BLPOP", ka, "0.1"}},
		{{"BLPOP", ka, "0"}, {"BLPOP", kb, "0"}},
		{{"SET", kb, "ran"}, {"XREAD", "BLOCK", "10", "STREAMS", ka, "$"}},
	} {
		var bt pipeline.Batch
		for _, cmd := range cmds {
			bt.Add(cmd...)
		}
		err := bt.Exec(ctx, cl)
		var re *cluster.RouteError
		require.ErrorAs(t, err, &re, "%v", cmds)
		require.ErrorIs(t, err, cluster.ErrUnroutable)
		require.Contains(t, []string{"BLPOP", "XREAD"}, re.Command)
		v, err := b.Do("GET", kb)
		require.NoError(t, err)
		require.Empty(t, v, "%v: the other primary's SET ran before the refusal", cmds)
	}
}

// A batch of blocking commands and a SET, all on one primary (two slots
// it serves), cancelled while the first blocks: the call returns the
// replies (the SET ran; the BLPOPs were unblocked, popping nothing),
// nothing stays blocked, and elements pushed right after stay.
func TestAdversaryClusterBlockingBatchCancelled(t *testing.T) {
	c := needCluster(t)
	cl := newClient(t, c)
	ctx := testCtx(t)
	a := c.Primaries[0]
	ka, kb := tagOn(c, a, "ba")+"q", tagOn(c, a, "bc")+"q"
	blocked := func(n string) bool {
		info, err := a.Do("INFO", "clients")
		return err == nil && strings.Contains(info, "blocked_clients:"+n+"\r\n")
	}
	for round := range 6 {
		bctx, cancel := context.WithCancel(ctx)
		var bt pipeline.Batch
		bt.Add("BLPOP", ka, "0")
		bt.Add("SET", ka+"x", "set")
		bt.Add("BLPOP", kb, "0")
		ended := make(chan error, 1)
		go func() { ended <- bt.Exec(bctx, cl) }()
		eventually(t, "the BLPOP blocking", func() bool { return blocked("1") })
		cancel()
		select {
		case err := <-ended:
			require.NoError(t, err, "round %d", round)
		case <-time.After(waitLong):
			t.Fatal("the cancelled batch never returned")
		}
		require.True(t, bt.Reply(0).IsNull(), "round %d: %v", round, bt.Reply(0))
		require.Equal(t, "OK", bt.Reply(1).Text())
		require.True(t, bt.Reply(2).IsNull(), "round %d: %v", round, bt.Reply(2))
		require.True(t, blocked("0"), "round %d: a BLPOP still blocked after the call returned", round)
		for _, k := range []string{ka, kb} {
			_, err := cl.Do(ctx, "RPUSH", k, "kept")
			require.NoError(t, err)
		}
		bt.Reset()
		bt.Add("BLPOP", ka, "0")
		bt.Add("BLPOP", kb, "0")
		require.NoError(t, bt.Exec(ctx, cl))
		require.Equal(t, "kept", bt.Reply(0).Elems[1].Text(), "round %d", round)
		require.Equal(t, "kept", bt.Reply(1).Elems[1].Text(), "round %d", round)
	}
}
