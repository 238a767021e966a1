package emq

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/resp"
)

func TestEnqueueRowAndDuplicate(t *testing.T) {
	q := fresh(t, "orders")
	ctx := tctx(t)
	id, err := q.Enqueue(ctx, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if !ValidID(id) || Namespace(id) != JobNamespace {
		t.Fatalf("minted id %q", id)
	}
	got := row(t, q, id)
	want := map[string]string{"state": "pending", "attempts": "0", "payload": "hello"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("row = %v, want %v", got, want)
	}
	if s := score(t, "emq:{orders}:pending", id); s != "0" {
		t.Fatalf("ZSCORE pending = %q, want 0", s)
	}

	ok, err := q.EnqueueID(ctx, id, []byte("other"))
	if err != nil || ok {
		t.Fatalf("duplicate EnqueueID = %v, %v; want false, nil", ok, err)
	}
	if p := row(t, q, id)["payload"]; p != "hello" {
		t.Fatalf("duplicate overwrote payload: %q", p)
	}

	id2, err := q.Enqueue(ctx, nil)
	if err != nil || id2 <= id {
		t.Fatalf("second id %q (err %v) not after %q", id2, err, id)
	}
	if p, ok := row(t, q, id2)["payload"]; !ok || p != "" {
		t.Fatalf("empty payload row = %v", row(t, q, id2))
	}
	if n, err := q.PendingSize(ctx); n != 2 || err != nil {
		t.Fatalf("PendingSize = %d, %v", n, err)
	}
}

func TestEnqueueWrongNamespace(t *testing.T) {
	q := fresh(t, "orders")
	id := "QTE0KHTOWnGLuC"
	ok, err := q.EnqueueID(tctx(t), id, []byte("x"))
	if ok || err == nil {
		t.Fatalf("EnqueueID(%s) = %v, %v", id, ok, err)
	}
	if err.Error() != "EMQKIND job id must be JOB-namespaced" {
		t.Fatalf("error text %q", err.Error())
	}
	if !errors.Is(err, ErrKind) || errors.Is(err, ErrArg) {
		t.Fatalf("errors.Is(ErrKind) false for %v", err)
	}
	var se *resp.ServerError
	var sce *ScriptError
	if !errors.As(err, &se) || !errors.As(err, &sce) || sce.Script != "enqueue" {
		t.Fatalf("not a *ScriptError wrapping *resp.ServerError: %#v", err)
	}
	if n := do(t, "EXISTS", q.keys.Job(id)); n != "0" {
		t.Fatal("a row was written")
	}
	// enqueue_at has the same gate.
	_, err = q.EnqueueIDIn(tctx(t), id, time.Second, nil)
	if err == nil || err.Error() != "EMQKIND job id must be JOB-namespaced" || !errors.Is(err, ErrKind) {
		t.Fatalf("EnqueueIDIn: %v", err)
	}
}

func TestClaimCompleteAndStale(t *testing.T) {
	q := fresh(t, "orders")
	ctx := tctx(t)
	id, err := q.Enqueue(ctx, []byte("p1"))
	require.NoError(t, err)
	before := serverMillis(t)
	job, ok, err := q.Claim(ctx, 30*time.Second)
	if err != nil || !ok {
		t.Fatalf("Claim = %v, %v", ok, err)
	}
	if job.ID != id || string(job.Payload) != "p1" || job.Token != 1 {
		t.Fatalf("job = %+v", job)
	}
	r := row(t, q, id)
	if r["state"] != "active" || r["attempts"] != "1" {
		t.Fatalf("row after claim %v", r)
	}
	if dl := scoreInt(t, q.keys.Active, id); dl < before+30000 || dl > serverMillis(t)+30000 {
		t.Fatalf("lease deadline %d not now+30s (now %d)", dl, before)
	}
	if score(t, q.keys.Pending, id) != "" {
		t.Fatal("still in pending")
	}

	if err := q.Complete(ctx, id, 2, 0); !errors.Is(err, ErrStale) {
		t.Fatalf("stale Complete = %v", err)
	}
	if row(t, q, id)["state"] != "active" {
		t.Fatal("stale complete wrote")
	}
	if err := q.Complete(ctx, id, job.Token, 0); err != nil {
		t.Fatal(err)
	}
	if do(t, "EXISTS", q.keys.Job(id)) != "0" || score(t, q.keys.Active, id) != "" {
		t.Fatal("row or active entry left after complete with retention 0")
	}
	if err := q.Complete(ctx, id, job.Token, 0); !errors.Is(err, ErrStale) {
		t.Fatalf("second Complete = %v", err)
	}

	// With retention the row stays, completed, expiring.
	id, err = q.Enqueue(ctx, []byte("p2"))
	require.NoError(t, err)
	job, ok, err = q.Claim(ctx, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	if err := q.Complete(ctx, id, job.Token, time.Hour); err != nil {
		t.Fatal(err)
	}
	if r := row(t, q, id); r["state"] != "completed" {
		t.Fatalf("row %v", r)
	}
	if ttl, _ := strconv.Atoi(do(t, "PTTL", q.keys.Job(id))); ttl <= 0 || ttl > 3600000 {
		t.Fatalf("PTTL = %d", ttl)
	}
}

func TestClaimEmptyGhostPaused(t *testing.T) {
	q := fresh(t, "orders")
	ctx := tctx(t)
	if _, ok, err := q.Claim(ctx, time.Second); ok || err != nil {
		t.Fatalf("empty Claim = %v, %v", ok, err)
	}
	ghost := "JOB0KHTOWnGLuC"
	do(t, "ZADD", q.keys.Pending, "0", ghost)
	if _, ok, err := q.Claim(ctx, time.Second); ok || err != nil {
		t.Fatalf("ghost Claim = %v, %v", ok, err)
	}
	if do(t, "EXISTS", q.keys.Job(ghost)) != "0" || do(t, "ZCARD", q.keys.Pending) != "0" ||
		do(t, "ZCARD", q.keys.Active) != "0" {
		t.Fatal("ghost claim minted a row or left an entry")
	}

	id, err := q.Enqueue(ctx, []byte("x"))
	require.NoError(t, err)
	if err := q.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if do(t, "HGET", q.keys.Meta, "paused") != "1" {
		t.Fatal("meta paused not 1")
	}
	p, err := q.Paused(ctx)
	require.NoError(t, err)
	require.True(t, p, "Paused")
	if _, ok, err := q.Claim(ctx, time.Second); ok || err != nil {
		t.Fatalf("paused Claim = %v, %v", ok, err)
	}
	if jobs, err := q.ClaimBatch(ctx, time.Second, 5); len(jobs) != 0 || err != nil {
		t.Fatalf("paused ClaimBatch = %v, %v", jobs, err)
	}
	if score(t, q.keys.Pending, id) != "0" {
		t.Fatal("paused claim popped the job")
	}
	if err := q.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if do(t, "HEXISTS", q.keys.Meta, "paused") != "0" {
		t.Fatal("paused field left")
	}
	if job, ok, err := q.Claim(ctx, time.Second); !ok || err != nil || job.ID != id {
		t.Fatalf("resumed Claim = %+v, %v, %v", job, ok, err)
	}
}

func TestRetryPendingDelayedDead(t *testing.T) {
	q := fresh(t, "orders")
	ctx := tctx(t)
	id, err := q.Enqueue(ctx, []byte("x"))
	require.NoError(t, err)

	job, ok, err := q.Claim(ctx, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	out, err := q.Retry(ctx, id, job.Token, 0, 3, "boom 1")
	if err != nil || out != RetryRequeued {
		t.Fatalf("Retry = %v, %v", out, err)
	}
	r := row(t, q, id)
	if r["state"] != "pending" || r["attempts"] != "1" || r["error"] != "boom 1" || score(t, q.keys.Pending, id) != "0" ||
		score(t, q.keys.Active, id) != "" {
		t.Fatalf("after requeue: row %v", r)
	}
	if _, err := q.Retry(ctx, id, job.Token, 0, 3, "again"); !errors.Is(err, ErrStale) {
		t.Fatalf("stale Retry = %v", err)
	}

	job, ok, err = q.Claim(ctx, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	before := serverMillis(t)
	out, err = q.Retry(ctx, id, job.Token, 10*time.Second, 3, "boom 2")
	if err != nil || out != RetryDelayed {
		t.Fatalf("Retry = %v, %v", out, err)
	}
	r = row(t, q, id)
	if r["state"] != "delayed" || r["attempts"] != "2" || r["error"] != "boom 2" {
		t.Fatalf("after delay: row %v", r)
	}
	if due := scoreInt(t, q.keys.Delayed, id); due < before+10000 || due > serverMillis(t)+10000 {
		t.Fatalf("due %d, now %d", due, before)
	}

	// Promote it by moving its due time into the server's past.
	do(t, "ZADD", q.keys.Delayed, strconv.FormatInt(serverMillis(t)-1, 10), id)
	if n, err := q.Promote(ctx, 10); n != 1 || err != nil {
		t.Fatalf("Promote = %d, %v", n, err)
	}
	job, ok, err = q.Claim(ctx, time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	if job.Token != 3 {
		t.Fatalf("token %d, want 3", job.Token)
	}
	before = serverMillis(t)
	out, err = q.Retry(ctx, id, job.Token, time.Second, 3, "boom 3")
	if err != nil || out != RetryDead {
		t.Fatalf("Retry = %v, %v", out, err)
	}
	r = row(t, q, id)
	if r["state"] != "dead" || r["attempts"] != "3" || r["error"] != "boom 3" {
		t.Fatalf("after dead: row %v", r)
	}
	if died := scoreInt(t, q.keys.Dead, id); died < before || died > serverMillis(t) {
		t.Fatalf("time of death %d", died)
	}
	for _, k := range []string{q.keys.Pending, q.keys.Active, q.keys.Delayed} {
		if score(t, k, id) != "" {
			t.Fatalf("dead id also in %s", k)
		}
	}
}

func TestPromoteByServerTime(t *testing.T) {
	q := fresh(t, "orders")
	ctx := tctx(t)
	now := serverMillis(t)
	due, err := q.EnqueueIn(ctx, 0, []byte("now"))
	require.NoError(t, err)
	later, err := q.EnqueueIn(ctx, time.Hour, []byte("later"))
	require.NoError(t, err)
	if r := row(t, q, later); r["state"] != "delayed" || r["attempts"] != "0" || r["payload"] != "later" {
		t.Fatalf("scheduled row %v", r)
	}
	if s := scoreInt(t, q.keys.Delayed, later); s < now+3600000 {
		t.Fatalf("due %d, want >= %d", s, now+3600000)
	}
	n, err := q.Promote(ctx, 100)
	if n != 1 || err != nil {
		t.Fatalf("Promote = %d, %v", n, err)
	}
	if row(t, q, due)["state"] != "pending" || score(t, q.keys.Pending, due) != "0" || score(t, q.keys.Delayed, due) != "" {
		t.Fatalf("promoted row %v", row(t, q, due))
	}
	if row(t, q, later)["state"] != "delayed" {
		t.Fatal("future job promoted")
	}
	// A due time in the server's future (an hour: no machine is slow
	// enough to reach it) is not due yet; in its past, it is.
	do(t, "ZADD", q.keys.Delayed, strconv.FormatInt(serverMillis(t)+3600000, 10), later)
	n, err = q.Promote(ctx, 100)
	require.NoError(t, err)
	require.Zero(t, n, "Promote moved a job not yet due")
	do(t, "ZADD", q.keys.Delayed, strconv.FormatInt(serverMillis(t)-1, 10), later)
	n, err = q.Promote(ctx, 100)
	require.NoError(t, err)
	require.Equal(t, 1, n, "Promote moved the job now due")
	at, err := q.EnqueueAt(ctx, time.Now().Add(-time.Second), []byte("past"))
	require.NoError(t, err)
	if row(t, q, at)["state"] != "delayed" {
		t.Fatal("EnqueueAt in the past not delayed")
	}
}

func TestReapExpiredLease(t *testing.T) {
	q := fresh(t, "orders")
	ctx := tctx(t)
	id, err := q.Enqueue(ctx, []byte("x"))
	require.NoError(t, err)
	// A lease far longer than the test: reaping before its deadline is
	// then not a matter of how fast the machine is.
	job, ok, err := q.Claim(ctx, time.Hour)
	require.NoError(t, err)
	require.True(t, ok)
	n, err := q.Reap(ctx, 10, 5)
	require.NoError(t, err)
	require.Zero(t, n, "reaped before the deadline")
	require.NoError(t, q.Extend(ctx, id, job.Token, 50*time.Millisecond))
	// Reaped once the extended lease has run out on the server's clock.
	reapOnce := func(max int) int {
		t.Helper()
		waitFor(t, 0, "the lease to run out", func() bool {
			n, err = q.Reap(ctx, 10, max)
			require.NoError(t, err)
			return n > 0
		})
		return n
	}
	if n := reapOnce(5); n != 1 {
		t.Fatalf("Reap = %d", n)
	}
	if r := row(t, q, id); r["state"] != "pending" || r["attempts"] != "1" || score(t, q.keys.Pending, id) != "0" {
		t.Fatalf("reaped row %v", r)
	}
	if err := q.Complete(ctx, id, job.Token, 0); !errors.Is(err, ErrStale) {
		t.Fatalf("Complete after reap = %v", err)
	}
	job2, ok, err := q.Claim(ctx, 50*time.Millisecond)
	require.NoError(t, err)
	if !ok || job2.ID != id || job2.Token != 2 {
		t.Fatalf("second claim %+v", job2)
	}
	// Attempts at max: the reaper buries it.
	require.Equal(t, 1, reapOnce(2), "not reaped")
	if r := row(t, q, id); r["state"] != "dead" || score(t, q.keys.Dead, id) == "" {
		t.Fatalf("row %v", r)
	}
}

func TestExtend(t *testing.T) {
	q := fresh(t, "orders")
	ctx := tctx(t)
	id, err := q.Enqueue(ctx, nil)
	require.NoError(t, err)
	job, ok, err := q.Claim(ctx, time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	first := scoreInt(t, q.keys.Active, id)
	if err := q.Extend(ctx, id, job.Token, time.Hour); err != nil {
		t.Fatal(err)
	}
	if s := scoreInt(t, q.keys.Active, id); s < first+3590000 {
		t.Fatalf("deadline %d not extended from %d", s, first)
	}
	if err := q.Extend(ctx, id, job.Token+1, time.Hour); !errors.Is(err, ErrStale) {
		t.Fatalf("stale Extend = %v", err)
	}
	require.NoError(t, q.Complete(ctx, id, job.Token, 0))
	if err := q.Extend(ctx, id, job.Token, time.Hour); !errors.Is(err, ErrStale) {
		t.Fatalf("Extend after complete = %v", err)
	}
	if score(t, q.keys.Active, id) != "" {
		t.Fatal("extend re-added the id")
	}
}

func TestEnqueueBatchClaimBatchCompleteBatch(t *testing.T) {
	q := fresh(t, "batch")
	ctx := tctx(t)
	payloads := make([][]byte, 100)
	for i := range payloads {
		payloads[i] = []byte("job-" + strconv.Itoa(i))
	}
	res, err := q.EnqueueBatch(ctx, payloads)
	if err != nil || len(res) != 100 {
		t.Fatalf("EnqueueBatch = %d, %v", len(res), err)
	}
	for i, r := range res {
		if r.Err != nil || !ValidID(r.ID) || (i > 0 && r.ID <= res[i-1].ID) {
			t.Fatalf("result %d = %+v", i, r)
		}
	}
	pending, err := q.PendingSize(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 100, pending)
	// A ghost in the middle of pending is dropped and does not count.
	ghost := res[2].ID
	do(t, "DEL", q.keys.Job(ghost))
	jobs, err := q.ClaimBatch(ctx, time.Minute, 4)
	if err != nil || len(jobs) != 4 {
		t.Fatalf("ClaimBatch = %v, %v", jobs, err)
	}
	for i, want := range []int{0, 1, 3, 4} {
		if jobs[i].ID != res[want].ID || !bytes.Equal(jobs[i].Payload, payloads[want]) || jobs[i].Token != 1 {
			t.Fatalf("job %d = %+v, want %s", i, jobs[i], res[want].ID)
		}
		if cap(jobs[i].Payload) != len(jobs[i].Payload) {
			t.Fatal("payload capacity runs into the next payload")
		}
	}
	acks := []Ack{{jobs[0].ID, 1}, {jobs[1].ID, 7}, {jobs[2].ID, 1}}
	done, err := q.CompleteBatch(ctx, acks, 0)
	if err != nil || fmt.Sprint(done) != "[true false true]" {
		t.Fatalf("CompleteBatch = %v, %v", done, err)
	}
	if do(t, "EXISTS", q.keys.Job(jobs[0].ID)) != "0" || row(t, q, jobs[1].ID)["state"] != "active" {
		t.Fatal("complete_batch rows wrong")
	}
	active, err := q.Count(ctx, StateActive)
	require.NoError(t, err)
	require.EqualValues(t, 2, active)
	rest, err := q.ClaimBatch(ctx, time.Minute, 1000)
	require.NoError(t, err)
	if len(rest) != 95 {
		t.Fatalf("claimed %d of the rest, want 95", len(rest))
	}
}

func TestBrowse(t *testing.T) {
	q := fresh(t, "browse")
	ctx := tctx(t)
	var ids []string
	for i := range 5 {
		id, err := q.Enqueue(ctx, []byte{byte('a' + i)})
		require.NoError(t, err)
		ids = append(ids, id)
	}
	claim := func() Job {
		t.Helper()
		job, ok, err := q.Claim(ctx, time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		return job
	}
	job := claim()
	out, err := q.Retry(ctx, job.ID, job.Token, time.Hour, 5, "later")
	require.NoError(t, err)
	require.Equal(t, RetryDelayed, out)
	job = claim()
	out, err = q.Retry(ctx, job.ID, job.Token, 0, 1, "fatal")
	require.NoError(t, err)
	require.Equal(t, RetryDead, out)
	job = claim()

	page, err := q.Browse(ctx, StatePending, 0, 10)
	if err != nil || len(page) != 2 || page[0].ID != ids[3] || page[1].ID != ids[4] {
		t.Fatalf("pending page %+v, %v", page, err)
	}
	if p := page[0]; !p.Exists || p.State != StatePending || p.Attempts != 0 || string(p.Payload) != "d" || p.Score != 0 {
		t.Fatalf("pending entry %+v", p)
	}
	page, err = q.Browse(ctx, StatePending, 1, 10)
	require.NoError(t, err)
	if len(page) != 1 || page[0].ID != ids[4] {
		t.Fatalf("offset page %+v", page)
	}
	page, err = q.Browse(ctx, StateActive, 0, 10)
	require.NoError(t, err)
	if len(page) != 1 || page[0].ID != job.ID || page[0].State != StateActive || page[0].Score < serverMillis(t) {
		t.Fatalf("active page %+v", page)
	}
	page, err = q.Browse(ctx, StateDelayed, 0, 10)
	require.NoError(t, err)
	if len(page) != 1 || page[0].ID != ids[0] || page[0].Error != "later" || page[0].Time().Before(time.Now()) {
		t.Fatalf("delayed page %+v", page)
	}
	page, err = q.Browse(ctx, StateDead, 0, 10)
	require.NoError(t, err)
	if len(page) != 1 || page[0].ID != ids[1] || page[0].State != StateDead || page[0].Error != "fatal" {
		t.Fatalf("dead page %+v", page)
	}
	do(t, "ZADD", q.keys.Dead, "1", "JOB0KHTOWnGLuC")
	do(t, "HSET", q.keys.Job(ids[1]), "lease_epoch", "7")
	page, err = q.Browse(ctx, StateDead, 0, 10)
	require.NoError(t, err)
	if len(page) != 2 || page[0].Exists || page[0].ID != "JOB0KHTOWnGLuC" || page[1].Extra["lease_epoch"] != "7" {
		t.Fatalf("dead page with ghost %+v", page)
	}
	if _, err := q.Browse(ctx, StateCompleted, 0, 10); !errors.Is(err, ErrArg) {
		t.Fatalf("Browse(completed) = %v", err)
	}
	if page, err := q.Browse(ctx, StateDead, 100, 10); len(page) != 0 || err != nil {
		t.Fatalf("page past the end %v, %v", page, err)
	}
}
