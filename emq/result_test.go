package emq

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestFinish: finish completes a claimed job with its result kept beside
// the row for the retention, and ends another in dead with its error, in
// one call; a stale token writes nothing; each end is published.
func TestFinish(t *testing.T) {
	q := fresh(t, "fin")
	ctx := tctx(t)
	a, _ := q.Enqueue(ctx, []byte("a"))
	b, _ := q.Enqueue(ctx, []byte("b"))
	jobs, err := q.ClaimBatch(ctx, time.Minute, 2)
	if err != nil || len(jobs) != 2 {
		t.Fatal(jobs, err)
	}
	done, err := q.Finish(ctx, []Finish{
		{Kind: FinishComplete, ID: a, Token: 1, Retention: time.Minute, Data: []byte("res\x00ult")},
		{Kind: FinishDead, ID: b, Token: 1, Data: []byte("boom")},
		{Kind: FinishComplete, ID: a, Token: 1, Retention: time.Minute, Data: []byte("again")},
	})
	if err != nil || len(done) != 3 || !done[0] || !done[1] || done[2] {
		t.Fatalf("Finish: %v, %v", done, err)
	}
	if r := row(t, q, a); r["state"] != "completed" || r["attempts"] != "1" {
		t.Fatalf("row a %v", r)
	}
	if res, ok, err := q.Result(ctx, a); err != nil || !ok || string(res) != "res\x00ult" {
		t.Fatalf("Result: %q, %v, %v", res, ok, err)
	}
	if ttl := do(t, "PTTL", q.keys.ResultKey(a)); ttl == "-1" || strings.HasPrefix(ttl, "-") {
		t.Fatalf("result PTTL %s", ttl)
	}
	if r := row(t, q, b); r["state"] != "dead" || r["error"] != "boom" || score(t, q.keys.Dead, b) == "" {
		t.Fatalf("row b %v", r)
	}
	if n := do(t, "ZCARD", q.keys.Active); n != "0" {
		t.Fatalf("active %s", n)
	}
}

// TestFinishRefusesBadArgs: a malformed count, kind or retention is
// refused by the script with EMQARG before anything is written, and the
// verb refuses a bad kind or id host-side.
func TestFinishRefusesBadArgs(t *testing.T) {
	q := fresh(t, "fin")
	ctx := tctx(t)
	id, _ := q.Enqueue(ctx, []byte("a"))
	q.Claim(ctx, time.Minute)
	src := source("finish")
	k := q.keys
	for _, argv := range [][]string{
		{"x"}, {"-1"}, {"1"}, {"1", id, "1", "z", "1000", "r"}, {"1", id, "1", "c", "0", "r"}, {"1", id, "1", "c", "1.5", "r"},
		{"2", id, "1", "c", "1000", "r", id, "1", "q", "1000", "r"},
	} {
		args := append([]string{"EVAL", src, "3", k.Active, k.Dead, k.Base}, argv...)
		if out, err := srv.Do(args...); err == nil || !strings.HasPrefix(err.Error(), "EMQARG") {
			t.Errorf("%v: %q, %v", argv, out, err)
		}
	}
	if r := row(t, q, id); r["state"] != "active" {
		t.Fatalf("row written: %v", r)
	}
	if _, err := q.Finish(ctx, []Finish{{Kind: 9, ID: id, Token: 1}}); !errors.Is(err, ErrArg) {
		t.Fatalf("bad kind: %v", err)
	}
	if _, err := q.Finish(ctx, []Finish{{Kind: FinishDead, ID: "x", Token: 1}}); !errors.Is(err, ErrInvalidID) {
		t.Fatalf("bad id: %v", err)
	}
}

// TestCancelScript: cancel ends a pending, delayed or active job as dead
// with the error, out of its set (an active one's token stale then), and
// refuses a finished job or none, writing nothing.
func TestCancelScript(t *testing.T) {
	q := fresh(t, "can")
	ctx := tctx(t)
	p, _ := q.Enqueue(ctx, []byte("p"))
	a, _ := q.Enqueue(ctx, []byte("a"))
	d, _ := q.EnqueueIn(ctx, time.Hour, []byte("d"))
	job, _, _ := q.Claim(ctx, time.Minute) // p
	if job.ID != p {
		t.Fatal("claimed", job.ID)
	}
	for id, want := range map[string]State{p: StateActive, a: StatePending, d: StateDelayed} {
		was, err := q.Cancel(ctx, id, "cancelled")
		if err != nil || was != want {
			t.Fatalf("%s: %v, %v; want %v", id, was, err, want)
		}
		if r := row(t, q, id); r["state"] != "dead" || r["error"] != "cancelled" || score(t, q.keys.Dead, id) == "" {
			t.Fatalf("%s: row %v", id, r)
		}
	}
	if err := q.Complete(ctx, p, job.Token, 0); !errors.Is(err, ErrStale) {
		t.Fatalf("complete after cancel: %v", err)
	}
	if err := q.Extend(ctx, p, job.Token, time.Minute); !errors.Is(err, ErrStale) {
		t.Fatalf("extend after cancel: %v", err)
	}
	st, _ := q.Stats(ctx)
	if st.Pending != 0 || st.Active != 0 || st.Delayed != 0 || st.Dead != 3 {
		t.Fatalf("stats %+v", st)
	}
	if was, err := q.Cancel(ctx, p, "cancelled"); !errors.Is(err, ErrFinished) || was != StateDead {
		t.Fatalf("cancel of dead: %v, %v", was, err)
	}
	c, _ := q.Enqueue(ctx, []byte("c"))
	j, _, _ := q.Claim(ctx, time.Minute)
	q.Complete(ctx, j.ID, j.Token, time.Minute)
	if was, err := q.Cancel(ctx, c, "cancelled"); !errors.Is(err, ErrFinished) || was != StateCompleted {
		t.Fatalf("cancel of completed: %v, %v", was, err)
	}
	if r := row(t, q, c); r["state"] != "completed" || r["error"] != "" {
		t.Fatalf("completed row changed: %v", r)
	}
	if _, err := q.Cancel(ctx, "JOB0KHTOWnGLuC", "cancelled"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cancel of none: %v", err)
	}
}

// TestWorkerRegistry: worker_beat registers a worker with its fields and
// the server's time, workers lists it, ttl 0 removes it; a malformed ttl
// is EMQARG and writes nothing.
func TestWorkerRegistry(t *testing.T) {
	q := fresh(t, "reg")
	ctx := tctx(t)
	now, err := q.Heartbeat(ctx, "w1", time.Minute, "host", "h", "pid", "1")
	if err != nil || now.IsZero() {
		t.Fatal(now, err)
	}
	ws, err := q.Workers(ctx, 10)
	if err != nil || len(ws) != 1 || ws[0].ID != "w1" || ws[0].Fields["host"] != "h" || ws[0].Fields["heartbeat"] == "" {
		t.Fatalf("Workers: %+v, %v", ws, err)
	}
	if _, err := q.Heartbeat(ctx, "w1", 0); err != nil {
		t.Fatal(err)
	}
	if ws, _ := q.Workers(ctx, 10); len(ws) != 0 {
		t.Fatalf("after leave: %+v", ws)
	}
	k := q.keys
	for _, argv := range [][]string{{"w", "x"}, {"w", "-1"}, {"w", "1.5"}, {"w", "100", "odd"}} {
		args := append([]string{"EVAL", source("worker_beat"), "2", k.WorkersKey(), k.Base}, argv...)
		if out, err := srv.Do(args...); err == nil || !strings.HasPrefix(err.Error(), "EMQARG") {
			t.Errorf("%v: %q, %v", argv, out, err)
		}
	}
	if do(t, "EXISTS", k.WorkersKey(), k.Base+"worker:w") != "0" {
		t.Fatal("a refused beat wrote")
	}
	if _, err := q.Workers(ctx, 0); !errors.Is(err, ErrArg) {
		t.Fatalf("Workers(0): %v", err)
	}
}
