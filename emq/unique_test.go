package emq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// core runs a core script straight from its source (EVAL), as any peer
// would, and returns srv.Do's text.
func core(t testing.TB, name string, keys []string, args ...string) string {
	t.Helper()
	cmd := append([]string{"EVAL", source(name), strconv.Itoa(len(keys))}, keys...)
	return do(t, append(cmd, args...)...)
}

// mustUnique enqueues under key and wants status.
func mustUnique(t *testing.T, q *Queue, key string, mode UniqueMode, want UniqueStatus) UniqueResult {
	t.Helper()
	r, err := q.EnqueueUnique(tctx(t), UniqueJob{Key: key, Payload: []byte("p:" + key), Mode: mode})
	if err != nil || r.Status != want {
		t.Fatalf("unique %q %v: %+v, %v; want %v", key, mode, r, err, want)
	}
	return r
}

// TestUniqueConcurrentExactlyOne: 64 goroutines enqueue 10,000 jobs over
// 100 keys: exactly 100 live (uniqueRush); every owner then leaves, as a
// worker killed mid-job, failed to dead, deleted or completed by the core
// script, and every key is free at once: none held, and a second rush
// enqueues exactly 100 new owners, none doubled.
func TestUniqueConcurrentExactlyOne(t *testing.T) {
	q := fresh(t, "uq")
	ctx := tctx(t)
	first := uniqueRush(t, q)
	// Every owner leaves, four ways: its worker killed mid-job (the lease
	// runs out, reaped to dead), failed to dead, deleted, completed by
	// the core complete script. Then the 100 keys are free, and a second
	// rush enqueues exactly 100 new owners.
	jobs, err := q.ClaimBatch(ctx, time.Millisecond, 100)
	if err != nil || len(jobs) != 100 {
		t.Fatalf("claimed %d: %v", len(jobs), err)
	}
	for i, j := range jobs {
		switch i % 4 {
		case 1:
			if out, err := q.Retry(ctx, j.ID, j.Token, 0, 1, "boom"); err != nil || out != RetryDead {
				t.Fatal(out, err)
			}
		case 2:
			if _, err := q.Delete(ctx, j.ID); err != nil {
				t.Fatal(err)
			}
		case 3:
			if got := core(t, "complete", []string{q.keys.Active, q.keys.Job(j.ID)}, j.ID, strconv.FormatInt(j.Token, 10), "0"); got != "1" {
				t.Fatal(got)
			}
		}
	}
	for do(t, "ZCARD", q.keys.Active) != "0" { // the killed workers' leases
		if _, err := q.Reap(ctx, 100, 1); err != nil {
			t.Fatal(err)
		}
	}
	for key := range first {
		if _, _, err := q.UniqueOwner(ctx, key); !errors.Is(err, ErrNoOwner) {
			t.Fatalf("%s still held: %v", key, err)
		}
	}
	second := uniqueRush(t, q)
	for key, id := range second {
		if id == first[key] {
			t.Fatalf("%s: the old owner %s again", key, id)
		}
	}
}

// uniqueRush has 64 goroutines enqueue 10,000 jobs over 100 keys, singly
// and in batches, into a queue whose keys are all free: exactly one job
// per key is enqueued, every other enqueue of a key reports that owner,
// and pending holds the 100. It returns the owners.
func uniqueRush(t *testing.T, q *Queue) map[string]string {
	ctx := tctx(t)
	const workers, total, keys = 64, 10000, 100
	pending0, _ := strconv.Atoi(do(t, "ZCARD", q.keys.Pending))
	var mu sync.Mutex
	owner := map[string]string{}
	var reports []UniqueResult
	var reportKeys []string
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			qq := q
			if w%4 == 0 { // some on connections of their own
				var err error
				if qq, err = Open(ctx, dial(t), "uq"); err != nil {
					errs <- err
					return
				}
			}
			per := total / workers
			if w < total%workers {
				per++
			}
			var batch []UniqueJob
			for i := range per {
				key := "key-" + strconv.Itoa((w*per+i*7)%keys)
				batch = append(batch, UniqueJob{Key: key, Payload: []byte(key)})
				if w%2 == 0 && len(batch) < 13 && i < per-1 {
					continue
				}
				res, err := qq.EnqueueUniqueBatch(ctx, batch)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for k, r := range res {
					if r.Err != nil {
						errs <- r.Err
					}
					if r.Status == UniqueEnqueued {
						if prev, dup := owner[batch[k].Key]; dup {
							errs <- fmt.Errorf("key %s enqueued twice: %s and %s", batch[k].Key, prev, r.ID)
						}
						owner[batch[k].Key] = r.ID
					}
					reports = append(reports, r)
					reportKeys = append(reportKeys, batch[k].Key)
				}
				mu.Unlock()
				batch = batch[:0]
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(reports) != total || len(owner) != keys {
		t.Fatalf("%d results, %d keys enqueued; want %d, %d", len(reports), len(owner), total, keys)
	}
	for i, r := range reports {
		if r.ID != owner[reportKeys[i]] {
			t.Fatalf("result %d for %s: %+v, owner %s", i, reportKeys[i], r, owner[reportKeys[i]])
		}
	}
	if n := do(t, "ZCARD", q.keys.Pending); n != strconv.Itoa(pending0+keys) {
		t.Fatalf("pending holds %s, want %d more than %d", n, keys, pending0)
	}
	for key, id := range owner {
		if got, st, err := q.UniqueOwner(ctx, key); err != nil || got != id || st != StatePending {
			t.Fatalf("owner of %s: %s %s %v, want %s", key, got, st, err, id)
		}
	}
	return owner
}

// TestUniqueFreedByOwnerState: a key is free the moment its owner leaves,
// however it leaves — reaped to dead after a worker died mid-job, failed
// to dead, deleted, completed by the core complete script (row deleted or
// kept as completed) — and held while it lives: pending, delayed, active,
// reaped back to pending. Once free, exactly one new job takes it.
func TestUniqueFreedByOwnerState(t *testing.T) {
	q := fresh(t, "uqs")
	ctx := tctx(t)
	free := func(key string) {
		t.Helper()
		r := mustUnique(t, q, key, UniqueKeep, UniqueEnqueued)
		if again := mustUnique(t, q, key, UniqueKeep, UniqueExisting); again.ID != r.ID {
			t.Fatalf("%s: second enqueue reports %s, owner %s", key, again.ID, r.ID)
		}
	}
	held := func(key, id string) {
		t.Helper()
		if r := mustUnique(t, q, key, UniqueKeep, UniqueExisting); r.ID != id {
			t.Fatalf("%s: held by %s, reported %s", key, id, r.ID)
		}
	}
	claimOne := func(want string) Job {
		t.Helper()
		j, ok, err := q.Claim(ctx, time.Minute)
		if err != nil || !ok || j.ID != want {
			t.Fatalf("claim: %+v %v %v, want %s", j, ok, err, want)
		}
		return j
	}

	// A worker killed mid-job: the lease runs out; reaped to pending the
	// job lives (held), reaped to dead it has left (free).
	a := mustUnique(t, q, "killed", UniqueKeep, UniqueEnqueued)
	if _, _, err := q.Claim(ctx, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	held("killed", a.ID)
	for do(t, "ZCARD", q.keys.Active) != "0" {
		if _, err := q.Reap(ctx, 10, 5); err != nil {
			t.Fatal(err)
		}
	}
	held("killed", a.ID) // back in pending, attempts 1
	if _, _, err := q.Claim(ctx, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for do(t, "ZCARD", q.keys.Active) != "0" {
		if _, err := q.Reap(ctx, 10, 2); err != nil {
			t.Fatal(err)
		}
	}
	if st := row(t, q, a.ID)["state"]; st != "dead" {
		t.Fatalf("reaped job in %q", st)
	}
	r := mustUnique(t, q, "killed", UniqueKeep, UniqueEnqueued)
	held("killed", r.ID)

	// Failed to dead by retry.
	do(t, "DEL", q.keys.Pending) // only the jobs below are claimed
	b := mustUnique(t, q, "failed", UniqueKeep, UniqueEnqueued)
	j := claimOne(b.ID)
	held("failed", b.ID) // active
	if out, err := q.Retry(ctx, j.ID, j.Token, 0, 1, "boom"); err != nil || out != RetryDead {
		t.Fatalf("retry: %v %v", out, err)
	}
	free("failed")

	// Deleted, from pending and from delayed.
	c := mustUnique(t, q, "deleted", UniqueKeep, UniqueEnqueued)
	if _, err := q.Delete(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	r, err := q.EnqueueUnique(ctx, UniqueJob{Key: "deleted-later", Delay: time.Hour})
	if err != nil || r.Status != UniqueEnqueued {
		t.Fatal(r, err)
	}
	held("deleted-later", r.ID)
	if _, err := q.Delete(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	do(t, "DEL", q.keys.Pending)
	free("deleted")
	free("deleted-later")

	// Completed by the core script itself, row deleted and row kept.
	for _, keep := range []string{"0", "60000"} {
		do(t, "DEL", q.keys.Pending)
		key := "completed-" + keep
		d := mustUnique(t, q, key, UniqueKeep, UniqueEnqueued)
		j := claimOne(d.ID)
		if got := core(t, "complete", []string{q.keys.Active, q.keys.Job(d.ID)}, d.ID, strconv.FormatInt(j.Token, 10), keep); got != "1" {
			t.Fatalf("core complete: %q", got)
		}
		free(key)
	}
	for _, key := range []string{"killed", "failed", "deleted", "deleted-later", "completed-0", "completed-60000"} {
		if _, st, err := q.UniqueOwner(ctx, key); err != nil || st != StatePending {
			t.Fatalf("%s: owner in %q, %v", key, st, err)
		}
	}
}

// TestUniqueModes: replace deletes a waiting owner and keeps an active
// one; debounce updates a waiting owner in place (payload, due time) and
// keeps an active one; delayed unique jobs hold their key; a period
// bounds the key's life.
func TestUniqueModes(t *testing.T) {
	q := fresh(t, "uqm")
	ctx := tctx(t)
	first := mustUnique(t, q, "r", UniqueKeep, UniqueEnqueued)
	rep := mustUnique(t, q, "r", UniqueReplace, UniqueReplaced)
	if rep.Replaced != first.ID || rep.ID == first.ID {
		t.Fatalf("replace: %+v, first %s", rep, first.ID)
	}
	if len(row(t, q, first.ID)) != 0 || score(t, q.keys.Pending, first.ID) != "" {
		t.Fatal("the replaced job is still there")
	}
	if score(t, q.keys.Pending, rep.ID) != "0" {
		t.Fatal("the replacing job is not pending")
	}
	j, _, _ := q.Claim(ctx, time.Minute)
	if j.ID != rep.ID {
		t.Fatalf("claimed %s", j.ID)
	}
	if r := mustUnique(t, q, "r", UniqueReplace, UniqueExisting); r.ID != rep.ID {
		t.Fatalf("active owner replaced: %+v", r)
	}
	if r := mustUnique(t, q, "r", UniqueDebounce, UniqueExisting); r.ID != rep.ID {
		t.Fatalf("active owner debounced: %+v", r)
	}

	// Debounce: a delayed owner keeps its id, takes the last payload and
	// is due later each time.
	d1, err := q.EnqueueUnique(ctx, UniqueJob{Key: "d", Payload: []byte("v1"), Mode: UniqueDebounce, Delay: time.Minute})
	if err != nil || d1.Status != UniqueEnqueued {
		t.Fatal(d1, err)
	}
	due1 := scoreInt(t, q.keys.Delayed, d1.ID)
	d2, err := q.EnqueueUnique(ctx, UniqueJob{Key: "d", Payload: []byte("v2"), Mode: UniqueDebounce, Delay: 2 * time.Minute})
	if err != nil || d2.Status != UniqueDebounced || d2.ID != d1.ID {
		t.Fatal(d2, err)
	}
	if due2 := scoreInt(t, q.keys.Delayed, d1.ID); due2 < due1+time.Minute.Milliseconds()-1000 {
		t.Fatalf("due time %d not pushed past %d", due2, due1)
	}
	if rw := row(t, q, d1.ID); rw["payload"] != "v2" || rw["state"] != "delayed" {
		t.Fatalf("debounced row %v", rw)
	}
	// Debounced with no delay: back to pending, same id.
	d3, err := q.EnqueueUnique(ctx, UniqueJob{Key: "d", Payload: []byte("v3"), Mode: UniqueDebounce})
	if err != nil || d3.Status != UniqueDebounced || score(t, q.keys.Pending, d1.ID) != "0" || score(t, q.keys.Delayed, d1.ID) != "" {
		t.Fatal(d3, err)
	}

	// In one batch: a job replaced by a later job of the same call never
	// reaches pending.
	res, err := q.EnqueueUniqueBatch(ctx, []UniqueJob{{Key: "b"}, {Key: "b", Mode: UniqueReplace}, {Key: "b"}})
	if err != nil || res[0].Status != UniqueEnqueued || res[1].Status != UniqueReplaced || res[1].Replaced != res[0].ID ||
		res[2].Status != UniqueExisting || res[2].ID != res[1].ID {
		t.Fatalf("batch %+v %v", res, err)
	}
	if score(t, q.keys.Pending, res[0].ID) != "" || score(t, q.keys.Pending, res[1].ID) != "0" {
		t.Fatal("batch: replaced job in pending, or its replacement missing")
	}

	// A period bounds the key (PEXPIRE), the owner's state still frees it.
	p, err := q.EnqueueUnique(ctx, UniqueJob{Key: "p", Period: time.Hour})
	if err != nil || p.Status != UniqueEnqueued {
		t.Fatal(p, err)
	}
	ttl, _ := strconv.Atoi(do(t, "PTTL", q.keys.Base+TypeUnique+UniqueHash("p")))
	if ttl <= 0 || ttl > int(time.Hour.Milliseconds()) {
		t.Fatalf("PTTL %d", ttl)
	}
	do(t, "DEL", q.keys.Base+TypeUnique+UniqueHash("p")) // as the period's end would
	mustUnique(t, q, "p", UniqueKeep, UniqueEnqueued)
}

// TestUniqueHugeKey: a unique key of 1 MB is refused with an ArgError and
// nothing is written; one of MaxUniqueKey works, and only its hash
// reaches the server.
func TestUniqueHugeKey(t *testing.T) {
	q := fresh(t, "uqh")
	huge := strings.Repeat("k", 1<<20)
	if _, err := q.EnqueueUnique(context.Background(), UniqueJob{Key: huge, Payload: []byte("p")}); !errors.Is(err, ErrArg) {
		t.Fatalf("1 MB key: %v", err)
	}
	if _, _, err := q.UniqueOwner(context.Background(), huge); !errors.Is(err, ErrArg) {
		t.Fatalf("UniqueOwner of a 1 MB key: %v", err)
	}
	if k := do(t, "KEYS", q.keys.Base+"*"); k != "" {
		t.Fatalf("a refused key wrote %q", k)
	}
	key := strings.Repeat("k", MaxUniqueKey)
	r := mustUnique(t, q, key, UniqueKeep, UniqueEnqueued)
	if again := mustUnique(t, q, key, UniqueKeep, UniqueExisting); again.ID != r.ID {
		t.Fatal(again)
	}
	mustUnique(t, q, key[:len(key)-1], UniqueKeep, UniqueEnqueued) // another key
	keys := strings.Split(do(t, "KEYS", q.keys.Base+TypeUnique+"*"), "\n")
	for _, k := range keys {
		if len(k) != len(q.keys.Base+TypeUnique)+64 {
			t.Fatalf("unique key of %d bytes", len(k))
		}
	}
	if len(keys) != 2 {
		t.Fatalf("%d unique keys", len(keys))
	}
}

// TestUniqueBadInput: malformed arguments are refused with EMQARG (or
// EMQKIND) before anything is written, a valid job before them included;
// host-side checks refuse before anything is sent.
func TestUniqueBadInput(t *testing.T) {
	q := fresh(t, "uqb")
	keys := []string{q.keys.Pending, q.keys.Delayed, q.keys.Base}
	opts := []string{"keep", "0", "0"}
	good := []string{"JOB0KHTOWnGLuC", "p", UniqueHash("a")}
	bad := [][]string{
		{"JOB0KHTOWnGLuD", "p", "xyz"},
		{"JOB0KHTOWnGLuD", "p", strings.ToUpper(UniqueHash("b"))},
		{"JOB0KHTOWnGLuD", "p"},
		{"ABC0KHTOWnGLuD", "p", UniqueHash("b")},
	}
	badOpts := [][]string{{"maybe", "0", "0"}, {"keep", "-1", "0"}, {"keep", "0", "1.5"}, {"keep", "0"}}
	run := func(what any, args ...string) {
		t.Helper()
		cmd := append([]string{"EVAL", source("unique_enqueue"), "3"}, keys...)
		_, err := srv.Do(append(cmd, args...)...)
		if err == nil || !(strings.Contains(err.Error(), "EMQARG") || strings.Contains(err.Error(), "EMQKIND")) {
			t.Fatalf("%v: %v", what, err)
		}
		if n := do(t, "DBSIZE"); n != "1" { // the fence alone
			t.Fatalf("%v: %s keys after a refused call", what, n)
		}
	}
	for _, b := range bad {
		run(b, append(append(append([]string{}, opts...), good...), b...)...)
	}
	for _, b := range badOpts {
		run(b, append(append([]string{}, b...), good...)...)
	}
	for _, j := range []UniqueJob{{Key: "a", Mode: 9}, {Key: "a", Period: -time.Second}} {
		if _, err := q.EnqueueUnique(tctx(t), j); !errors.Is(err, ErrArg) {
			t.Fatalf("%+v: %v", j, err)
		}
	}
}

// TestUniqueInterop: the core claim and enqueue run on rows unique_enqueue
// wrote: the claim leases the job as any other, the enqueue of the same
// id answers 0 (the row exists).
func TestUniqueInterop(t *testing.T) {
	q := fresh(t, "uqi")
	r := mustUnique(t, q, "i", UniqueKeep, UniqueEnqueued)
	if got := core(t, "enqueue", []string{q.keys.Job(r.ID), q.keys.Pending}, r.ID, "x"); got != "0" {
		t.Fatalf("core enqueue of a unique job's id: %q", got)
	}
	got := core(t, "claim", []string{q.keys.Pending, q.keys.Active, q.keys.Base}, "60000")
	if got != r.ID+"\np:i\n1" {
		t.Fatalf("core claim: %q", got)
	}
	mustUnique(t, q, "i", UniqueKeep, UniqueExisting)
}

// TestUniqueBatchMixedOptions: a batch whose jobs differ in mode, delay
// or period is sent as several calls (a call's jobs share them), still
// taken in order: a later job sees an earlier one of another call; and a
// batch of 2,500 keys (three calls) takes every key once, each owned by
// its job.
func TestUniqueBatchMixedOptions(t *testing.T) {
	q := fresh(t, "uqx")
	ctx := tctx(t)
	res, err := q.EnqueueUniqueBatch(ctx, []UniqueJob{
		{Key: "a", Payload: []byte("v1")},
		{Key: "a", Payload: []byte("v2"), Mode: UniqueDebounce, Delay: time.Minute},
		{Key: "b", Period: time.Hour},
		{Key: "b", Period: time.Hour},
		{Key: "b"},
		{Key: "c", Mode: UniqueReplace},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []UniqueStatus{UniqueEnqueued, UniqueDebounced, UniqueEnqueued, UniqueExisting, UniqueExisting, UniqueEnqueued}
	for i, r := range res {
		if r.Status != want[i] || r.Err != nil {
			t.Fatalf("job %d: %+v, want %v", i, r, want[i])
		}
	}
	if res[1].ID != res[0].ID || res[3].ID != res[2].ID || res[4].ID != res[2].ID {
		t.Fatalf("owners %+v", res)
	}
	if rw := row(t, q, res[0].ID); rw["payload"] != "v2" || rw["state"] != "delayed" || score(t, q.keys.Pending, res[0].ID) != "" {
		t.Fatalf("debounced row %v", rw)
	}
	// The keep of b wrote nothing: b's period stands.
	if ttl, _ := strconv.Atoi(do(t, "PTTL", q.keys.Base+TypeUnique+UniqueHash("b"))); ttl <= 0 {
		t.Fatalf("b's PTTL %d", ttl)
	}
	if ttl := do(t, "PTTL", q.keys.Base+TypeUnique+UniqueHash("a")); ttl != "-1" {
		t.Fatalf("a's PTTL %s", ttl)
	}

	many := make([]UniqueJob, 2500)
	for i := range many {
		many[i] = UniqueJob{Key: "m" + strconv.Itoa(i)}
	}
	first, err := q.EnqueueUniqueBatch(ctx, many)
	if err != nil {
		t.Fatal(err)
	}
	again, err := q.EnqueueUniqueBatch(ctx, many)
	if err != nil {
		t.Fatal(err)
	}
	for i := range many {
		if first[i].Status != UniqueEnqueued || again[i].Status != UniqueExisting || again[i].ID != first[i].ID {
			t.Fatalf("key %d: %+v then %+v", i, first[i], again[i])
		}
		if i%500 == 0 {
			if id, st, err := q.UniqueOwner(ctx, many[i].Key); err != nil || id != first[i].ID || st != StatePending {
				t.Fatalf("owner of %d: %s %s %v", i, id, st, err)
			}
		}
	}
	if n := do(t, "ZCARD", q.keys.Pending); n != strconv.Itoa(2500+2) { // b and c besides
		t.Fatalf("pending %s", n)
	}
}
