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
	for _, s := range emq.Scripts() {
		if s.Name == name && s.Core {
			cmd := append([]any{"EVAL", s.Source, strconv.Itoa(len(keys))}, toAny(keys)...)
			v, err := c.Do(tctx(t), append(cmd, toAny(args)...)...)
			if err != nil {
				t.Fatalf("core %s: %v", name, err)
			}
			n, _ := v.AsInt()
			return n
		}
	}
	t.Fatalf("no core script %s", name)
	return 0
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
	// No recheck by the clock but the lease rule's: only what is heard.
	for v, d := range map[*time.Duration]time.Duration{&WaitRecheck: time.Hour, &WaitReapGrace: grace} {
		old := *v
		*v = d
		t.Cleanup(func() { *v = old })
	}
	cl := newClient(t, c)
	ctx := tctx(t)
	info, err := cl.Enqueue(ctx, NewTask("peer", nil), Retention(time.Minute), MaxRetries(0))
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
	before := hmgetCalls(t, c)
	errs := make(chan error, 1)
	go func() {
		_, err := cl.Wait(ctx, DefaultQueue, info.ID)
		errs <- err
	}()
	waitFor(t, "the Wait's first read", func() bool { return hmgetCalls(t, c) > before })
	return q, info.ID, errs
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
