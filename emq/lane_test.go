package emq

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

// openPeer opens another Queue on the same server and queue, on its own
// connection: another consumer.
func openPeer(t *testing.T, name string) *Queue {
	t.Helper()
	q, err := Open(context.Background(), dial(t), name)
	require.NoError(t, err)
	return q
}

// laneJobs enqueues n jobs on lane, payload "<lane>/<seq>".
func laneJobs(t *testing.T, q *Queue, lane string, o LaneOptions, n int) []string {
	t.Helper()
	var ids []string
	for start := 0; start < n; start += MaxLaneBatch {
		var ps [][]byte
		for i := start; i < min(n, start+MaxLaneBatch); i++ {
			ps = append(ps, []byte(lane+"/"+strconv.Itoa(i)))
		}
		got, err := q.LaneEnqueue(tctx(t), lane, o, ps...)
		require.NoError(t, err)
		ids = append(ids, got...)
	}
	return ids
}

// parseLaneJob splits a payload "<lane>/<seq>".
func parseLaneJob(t *testing.T, p []byte) (string, int) {
	lane, seq, ok := strings.Cut(string(p), "/")
	n, err := strconv.Atoi(seq)
	if !ok || err != nil {
		t.Fatalf("payload %q", p)
	}
	return lane, n
}

// TestLaneOrderConcurrentRetries: 4 consumers, 20 cap-1 lanes of 40 jobs,
// every 5th job failing once (retried through pending): each lane's jobs
// start in enqueue order, each only after the previous one completed, and
// no two of a lane overlap.
func TestLaneOrderConcurrentRetries(t *testing.T) {
	q := fresh(t, "lanes")
	const lanes, per = 20, 40
	for l := range lanes {
		laneJobs(t, q, "L"+strconv.Itoa(l), LaneOptions{}, per)
	}
	var mu sync.Mutex
	doneSeq := map[string]int{} // lane → last completed seq
	running := map[string]int{}
	var completed atomic.Int64
	var prog progress // a retry or completion frees a lane
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		c := openPeer(t, "lanes")
		wg.Go(func() {
			ctx := tctx(t)
			for {
				_, changed := prog.now()
				if completed.Load() >= lanes*per {
					return
				}
				jobs, err := c.LaneClaim(ctx, time.Minute, 3)
				if err != nil {
					errs <- err
					return
				}
				// Every job of the batch starts before any ends: a lane job
				// handed out beside its predecessor overlaps it.
				for _, j := range jobs {
					lane, seq := parseLaneJob(t, j.Payload)
					mu.Lock()
					last, ok := doneSeq[lane]
					if !ok {
						last = -1
					}
					running[lane]++
					if running[lane] > 1 || seq != last+1 {
						mu.Unlock()
						errs <- fmt.Errorf("lane %s: job %d started with %d running, last completed %d", lane, seq, running[lane], last)
						return
					}
					mu.Unlock()
				}
				for _, j := range jobs {
					lane, seq := parseLaneJob(t, j.Payload)
					mu.Lock()
					running[lane]--
					if seq%5 != 0 || j.Token > 1 {
						doneSeq[lane] = seq
					}
					mu.Unlock()
					if seq%5 == 0 && j.Token == 1 {
						out, err := c.FlowRetry(ctx, j.ID, j.Token, 0, 5, "once")
						if err != nil || out != RetryRequeued {
							errs <- fmt.Errorf("retry %s: %v %v", j.ID, out, err)
							return
						}
						prog.mark()
						continue
					}
					if err := c.FlowComplete(ctx, j.ID, j.Token, nil, 0); err != nil {
						errs <- err
						return
					}
					completed.Add(1)
					prog.mark()
				}
				// Nothing claimable until another consumer's retry or
				// completion frees a lane.
				if len(jobs) == 0 && !prog.wait(changed) {
					errs <- fmt.Errorf("no lane freed for %v", hangGuard)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for l := range lanes {
		require.Equal(t, per-1, doneSeq["L"+strconv.Itoa(l)])
	}
	st, err := q.Stats(tctx(t))
	require.NoError(t, err)
	require.Zero(t, st.Pending+st.Active+st.Delayed+st.Dead)
	// FlowComplete marks a lane job's end; the next claim frees its place.
	require.Empty(t, claimLane(t, q, 1))
	require.Equal(t, "0", do(t, "HLEN", q.keys.Base+"laneheld"), "no lane bookkeeping left")
	require.Equal(t, "0", do(t, "LLEN", q.keys.Base+"laneheldq"))
	require.Equal(t, "1", do(t, "HLEN", q.keys.Base+"lanestate"), "only the field '#table'")
	require.Equal(t, "0", do(t, "LLEN", q.keys.Base+"lanering"))
}

// TestLaneCap: a cap-3 lane never has more than 3 claimed at once, by the
// script's own view (the claim hands out at most 3) and by 4 concurrent
// consumers' count; it reaches 3.
func TestLaneCap(t *testing.T) {
	q := fresh(t, "lanecap")
	ctx := tctx(t)
	// A lane that went idle while its job runs is full again when a job
	// arrives: the claim checks the cap when the lane's turn comes.
	one := laneJobs(t, q, "idle", LaneOptions{}, 1)
	got := claimLane(t, q, 10)
	require.Len(t, got, 1)
	require.Equal(t, one[0], got[0].ID)
	two := laneJobs(t, q, "idle", LaneOptions{}, 1)
	more := claimLane(t, q, 10)
	require.Empty(t, more, "the idle lane's running job holds its cap")
	require.NoError(t, q.FlowComplete(ctx, got[0].ID, got[0].Token, nil, 0))
	more = claimLane(t, q, 10)
	require.Len(t, more, 1)
	require.Equal(t, two[0], more[0].ID)
	require.NoError(t, q.FlowComplete(ctx, more[0].ID, more[0].Token, nil, 0))

	laneJobs(t, q, "acct", LaneOptions{Cap: 3}, 60)
	jobs := claimLane(t, q, 10)
	require.Len(t, jobs, 3, "the claim stops at the cap")
	more = claimLane(t, q, 10)
	require.Empty(t, more, "full lane")
	require.NoError(t, q.FlowComplete(ctx, jobs[0].ID, jobs[0].Token, nil, 0))
	more = claimLane(t, q, 10)
	require.Len(t, more, 1, "one place freed")
	for _, j := range append(jobs[1:], more...) {
		require.NoError(t, q.FlowComplete(ctx, j.ID, j.Token, nil, 0))
	}

	var inflight, peak, done atomic.Int64
	var wg sync.WaitGroup
	var bad atomic.Int64
	for range 4 {
		c := openPeer(t, "lanecap")
		wg.Go(func() {
			for done.Load() < 56 {
				jobs, err := c.LaneClaim(ctx, time.Minute, 2)
				if err != nil {
					bad.Add(1)
					return
				}
				for range jobs {
					n := inflight.Add(1)
					if n > 3 {
						bad.Add(1)
					}
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
				}
				time.Sleep(time.Millisecond) // hold them a moment
				for _, j := range jobs {
					inflight.Add(-1)
					if c.FlowComplete(ctx, j.ID, j.Token, nil, 0) != nil {
						bad.Add(1)
					}
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	require.Zero(t, bad.Load(), "over the cap or an error")
	require.EqualValues(t, 3, peak.Load(), "the cap is reached")
}

// TestLaneFairness: a lane with 10,000 jobs and a cap of 1,000 enqueued
// first does not starve 10 small lanes enqueued after it: their 50 jobs
// are all claimed within the first 60 claims; with weight 3 for the busy
// lane, within 70.
func TestLaneFairness(t *testing.T) {
	for _, w := range []int{1, 3} {
		t.Run("weight"+strconv.Itoa(w), func(t *testing.T) {
			q := fresh(t, "fair")
			ctx := tctx(t)
			laneJobs(t, q, "busy", LaneOptions{Cap: 1000, Weight: w}, 10000)
			for l := range 10 {
				laneJobs(t, q, "small"+strconv.Itoa(l), LaneOptions{}, 5)
			}
			small, claims := 0, 0
			k := 55 + 5*w
			for small < 50 {
				jobs := claimLane(t, q, 1)
				require.Len(t, jobs, 1)
				claims++
				if lane, _ := parseLaneJob(t, jobs[0].Payload); lane != "busy" {
					small++
				}
				require.NoError(t, q.FlowComplete(ctx, jobs[0].ID, jobs[0].Token, nil, 0))
				require.LessOrEqual(t, claims, k, "small lanes starved: %d of 50 after %d claims", small, claims)
			}
			t.Logf("weight %d: 50 small jobs in %d claims", w, claims)
		})
	}
}

// TestLanePlainShare: plain pending jobs and lanes take turns, so 10,000
// plain jobs do not starve a lane, nor a lane the plain jobs.
func TestLanePlainShare(t *testing.T) {
	q := fresh(t, "share")
	ctx := tctx(t)
	var ps [][]byte
	for range 2000 {
		ps = append(ps, []byte("plain"))
	}
	_, err := q.EnqueueBatch(ctx, ps)
	require.NoError(t, err)
	laneJobs(t, q, "l", LaneOptions{Cap: 100}, 10)
	jobs := claimLane(t, q, 20)
	require.Len(t, jobs, 20)
	lane := 0
	for _, j := range jobs {
		if string(j.Payload) != "plain" {
			lane++
		}
	}
	require.Equal(t, 10, lane, "half of the claims")
}

// TestLaneKilledWorker: a lane job whose worker died is reaped back to
// pending and still holds the lane (the next job waits for it); reaped to
// dead, it frees the lane, which the next claim finds.
func TestLaneKilledWorker(t *testing.T) {
	q := fresh(t, "killed")
	ctx := tctx(t)
	ids := laneJobs(t, q, "dev", LaneOptions{}, 3)
	j1, err := q.LaneClaim(ctx, 20*time.Millisecond, 1)
	require.NoError(t, err)
	require.Equal(t, ids[0], j1[0].ID)
	waitReap(t, q, 5) // the worker is gone: its lease runs out
	jobs, err := q.LaneClaim(ctx, 20*time.Millisecond, 5)
	require.NoError(t, err)
	require.Len(t, jobs, 1, "only the reaped job: the lane waits for it")
	require.Equal(t, ids[0], jobs[0].ID)
	require.EqualValues(t, 2, jobs[0].Token)
	waitReap(t, q, 2) // again, now to dead
	require.Equal(t, []State{StateDead}, where(t, q, ids[0]))
	jobs = claimLane(t, q, 5)
	require.Len(t, jobs, 1, "the lane goes on")
	require.Equal(t, ids[1], jobs[0].ID)
	require.NoError(t, q.FlowComplete(ctx, jobs[0].ID, jobs[0].Token, nil, 0))
	jobs = claimLane(t, q, 5)
	require.Len(t, jobs, 1)
	require.Equal(t, ids[2], jobs[0].ID)
}

// waitReap makes every lease due now and reaps (core reap, max attempts
// max): one job must be reaped.
func waitReap(t *testing.T, q *Queue, max int) {
	t.Helper()
	expireAll(t, q)
	n, err := q.Reap(tctx(t), 10, max)
	require.NoError(t, err)
	require.NotZero(t, n, "a job reaped")
}

// TestLanePeerEnds: a lane's running job ended by a peer's core script
// (complete, retry to dead, delete) or cancelled leaves the lane able to
// go on: the next claim repairs it. Waiting lane jobs are invisible to a
// peer's core claim and promote, and each id stays in exactly one set.
func TestLanePeerEnds(t *testing.T) {
	ends := map[string]func(q *Queue, j Job){
		"complete": func(q *Queue, j Job) { require.NoError(t, q.Complete(tctx(t), j.ID, j.Token, 0)) },
		"retryDead": func(q *Queue, j Job) {
			out, err := q.Retry(tctx(t), j.ID, j.Token, 0, 1, "peer")
			require.NoError(t, err)
			require.Equal(t, RetryDead, out)
		},
		"delete": func(q *Queue, j Job) {
			_, err := q.Delete(tctx(t), j.ID)
			require.NoError(t, err)
		},
	}
	for name, end := range ends {
		t.Run(name, func(t *testing.T) {
			q := fresh(t, "peer")
			ctx := tctx(t)
			ids := laneJobs(t, q, "user:7", LaneOptions{}, 3)
			for _, id := range ids {
				require.Equal(t, []State{StateDelayed}, where(t, q, id))
				require.Equal(t, "delayed", row(t, q, id)["state"])
			}
			_, ok, err := q.Claim(ctx, time.Minute)
			require.NoError(t, err)
			require.False(t, ok, "a peer's core claim sees no lane job")
			n, err := q.Promote(ctx, 100)
			require.NoError(t, err)
			require.Zero(t, n, "nor does promote")
			jobs := claimLane(t, q, 5)
			require.Len(t, jobs, 1)
			require.Equal(t, []State{StateActive}, where(t, q, ids[0]))
			end(q, jobs[0])         // the peer's core script
			if name == "complete" { // the reap verb; the others, the claim's own re-check
				n, err := q.LaneReap(ctx, 10)
				require.NoError(t, err)
				require.Equal(t, 1, n, "the full lane freed")
			}
			jobs = claimLane(t, q, 5)
			require.Len(t, jobs, 1, "lane repaired")
			require.Equal(t, ids[1], jobs[0].ID)
		})
	}
}

// TestLaneHalt: with LaneHaltOnDead a dead job halts its lane until
// LaneResume; by default the lane goes on; the queue's default applies to
// lanes without a policy of their own.
func TestLaneHalt(t *testing.T) {
	q := fresh(t, "halt")
	ctx := tctx(t)
	ids := laneJobs(t, q, "h", LaneOptions{Halt: LaneHaltOnDead}, 2)
	goOn := laneJobs(t, q, "g", LaneOptions{}, 2)
	jobs := claimLane(t, q, 5)
	require.Len(t, jobs, 2)
	for _, j := range jobs {
		out, err := q.FlowRetry(ctx, j.ID, j.Token, 0, 1, "fatal")
		require.NoError(t, err)
		require.Equal(t, RetryDead, out)
	}
	jobs = claimLane(t, q, 5)
	require.Len(t, jobs, 1, "the halted lane waits")
	require.Equal(t, goOn[1], jobs[0].ID)
	li, err := q.Lane(ctx, "h")
	require.NoError(t, err)
	require.Equal(t, LaneInfo{Waiting: 1, Halted: true, HaltedBy: ids[0]}, li)
	ok, err := q.LaneResume(ctx, "h")
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = q.LaneResume(ctx, "g")
	require.NoError(t, err)
	require.False(t, ok, "not halted")
	jobs = claimLane(t, q, 5)
	require.Len(t, jobs, 1)
	require.Equal(t, ids[1], jobs[0].ID)

	// The queue's default, and a peer's core retry to dead (seen by the
	// next claim's repair).
	require.NoError(t, q.SetLaneHaltDefault(ctx, true))
	d := laneJobs(t, q, "d", LaneOptions{}, 2)
	jobs = claimLane(t, q, 5)
	require.Len(t, jobs, 1)
	require.Equal(t, d[0], jobs[0].ID)
	_, err = q.Retry(ctx, d[0], jobs[0].Token, 0, 1, "peer")
	require.NoError(t, err)
	jobs = claimLane(t, q, 5)
	require.Empty(t, jobs, "halted by the queue's default")
	li, err = q.Lane(ctx, "d")
	require.NoError(t, err)
	require.True(t, li.Halted)
}

// TestLaneBadInput: bad lane names, options and counts are typed errors
// and write nothing; the script refuses malformed arguments before any
// write.
func TestLaneBadInput(t *testing.T) {
	q := fresh(t, "bad")
	ctx := tctx(t)
	before := do(t, "DBSIZE")
	for _, name := range []string{"", strings.Repeat("x", 1<<20), "a{b}", "a\x00b", "#abc", strings.Repeat("y", MaxLaneName+1)} {
		_, err := q.LaneEnqueue(ctx, name, LaneOptions{}, []byte("p"))
		require.ErrorIs(t, err, ErrInvalidLane, "%.20q", name)
		_, err = q.LaneResume(ctx, name)
		require.ErrorIs(t, err, ErrInvalidLane)
	}
	for _, o := range []LaneOptions{{Cap: -1}, {Cap: MaxLaneCap + 1}, {Weight: -1}, {Halt: 9}} {
		_, err := q.LaneEnqueue(ctx, "ok", o, []byte("p"))
		require.ErrorIs(t, err, ErrArg, "%+v", o)
	}
	_, err := q.LaneEnqueue(ctx, "ok", LaneOptions{})
	require.ErrorIs(t, err, ErrArg)
	_, err = q.LaneEnqueue(ctx, "ok", LaneOptions{}, make([][]byte, MaxLaneBatch+1)...)
	require.ErrorIs(t, err, ErrArg)
	_, err = q.LaneClaim(ctx, time.Minute, 0)
	require.ErrorIs(t, err, ErrArg)
	// The script's own checks.
	for _, argv := range [][]string{
		{"k", "k", "1001", "0", "", q.ids.Next(), "p"},
		{"k", "k", "1", "x", "", q.ids.Next(), "p"},
		{"k", "k", "1", "1", "2", q.ids.Next(), "p"},
		{"k", "k", "1", "1", "", q.ids.Next()},
		{"k", "k", "1", "1", "", q.ids.Next(), "p", "ABC0000000000", "p"},
		// the kind gate reads the id's first three bytes: short, empty
		// and near-miss ids are refused too, in both forms of the call
		{"k", "k", "1", "1", "", q.ids.Next(), "p", "JO", "p"},
		{"k", "k", "1", "1", "", "", "p"},
		{"", "k", "k", q.ids.Next(), "p", "k", "k", "JOC0000000000", "p"},
		{"", "k", "k", "J", "p"},
		{"k{x", "k{x", "1", "1", "", q.ids.Next(), "p"}, // a ring entry '{k{id' must parse
		{"", "k", "k", q.ids.Next(), "p", "k{", "k{", q.ids.Next(), "p"},
	} {
		var a dispatch.Args
		a.Key(q.keys.Delayed)
		a.Key(q.keys.Base)
		for _, s := range argv {
			a.Arg(s)
		}
		err := q.reaper.Eval(ctx, scriptLaneEnqueue, &a, func(resp.Value) error { return nil })
		require.Error(t, err, "%v", argv)
	}
	require.Equal(t, before, do(t, "DBSIZE"), "nothing written")

	// A long name is keyed by its hash and works.
	long := strings.Repeat("n", 500)
	ids, err := q.LaneEnqueue(ctx, long, LaneOptions{}, []byte("p"))
	require.NoError(t, err)
	k, _ := LaneKey(long)
	require.Len(t, k, 65)
	// layout 4: the idle lane's first job is held by its ring entry
	require.Equal(t, "{"+k+"{"+ids[0], do(t, "LINDEX", q.keys.Base+"lanering", "0"))
	require.Equal(t, "0", do(t, "LLEN", q.keys.Base+"lane:"+k))
	require.Equal(t, long, do(t, "HGET", q.keys.Base+"lanename", k))
	li, err := q.Lane(ctx, long)
	require.NoError(t, err)
	require.Equal(t, int64(1), li.Waiting, "the job held by the ring entry counts as waiting")
}

// TestLaneWeights: two lanes of weights 1 and 3 with room to spare share
// 400 claims 100 and 300, exactly.
func TestLaneWeights(t *testing.T) {
	q := fresh(t, "weights")
	laneJobs(t, q, "one", LaneOptions{Cap: 1000, Weight: 1}, 1000)
	laneJobs(t, q, "three", LaneOptions{Cap: 1000, Weight: 3}, 1000)
	got := map[string]int{}
	for range 4 {
		jobs := claimLane(t, q, 100)
		require.Len(t, jobs, 100)
		for _, j := range jobs {
			lane, _ := parseLaneJob(t, j.Payload)
			got[lane]++
		}
	}
	require.Equal(t, map[string]int{"one": 100, "three": 300}, got)
}

// TestLaneRetryKeepsOrder: a retried lane job (FlowRetry, or a peer's core
// retry; to pending or to delayed) keeps its lane: the next job is not
// handed out until the retried one ends.
func TestLaneRetryKeepsOrder(t *testing.T) {
	for _, peer := range []bool{false, true} {
		for _, delay := range []time.Duration{0, 30 * time.Millisecond} {
			t.Run(fmt.Sprintf("peer=%v/delay=%v", peer, delay), func(t *testing.T) {
				q := fresh(t, "retry")
				ctx := tctx(t)
				ids := laneJobs(t, q, "o", LaneOptions{}, 2)
				jobs := claimLane(t, q, 5)
				require.Len(t, jobs, 1)
				var err error
				if peer {
					_, err = q.Retry(ctx, ids[0], jobs[0].Token, delay, 5, "again")
				} else {
					_, err = q.FlowRetry(ctx, ids[0], jobs[0].Token, delay, 5, "again")
				}
				require.NoError(t, err)
				if delay > 0 { // the retry's delay, run out now
					do(t, "ZADD", q.keys.Delayed, "XX", "0", ids[0])
				}
				_, err = q.Promote(ctx, 10)
				require.NoError(t, err)
				jobs = claimLane(t, q, 5)
				require.Len(t, jobs, 1, "only the retried job")
				require.Equal(t, ids[0], jobs[0].ID)
				more := claimLane(t, q, 5)
				require.Empty(t, more)
				require.NoError(t, q.FlowComplete(ctx, ids[0], jobs[0].Token, nil, 0))
				more = claimLane(t, q, 5)
				require.Len(t, more, 1)
				require.Equal(t, ids[1], more[0].ID)
			})
		}
	}
}

// cancelRaw does to a job what J1's cancel script does (not on this
// branch): out of its set, state dead, error "cancelled", into dead.
func cancelRaw(t *testing.T, q *Queue, id string, from State) {
	t.Helper()
	key, _ := q.setKey(from)
	do(t, "ZREM", key, id)
	do(t, "HSET", q.keys.Job(id), "state", "dead", "error", "cancelled")
	do(t, "ZADD", q.keys.Dead, "1", id)
}

// TestLaneCancelled: a cancelled waiting lane job is skipped; a cancelled
// running one frees the lane and does not halt it, even under
// LaneHaltOnDead.
func TestLaneCancelled(t *testing.T) {
	q := fresh(t, "cancelled")
	ids := laneJobs(t, q, "c", LaneOptions{Halt: LaneHaltOnDead}, 4)
	jobs := claimLane(t, q, 5)
	require.Len(t, jobs, 1)
	cancelRaw(t, q, ids[0], StateActive)
	cancelRaw(t, q, ids[1], StateDelayed)
	jobs = claimLane(t, q, 5)
	require.Len(t, jobs, 1, "not halted, the cancelled waiting job skipped")
	require.Equal(t, ids[2], jobs[0].ID)
	require.Equal(t, "1", do(t, "HLEN", q.keys.Base+"laneheld"), "only ids[2] runs")
	require.Equal(t, "0", do(t, "HEXISTS", q.keys.Base+"laneheld", ids[0]))
}

// claimLane runs LaneClaim with a minute's lease, failing on an error.
func claimLane(t *testing.T, q *Queue, n int) []Job {
	t.Helper()
	jobs, err := q.LaneClaim(tctx(t), time.Minute, n)
	require.NoError(t, err)
	return jobs
}

// TestLaneEnqueueMany: one call admits jobs into several lanes, each at
// its lane's tail in call order (a lane's options kept: "c3" keeps cap 3);
// a bad lane name anywhere refuses the call before anything is sent.
func TestLaneEnqueueMany(t *testing.T) {
	q := fresh(t, "many")
	ctx := tctx(t)
	laneJobs(t, q, "c3", LaneOptions{Cap: 3}, 1)
	long := strings.Repeat("m", 100)
	var js []LaneJob
	for i := range 9 {
		l := []string{"a", "c3", long}[i%3]
		js = append(js, LaneJob{Lane: l, Payload: []byte(l + "/" + strconv.Itoa(i/3+1))})
	}
	_, err := q.LaneEnqueueMany(ctx, append(js, LaneJob{Lane: "x}", Payload: []byte("p")}))
	require.ErrorIs(t, err, ErrInvalidLane)
	ids, err := q.LaneEnqueueMany(ctx, js)
	require.NoError(t, err)
	require.Len(t, ids, 9)
	got := map[string][]int{}
	for _, j := range claimLane(t, q, 20) {
		lane, seq := parseLaneJob(t, j.Payload)
		got[lane] = append(got[lane], seq)
	}
	require.Equal(t, map[string][]int{"a": {1}, "c3": {0, 1, 2}, long: {1}}, got, "cap 1, cap 3 (kept), cap 1")
	k, _ := LaneKey(long)
	require.Equal(t, long, do(t, "HGET", q.keys.Base+"lanename", k))
}

// TestLaneFreedLaneUnread: a lane job's end puts its lane back in the
// ring without reading the lane's length (no LLEN: one server call a lane
// job cost before), a lane left empty there is dropped by the next serve,
// and a job enqueued into such a lane later is claimed once, in order,
// with every lane at most once in the ring.
func TestLaneFreedLaneUnread(t *testing.T) {
	q := fresh(t, "lanefreed")
	ctx := tctx(t)
	const lanes, per = 20, 3
	js := make([]LaneJob, 0, lanes*per)
	for s := range per {
		for l := range lanes {
			js = append(js, LaneJob{Lane: "l" + strconv.Itoa(l), Payload: []byte("l" + strconv.Itoa(l) + "/" + strconv.Itoa(s))})
		}
	}
	_, err := q.LaneEnqueueMany(ctx, js)
	require.NoError(t, err)
	do(t, "CONFIG", "RESETSTAT")
	next := map[string]int{}
	var acks []Ack
	round := func() {
		t.Helper()
		for range 100 {
			_, got, err := q.LaneCompleteClaim(ctx, acks, 0, time.Minute, 7)
			require.NoError(t, err)
			acks = acks[:0]
			for _, j := range got {
				lane, seq := parseLaneJob(t, j.Payload)
				require.Equal(t, next[lane], seq, "lane %s out of order", lane)
				next[lane]++
				acks = append(acks, Ack{ID: j.ID, Token: j.Token})
			}
			ring := strings.Fields(do(t, "LRANGE", q.keys.Base+"lanering", "0", "-1"))
			seen := map[string]bool{}
			for _, k := range ring {
				require.False(t, seen[k], "lane %s twice in the ring %v", k, ring)
				seen[k] = true
			}
			if len(got) == 0 && len(acks) == 0 {
				return
			}
		}
		t.Fatal("lanes not drained in 100 rounds")
	}
	round()
	for l := range lanes {
		require.Equal(t, per, next["l"+strconv.Itoa(l)])
	}
	require.NotContains(t, do(t, "INFO", "commandstats"), "cmdstat_llen:")
	// the freed, empty lanes: one more job each is claimed, once, in order
	js = js[:0]
	for l := range lanes {
		js = append(js, LaneJob{Lane: "l" + strconv.Itoa(l), Payload: []byte("l" + strconv.Itoa(l) + "/" + strconv.Itoa(per))})
	}
	_, err = q.LaneEnqueueMany(ctx, js)
	require.NoError(t, err)
	round()
	for l := range lanes {
		require.Equal(t, per+1, next["l"+strconv.Itoa(l)])
	}
}

// TestLaneEnqueueOneStateWrite: jobs enqueued into lanes already in the
// ring write lanestate once for all of them (the rows' HSETs and one
// HSET of the lanes' waiting counts: layout 3 counts a lane's waiting
// jobs in its state), and the lanes still run them in order.
func TestLaneEnqueueOneStateWrite(t *testing.T) {
	q := fresh(t, "lanebusy")
	ctx := tctx(t)
	const lanes = 10
	batch := func(s int) []LaneJob { return laneRound("b", lanes, s) }
	_, err := q.LaneEnqueueMany(ctx, batch(0))
	require.NoError(t, err)
	do(t, "CONFIG", "RESETSTAT")
	_, err = q.LaneEnqueueMany(ctx, batch(1))
	require.NoError(t, err)
	require.Contains(t, do(t, "INFO", "commandstats"), "cmdstat_hset:calls="+strconv.Itoa(lanes+1)+",")
	require.NotContains(t, do(t, "INFO", "commandstats"), "cmdstat_hdel:")
	next := map[string]int{}
	for _, j := range claimLane(t, q, 3*lanes) {
		lane, seq := parseLaneJob(t, j.Payload)
		require.Equal(t, next[lane], seq, "lane %s out of order", lane)
		next[lane]++
	}
	require.Len(t, next, lanes)
}

// TestLaneHeldLayout3: the occupants are laneheld (id → its lane's key)
// and laneheldq (their plain ids in claim order, the reap's cursor), not
// layout 2's set and '<id>\n<k>' list: claimed lane jobs are held there,
// their completion frees them (laneheld at once, laneheldq at the next
// reap's scan), and the lanes go on in order.
func TestLaneHeldLayout3(t *testing.T) {
	q := fresh(t, "laneheld")
	ctx := tctx(t)
	var js []LaneJob
	for s := range 2 {
		for l := range 3 {
			js = append(js, LaneJob{Lane: "h" + strconv.Itoa(l), Payload: []byte("h" + strconv.Itoa(l) + "/" + strconv.Itoa(s))})
		}
	}
	_, err := q.LaneEnqueueMany(ctx, js)
	require.NoError(t, err)
	got := claimLane(t, q, 10)
	require.Len(t, got, 3, "one job of each cap-1 lane")
	var ids, acks = []string{}, []Ack{}
	for _, j := range got {
		lane, seq := parseLaneJob(t, j.Payload)
		require.Zero(t, seq)
		require.Equal(t, lane, do(t, "HGET", q.keys.Base+"laneheld", j.ID))
		ids = append(ids, j.ID)
		acks = append(acks, Ack{ID: j.ID, Token: j.Token})
	}
	require.Equal(t, ids, strings.Fields(do(t, "LRANGE", q.keys.Base+"laneheldq", "0", "-1")))
	require.Equal(t, "none", do(t, "TYPE", q.keys.Base+"laneocc"), "no layout-2 set")
	done, next, err := q.LaneCompleteClaim(ctx, acks, 0, time.Minute, 10)
	require.NoError(t, err)
	require.Equal(t, []bool{true, true, true}, done)
	require.Len(t, next, 3)
	ids = ids[:0]
	for _, j := range next {
		_, seq := parseLaneJob(t, j.Payload)
		require.Equal(t, 1, seq)
		ids = append(ids, j.ID)
	}
	require.Equal(t, "3", do(t, "HLEN", q.keys.Base+"laneheld"))
	require.Equal(t, ids, strings.Fields(do(t, "LRANGE", q.keys.Base+"laneheldq", "0", "-1")), "the ended ids dropped by the reap's scan")
}

// TestLaneCallsPerJob counts the server commands (INFO commandstats, the
// scripts' own included) of 2,000 jobs over 200 cap-1 lanes, enqueued 100
// a call and run by 4 consumers' LaneCompleteClaim rounds of 50 (the
// emqbench lanes pattern, one goroutine): every job runs once, in its
// lane's order, and the reap reads the ended ids of a round in one page
// of laneheldq, as long as the round's completions and reap+16 (it read a
// page of reap+16, then one four times longer: 88 LRANGEs in these 48
// calls; layout 2 read pages of 18: 129 LRANGEs and 164 SMISMEMBERs).
func TestLaneCallsPerJob(t *testing.T) {
	q := fresh(t, "lanecalls")
	ctx := tctx(t)
	const n, lanes = 2000, 200
	do(t, "CONFIG", "RESETSTAT")
	for c := 0; c < n; c += 100 {
		js := make([]LaneJob, 0, 100)
		for i := c; i < c+100; i++ {
			l := strconv.Itoa(i % lanes)
			js = append(js, LaneJob{Lane: "c" + l, Payload: []byte("c" + l + "/" + strconv.Itoa(i/lanes))})
		}
		_, err := q.LaneEnqueueMany(ctx, js)
		require.NoError(t, err)
	}
	var acks [4][]Ack
	next := map[string]int{}
	done, claims := 0, 0
	for idle := 0; idle < 2; {
		idle++
		for s := range acks {
			ok, js, err := q.LaneCompleteClaim(ctx, acks[s], 0, time.Minute, 50)
			require.NoError(t, err)
			require.NotContains(t, ok, false)
			claims++
			done += len(ok)
			acks[s] = acks[s][:0]
			for _, j := range js {
				lane, seq := parseLaneJob(t, j.Payload)
				require.Equal(t, next[lane], seq, "lane %s out of order", lane)
				next[lane]++
				acks[s] = append(acks[s], Ack{ID: j.ID, Token: j.Token})
				idle = 0
			}
		}
	}
	calls := innerCalls(t)
	stats := do(t, "INFO", "commandstats")
	require.Equal(t, n, done)
	t.Logf("%d server commands for %d lane jobs: %.2f a job", calls, n, float64(calls)/n)
	require.LessOrEqual(t, float64(calls)/n, 6.8, "server commands per lane job")
	_, rest, ok := strings.Cut(stats, "cmdstat_lrange:calls=")
	require.True(t, ok, stats)
	lr, _, _ := strings.Cut(rest, ",")
	pages, err := strconv.Atoi(lr)
	require.NoError(t, err)
	t.Logf("%d laneheldq pages in %d lane_claim calls", pages, claims)
	require.LessOrEqual(t, pages, claims, "one laneheldq page per lane_claim call (its first page spans the round's ended ids)")
}

// TestLaneDrainedLaneLeavesRing: a lane whose last waiting job was
// claimed (its state's waiting count 0) does not rejoin the ring when
// that job completes, so no later claim pops its empty list (layout 2
// put every freed lane back unread and paid an LPOP to find it empty:
// one wasted call a job when consumers outpace the producer); a job
// enqueued later puts it back, and it runs once.
func TestLaneDrainedLaneLeavesRing(t *testing.T) {
	q := fresh(t, "lanedrained")
	ctx := tctx(t)
	const lanes = 20
	_, err := q.LaneEnqueueMany(ctx, laneRound("d", lanes, 0))
	require.NoError(t, err)
	got := claimLane(t, q, 100)
	require.Len(t, got, lanes)
	acks := make([]Ack, 0, lanes)
	for _, j := range got {
		acks = append(acks, Ack{ID: j.ID, Token: j.Token})
	}
	ok, _, err := q.LaneCompleteClaim(ctx, acks, 0, time.Minute, 0)
	require.NoError(t, err)
	require.NotContains(t, ok, false)
	require.Equal(t, "0", do(t, "LLEN", q.keys.Base+"lanering"), "drained lanes stay out of the ring")
	require.Equal(t, "1", do(t, "HLEN", q.keys.Base+"lanestate"), "idle lanes' states dropped (only '#table')")
	do(t, "CONFIG", "RESETSTAT")
	require.Empty(t, claimLane(t, q, 100))
	_, rest, _ := strings.Cut(do(t, "INFO", "commandstats"), "cmdstat_lpop:calls=")
	pops, _, _ := strings.Cut(rest, ",")
	require.Equal(t, "3", pops, "laneend, laneadmit and the empty ring: no lane list popped")
	_, err = q.LaneEnqueueMany(ctx, laneRound("d", lanes, 1))
	require.NoError(t, err)
	got = claimLane(t, q, 100)
	require.Len(t, got, lanes)
	for _, j := range got {
		_, seq := parseLaneJob(t, j.Payload)
		require.Equal(t, 1, seq)
	}
}

// laneRound is job s of each of lanes lanes prefix0, prefix1, ...: payload
// "<lane>/<s>".
func laneRound(prefix string, lanes, s int) []LaneJob {
	js := make([]LaneJob, 0, lanes)
	for l := range lanes {
		lane := prefix + strconv.Itoa(l)
		js = append(js, LaneJob{Lane: lane, Payload: []byte(lane + "/" + strconv.Itoa(s))})
	}
	return js
}

// TestLaneLayout2Refused: a queue that still holds layout 2's occupant
// keys is refused by lane_enqueue and lane_claim with EMQLAYOUT
// (ErrLayout), and nothing is written: layout 3 would strand the lane
// jobs running or waiting there.
func TestLaneLayout2Refused(t *testing.T) {
	for _, key := range []string{"laneocc", "laneoccq"} {
		t.Run(key, func(t *testing.T) {
			q := fresh(t, "lanel2"+key)
			ctx := tctx(t)
			_, err := q.LaneEnqueueMany(ctx, []LaneJob{{Lane: "a", Payload: []byte("a0")}})
			require.NoError(t, err)
			if key == "laneocc" {
				do(t, "SADD", q.keys.Base+key, "JOB-old")
			} else {
				do(t, "RPUSH", q.keys.Base+key, "JOB-old\na")
			}
			before := do(t, "HGETALL", q.keys.Base+"lanestate")
			_, err = q.LaneEnqueueMany(ctx, []LaneJob{{Lane: "a", Payload: []byte("a1")}})
			require.ErrorIs(t, err, ErrLayout)
			require.ErrorContains(t, err, "EMQLAYOUT")
			_, err = q.LaneClaim(ctx, time.Minute, 10)
			require.ErrorIs(t, err, ErrLayout)
			require.Equal(t, before, do(t, "HGETALL", q.keys.Base+"lanestate"), "no lane state written")
			require.Equal(t, "1", do(t, "ZCARD", q.keys.Delayed), "the first job alone, still parked")
			require.Equal(t, "0", do(t, "ZCARD", q.keys.Active), "nothing claimed")
			do(t, "DEL", q.keys.Base+key)
			require.Len(t, claimLane(t, q, 10), 1, "the queue runs once the key is gone")
		})
	}
}

// TestLaneNoListpacks: lane_enqueue leaves delayed, and lane_claim
// active, a skiplist, and lane_claim laneheld a hash table, even when
// they hold a few members (the server's listpack encodings scan their
// members on every insert and lookup: 17% of a lane job's server
// instructions in emqbench lanes for the zsets, 10% for laneheld, all
// small and recreated often there), and the member that converts them
// is gone: each holds exactly the jobs, and a later call (already
// converted) adds no member either.
func TestLaneNoListpacks(t *testing.T) {
	q := fresh(t, "laneskip")
	ctx := tctx(t)
	jobsOnly := func(k string, want int) {
		t.Helper()
		require.Equal(t, "skiplist", do(t, "OBJECT", "ENCODING", k))
		ms := strings.Fields(do(t, "ZRANGE", k, "0", "-1"))
		require.Len(t, ms, want, k)
		for _, m := range ms {
			require.True(t, strings.HasPrefix(m, "JOB"), "%s holds %q", k, m)
		}
	}
	_, err := q.LaneEnqueueMany(ctx, laneRound("s", 3, 0))
	require.NoError(t, err)
	jobsOnly(q.keys.Delayed, 3)
	require.Len(t, claimLane(t, q, 10), 3, "one job of each idle cap-1 lane")
	jobsOnly(q.keys.Active, 3)
	held := q.keys.Base + "laneheld"
	require.Equal(t, "hashtable", do(t, "OBJECT", "ENCODING", held))
	require.Len(t, strings.Fields(do(t, "HKEYS", held)), 3)
	for _, m := range strings.Fields(do(t, "HKEYS", held)) {
		require.True(t, strings.HasPrefix(m, "JOB"), "laneheld holds %q", m)
	}
	require.Equal(t, "0", do(t, "EXISTS", q.keys.Delayed), "delayed emptied")
	for s := 1; s <= 2; s++ { // recreated, then already a skiplist
		_, err = q.LaneEnqueueMany(ctx, laneRound("s", 3, s))
		require.NoError(t, err)
		jobsOnly(q.keys.Delayed, 3*s)
	}
	require.Empty(t, claimLane(t, q, 10), "the lanes are at their cap")
	jobsOnly(q.keys.Active, 3)
}

// TestLaneHeadInRing (layout 4): the first job given an idle, empty lane
// is held by the lane's ring entry '{k{id', not pushed to lane:<k>; the
// lane's later jobs queue behind it in lane:<k>, in order; the claim
// takes the held job without popping the list (no LPOP of lane:<k>); a
// held job deleted meanwhile is skipped and the lane served on from its
// list; an entry popped for a halted lane puts its job back at the
// lane's head, where LaneResume finds it.
func TestLaneHeadInRing(t *testing.T) {
	q := fresh(t, "laneheadring")
	ctx := tctx(t)
	b := q.keys.Base
	enq := func(lane, p string) string {
		t.Helper()
		ids, err := q.LaneEnqueue(ctx, lane, LaneOptions{}, []byte(p))
		require.NoError(t, err)
		return ids[0]
	}
	a1 := enq("a", "a/0")
	require.Equal(t, []string{"{a{" + a1}, strings.Fields(do(t, "LRANGE", b+"lanering", "0", "-1")))
	require.Equal(t, "0", do(t, "EXISTS", b+"lane:a"))
	a2 := enq("a", "a/1")
	require.Equal(t, []string{a2}, strings.Fields(do(t, "LRANGE", b+"lane:a", "0", "-1")))
	require.Equal(t, "1", do(t, "LLEN", b+"lanering"), "the lane once in the ring")
	li, err := q.Lane(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, int64(2), li.Waiting)

	do(t, "CONFIG", "RESETSTAT")
	got := claimLane(t, q, 10)
	require.Len(t, got, 1, "cap 1")
	require.Equal(t, a1, got[0].ID)
	// laneend, laneadmit and the ring twice (the second finds it empty):
	// no LPOP of lane:a
	require.Contains(t, do(t, "INFO", "commandstats"), "cmdstat_lpop:calls=4,")
	done, next, err := q.LaneCompleteClaim(ctx, []Ack{{ID: a1, Token: got[0].Token}}, 0, time.Minute, 10)
	require.NoError(t, err)
	require.Equal(t, []bool{true}, done)
	require.Len(t, next, 1)
	require.Equal(t, a2, next[0].ID)

	// a held job deleted before its claim is skipped; its lane goes on
	c1 := enq("c", "c/0")
	c2 := enq("c", "c/1")
	_, err = q.Delete(ctx, c1)
	require.NoError(t, err)
	got = claimLane(t, q, 10)
	require.Len(t, got, 1)
	require.Equal(t, c2, got[0].ID)

	// an entry of a halted lane (made by hand: the scripts make none)
	// gives its job back to the lane's head
	h1 := enq("h", "h/0")
	do(t, "HSET", b+"lanestate", "h", "3") // R + H
	got = claimLane(t, q, 10)
	require.Empty(t, got)
	require.Equal(t, []string{h1}, strings.Fields(do(t, "LRANGE", b+"lane:h", "0", "-1")))
	require.Equal(t, strconv.FormatInt(2+8589934592, 10), do(t, "HGET", b+"lanestate", "h"), "halted, out of the ring, one waiting")
	ok, err := q.LaneResume(ctx, "h")
	require.NoError(t, err)
	require.True(t, ok)
	got = claimLane(t, q, 10)
	require.Len(t, got, 1)
	require.Equal(t, h1, got[0].ID)
}

// TestLaneClaimIdleCalls: a lane_claim that leases nothing reads no clock,
// and one of an even n (split evenly whatever the turn) counts no turn:
// the empty polls of idle consumers make neither TIME nor INCR; an odd n
// still alternates the odd job between the two sides.
func TestLaneClaimIdleCalls(t *testing.T) {
	q := fresh(t, "laneidle")
	do(t, "CONFIG", "RESETSTAT")
	require.Empty(t, claimLane(t, q, 10))
	stats := do(t, "INFO", "commandstats")
	require.NotContains(t, stats, "cmdstat_time:")
	require.NotContains(t, stats, "cmdstat_incr:")
	require.Empty(t, claimLane(t, q, 3))
	require.Contains(t, do(t, "INFO", "commandstats"), "cmdstat_incr:calls=1,")
}

// TestLaneStateWrittenAsDigits: the lane scripts hand a lane's packed
// state to HSET as a Lua number (no string.format per lane); the server
// must write it as its exact digits up to the largest state (cap and
// weight 1000, the waiting count saturated: just under 2^53), which the
// scripts and Lane read back with tonumber and ParseInt.
func TestLaneStateWrittenAsDigits(t *testing.T) {
	q := fresh(t, "digits")
	ctx := tctx(t)
	const cnt, maxc = 8589934592, 1048575
	base := int64(8192*999 + 8388608*999 + cnt*maxc) // cap, weight 1000, n saturated, idle
	do(t, "HSET", q.keys.Base+"lanestate", "big", strconv.FormatInt(base, 10))
	_, err := q.LaneEnqueue(ctx, "big", LaneOptions{}, []byte("p"))
	require.NoError(t, err)
	// lane_enqueue: into the lane's list (it is not empty), R set
	require.Equal(t, strconv.FormatInt(base+1, 10), do(t, "HGET", q.keys.Base+"lanestate", "big"))
	js, err := q.LaneClaim(ctx, time.Minute, 2)
	require.NoError(t, err)
	require.Len(t, js, 1)
	// lane_claim: one occupant; the call's second turn of the lanes
	// finds its list empty (a short pop: n is 0, not the saturated count
	// it had, which made every freeing of the lane put it back in the
	// ring to be found empty again) and leaves it out of the ring
	require.Equal(t, strconv.FormatInt(base-cnt*maxc+4, 10), do(t, "HGET", q.keys.Base+"lanestate", "big"))
	require.Equal(t, "0", do(t, "LLEN", q.keys.Base+"lanering"))
	li, err := q.Lane(ctx, "big")
	require.NoError(t, err)
	require.Equal(t, int64(1), li.Running)
}
