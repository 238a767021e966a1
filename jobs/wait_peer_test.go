package jobs

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
)

// peerCore runs the canonical core script name straight from its source
// (EVAL), as a peer that knows nothing of the job system would.
func peerCore(t testing.TB, c conn.Sender, name string, keys []string, args ...string) int64 {
	t.Helper()
	cmd := append([]any{"EVAL", coreSource(t, name), strconv.Itoa(len(keys))}, toAny(keys)...)
	v, err := c.Do(tctx(t), append(cmd, toAny(args)...)...)
	if err != nil {
		t.Fatalf("core %s: %v", name, err)
	}
	n, _ := v.AsInt()
	return n
}

func toAny(s []string) []any {
	a := make([]any, len(s))
	for i := range s {
		a[i] = s[i]
	}
	return a
}

// hmgetCalls is how many HMGETs the server has run (INFO commandstats):
// a Wait's read of the row is one.
func hmgetCalls(t testing.TB, c conn.Sender) int64 {
	t.Helper()
	v, err := c.Do(tctx(t), "INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(v.Str), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_hmget:calls="); ok {
			n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			return n
		}
	}
	return 0
}

// keyspaceEvents sets the server's notify-keyspace-events to flags for
// the test, restoring it after.
func keyspaceEvents(t testing.TB, c conn.Sender, flags string) {
	t.Helper()
	v, err := c.Do(tctx(t), "CONFIG", "GET", "notify-keyspace-events")
	if err != nil || len(v.Elems) != 2 {
		t.Fatalf("CONFIG GET: %v %v", v, err)
	}
	old := string(v.Elems[1].Str)
	if _, err := c.Do(tctx(t), "CONFIG", "SET", "notify-keyspace-events", flags); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Do(context.Background(), "CONFIG", "SET", "notify-keyspace-events", old) })
}

// peerWait enqueues a waitable job, has a peer claim it with the core
// claim for lease, and starts a Wait on it (WaitRecheck an hour,
// WaitReapGrace grace); it returns once the Wait has
// read the job active (its HMGET ran), with the job and the Wait's
// outcome.
func peerWait(t *testing.T, c *conn.Conn, lease, grace time.Duration) (*emq.Queue, string, chan error) {
	t.Helper()
	cl := peerClient(t, c, grace)
	info, err := cl.Enqueue(tctx(t), NewTask("peer", nil), Retention(time.Minute), MaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	q := openQueue(t, c, DefaultQueue)
	k := q.Keys()
	if n := peerCore(t, c, "claim", []string{k.Pending, k.Active, k.Base}, strconv.FormatInt(lease.Milliseconds(), 10)); n != 0 {
		t.Fatalf("claim: %d", n)
	}
	if r := row(t, q, info.ID); r.State != emq.StateActive {
		t.Fatalf("row %+v", r)
	}
	return q, info.ID, startWait(t, c, cl, info.ID)
}

// peerClient returns a Client that can Wait, with WaitRecheck and
// WaitPendingRecheck an hour (no recheck by the clock but the lease
// rule's: only what is heard) and WaitReapGrace grace.
func peerClient(t *testing.T, c *conn.Conn, grace time.Duration) *Client {
	t.Helper()
	setWaitTimes(t, map[*time.Duration]time.Duration{&WaitRecheck: time.Hour, &WaitPendingRecheck: time.Hour, &WaitReapGrace: grace})
	return newClient(t, c)
}

// setWaitTimes sets each of Wait's pauses to its value for the test,
// restoring them after.
func setWaitTimes(t testing.TB, to map[*time.Duration]time.Duration) {
	for v, d := range to {
		old := *v
		*v = d
		t.Cleanup(func() { *v = old })
	}
}

// startWait starts cl's Wait on job id of the default queue and returns
// its outcome once the Wait has read the job (its HMGET ran).
func startWait(t *testing.T, c *conn.Conn, cl *Client, id string) chan error {
	t.Helper()
	before := hmgetCalls(t, c)
	errs := make(chan error, 1)
	go func() {
		_, err := cl.Wait(tctx(t), DefaultQueue, id)
		errs <- err
	}()
	waitFor(t, "the Wait's first read", func() bool { return hmgetCalls(t, c) > before })
	return errs
}

// peerClaimComplete has a peer claim the head of the default queue with
// the core claim (a lease of 2 s) and complete it with the core
// complete, checking that the head was id: neither announces anything.
// A Wait that reads the job between the two calls sees it leased, and
// pauses until the lease's end: 2 s, not the hour a longer lease would
// make it sleep (the test timed out so in 1 of 4 CI runs, and twice in
// runs at load 8–10).
func peerClaimComplete(t *testing.T, c *conn.Conn, q *emq.Queue, id string) {
	t.Helper()
	k := q.Keys()
	v, err := c.Do(tctx(t), "EVAL", coreSource(t, "claim"), "3", k.Pending, k.Active, k.Base, "2000")
	if err != nil || len(v.Elems) != 3 || string(v.Elems[0].Str) != id {
		t.Fatalf("core claim: %v, %v; want job %s", v, err, id)
	}
	token, _ := v.Elems[2].AsInt()
	if n := peerCore(t, c, "complete", []string{k.Active, k.Job(id)}, id, strconv.FormatInt(token, 10), "60000"); n != 1 {
		t.Fatalf("core complete: %d", n)
	}
}

// coreSource is the source of the canonical core script name.
func coreSource(t testing.TB, name string) string {
	t.Helper()
	for _, s := range emq.Scripts() {
		if s.Name == name && s.Core {
			return s.Source
		}
	}
	t.Fatalf("no core script %s", name)
	return ""
}

// TestWaitSeesPeerCoreClaimOfPending: with keyspace notifications off, a
// job Wait read pending that a peer's core claim takes and its core
// complete ends (announcing nothing), the Wait never seeing it active,
// is seen by the pending recheck (WaitPendingRecheck, here 20 ms,
// doubling), though WaitRecheck is an hour. Before, the Wait slept until
// its recheck.
func TestWaitSeesPeerCoreClaimOfPending(t *testing.T) {
	c := fresh(t)
	keyspaceEvents(t, c, "")
	cl := peerClient(t, c, time.Hour)
	WaitPendingRecheck = 20 * time.Millisecond // peerClient restores it
	info, err := cl.Enqueue(tctx(t), NewTask("peer", nil), Retention(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	q := openQueue(t, c, DefaultQueue)
	errs := startWait(t, c, cl, info.ID)
	peerClaimComplete(t, c, q, info.ID)
	if err := recv(t, errs); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if r := row(t, q, info.ID); r.State != emq.StateCompleted {
		t.Fatalf("row %+v", r)
	}
}

// TestWaitSeesPeerCoreClaimOfDelayed: with keyspace notifications off, a
// job Wait read delayed that, once due, a peer's core promote moves to
// pending and its core claim and complete end (announcing nothing) is
// seen: Wait reads it again at its due time (the delayed set's score),
// then as a pending job (WaitPendingRecheck 20 ms). Before, the Wait
// slept until its recheck (an hour).
func TestWaitSeesPeerCoreClaimOfDelayed(t *testing.T) {
	c := fresh(t)
	keyspaceEvents(t, c, "")
	cl := peerClient(t, c, time.Hour)
	WaitPendingRecheck = 20 * time.Millisecond // peerClient restores it
	info, err := cl.Enqueue(tctx(t), NewTask("peer", nil), Retention(time.Minute), ProcessIn(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	q := openQueue(t, c, DefaultQueue)
	k := q.Keys()
	errs := startWait(t, c, cl, info.ID)
	if r := row(t, q, info.ID); r.State != emq.StateDelayed {
		t.Fatalf("row %+v", r)
	}
	waitFor(t, "the peer's promote of the due job", func() bool {
		return peerCore(t, c, "promote", []string{k.Delayed, k.Pending, k.Base}, "100") > 0
	})
	peerClaimComplete(t, c, q, info.ID)
	if err := recv(t, errs); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

// TestWaitPace: Wait's schedule when nothing is heard. Waiting for a
// claim, the pause starts at WaitPendingRecheck and doubles up to
// WaitRecheck; a score ahead (a lease deadline, a due time) is the pause
// itself and starts both backoffs again; past a lease deadline the pause
// is the reap grace, doubling; no pause is ever over WaitRecheck or
// under zero.
func TestWaitPace(t *testing.T) {
	setWaitTimes(t, map[*time.Duration]time.Duration{&WaitRecheck: time.Second, &WaitReapGrace: 30 * time.Millisecond, &WaitPendingRecheck: 100 * time.Millisecond})
	const ms = time.Millisecond
	type read struct {
		st     emq.State
		left   time.Duration
		scored bool
		want   time.Duration
	}
	p := newWaitPace()
	for i, r := range []read{
		{emq.StatePending, 0, false, 100 * ms},
		{emq.StatePending, 0, false, 200 * ms},
		{emq.StatePending, 0, false, 400 * ms},
		{emq.StatePending, 0, false, 800 * ms},
		{emq.StatePending, 0, false, time.Second},
		{emq.StatePending, 0, false, time.Second},
		{emq.StateDelayed, 300 * ms, true, 300 * ms}, // not yet due
		{emq.StateDelayed, -5 * ms, true, 100 * ms},  // due, not yet promoted
		{emq.StateDelayed, 0, false, 200 * ms},       // parked (a lane job)
		{emq.StateDelayed, time.Hour, true, time.Second},
		{emq.StatePending, 0, false, 100 * ms},
		{emq.StateActive, 500 * ms, true, 500 * ms}, // leased
		{emq.StateActive, -1 * ms, true, 30 * ms},   // reap due
		{emq.StateActive, -1 * ms, true, 60 * ms},
		{emq.StateActive, 0, false, 120 * ms},     // active, no lease, twice
		{emq.StatePending, 0, false, 100 * ms},    // reaped to pending
		{emq.StateActive, -1 * ms, true, 30 * ms}, // claimed again, reap due
		{emq.StateActive, 2 * time.Hour, true, time.Second},
		{emq.StatePending, 0, false, 100 * ms},
	} {
		if got := p.next(r.st, r.left, r.scored); got != r.want {
			t.Fatalf("read %d (%s, %v, %v): pause %v, want %v", i, r.st, r.left, r.scored, got, r.want)
		}
	}
}

// TestWaitSeesPeerCoreCompleteByKeyspace: with keyspace notifications on
// (Khg), a job completed by a peer's core complete, which announces
// nothing, ends the Wait that read it active before: the row's hset is
// heard on its keyspace channel. Before, the Wait slept until its
// recheck (here an hour; the lease too is an hour).
func TestWaitSeesPeerCoreCompleteByKeyspace(t *testing.T) {
	c := fresh(t)
	keyspaceEvents(t, c, "Khg")
	q, id, errs := peerWait(t, c, time.Hour, time.Hour)
	k := q.Keys()
	if n := peerCore(t, c, "complete", []string{k.Active, k.Job(id)}, id, "1", "60000"); n != 1 {
		t.Fatalf("core complete: %d", n)
	}
	if err := recv(t, errs); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

// TestWaitSeesPeerCoreCompleteByLease: with keyspace notifications off,
// a job a peer's core complete ends while Wait waits is seen by its lease
// deadline: Wait read it active with 300 ms of lease left and reads it
// again then (the deadline read over RESP3, a double, and RESP2, a bulk
// string). Before, it slept until its recheck (an hour).
func TestWaitSeesPeerCoreCompleteByLease(t *testing.T) {
	admin := fresh(t)
	keyspaceEvents(t, admin, "")
	for _, proto := range []int{3, 2} {
		c, err := conn.Dial(tctx(t), conn.Options{Addr: srv.Addr, Protocol: proto})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		q, id, errs := peerWait(t, c, 300*time.Millisecond, time.Hour)
		k := q.Keys()
		if n := peerCore(t, c, "complete", []string{k.Active, k.Job(id)}, id, "1", "60000"); n != 1 {
			t.Fatalf("core complete: %d", n)
		}
		if err := recv(t, errs); err != nil {
			t.Fatalf("RESP%d: Wait: %v", proto, err)
		}
	}
}

// TestWaitSeesPeerCoreReap: with keyspace notifications off, a job whose
// lease ran out and that a peer's core reap ends dead (announcing
// nothing) after its deadline is seen by the Wait that read it active:
// it reads the job again at the deadline and, finding it still active,
// after WaitReapGrace (here 20 ms), doubling. Then with notifications on,
// the same is heard at once (the grace an hour). Before, the Wait slept
// until its recheck (an hour).
func TestWaitSeesPeerCoreReap(t *testing.T) {
	c := fresh(t)
	for _, flags := range []string{"", "Khg"} {
		keyspaceEvents(t, c, flags)
		grace := time.Hour
		if flags == "" {
			grace = 20 * time.Millisecond
		}
		q, id, errs := peerWait(t, c, 100*time.Millisecond, grace)
		k := q.Keys()
		// The peer's reap runs once the lease has run out on the
		// server's clock; it reaps oldest first, so it is run until this
		// job has left active (not until it reaped one: another job of
		// the queue may be the one it took).
		waitFor(t, "the lease to run out", func() bool {
			peerCore(t, c, "reap", []string{k.Active, k.Pending, k.Dead, k.Base}, "100", "1")
			return row(t, q, id).State != emq.StateActive
		})
		err := recv(t, errs)
		var je *JobError
		if !errors.As(err, &je) || je.ID != id || !errors.Is(err, ErrDead) {
			t.Fatalf("flags %q: Wait: %v, want the job's *JobError", flags, err)
		}
		if r := row(t, q, id); r.State != emq.StateDead {
			t.Fatalf("row %+v", r)
		}
	}
}
