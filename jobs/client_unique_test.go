package jobs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/echomq/echomq-go/emq"
)

// TestClientUnique: a unique task enqueued twice reports the first id
// (ErrUniqueExists, nothing written); once a Server completed it, the key
// is free and a new job takes it; UniqueBy derives the key from the type
// and fields; the envelope echoes a token key.
func TestClientUnique(t *testing.T) {
	c := fresh(t)
	ctx := tctx(t)
	cl := newClient(t, c)
	task := NewTask("report:daily", []byte("d1"))
	first, err := cl.Enqueue(ctx, task, Queue("u"), Unique("day-1"))
	if err != nil || first.Unique != emq.UniqueEnqueued || first.State != emq.StatePending {
		t.Fatalf("first: %+v %v", first, err)
	}
	again, err := cl.Enqueue(ctx, NewTask("report:daily", []byte("d2")), Queue("u"), Unique("day-1"))
	if !errors.Is(err, ErrUniqueExists) || again.ID != first.ID || again.Unique != emq.UniqueExisting {
		t.Fatalf("again: %+v %v, want the first id %s", again, err, first.ID)
	}
	q := openQueue(t, c, "u")
	if n, _ := c.Do(ctx, "ZCARD", q.Keys().Pending); n.Int != 1 {
		t.Fatalf("pending %d", n.Int)
	}
	if e, err := ParseEnvelope(row(t, q, first.ID).Payload); err != nil || e.Unique != "day-1" || string(e.Body) != "d1" {
		t.Fatalf("envelope %+v %v", e, err)
	}
	if id, _, err := q.UniqueOwner(ctx, "day-1"); err != nil || id != first.ID {
		t.Fatalf("owner %s %v", id, err)
	}
	// The Server completes it: the key is free by that fact.
	done := make(chan Event, 4)
	h := HandlerFunc(func(context.Context, *Task) ([]byte, error) { return nil, nil })
	s := start(t, c, h, ServerConfig{Queues: map[string]int{"u": 1}, OnEvent: func(e Event) { done <- e }})
	if e := recv(t, done); e.Kind != EventCompleted || e.Job.ID != first.ID {
		t.Fatalf("event %+v", e)
	}
	if _, _, err := q.UniqueOwner(ctx, "day-1"); !errors.Is(err, emq.ErrNoOwner) {
		t.Fatalf("after completion: %v", err)
	}
	s.Shutdown(ctx)
	next, err := cl.Enqueue(ctx, task, Queue("u"), Unique("day-1"))
	if err != nil || next.Unique != emq.UniqueEnqueued || next.ID == first.ID {
		t.Fatalf("after completion: %+v %v", next, err)
	}
	// UniqueBy: type + fields; another field, another key.
	a, err := cl.Enqueue(ctx, NewTask("mail:send", nil), Queue("u"), UniqueBy("bob"), ProcessIn(time.Hour))
	if err != nil || a.State != emq.StateDelayed {
		t.Fatalf("%+v %v", a, err)
	}
	b, err := cl.Enqueue(ctx, NewTask("mail:send", nil), Queue("u"), UniqueBy("bob"))
	if !errors.Is(err, ErrUniqueExists) || b.ID != a.ID {
		t.Fatalf("same fields: %+v %v", b, err)
	}
	if id, _, _ := q.UniqueOwner(ctx, UniqueKey("mail:send", "bob")); id != a.ID {
		t.Fatalf("UniqueBy's key is not UniqueKey's: owner %q", id)
	}
	if o, err := cl.Enqueue(ctx, NewTask("mail:send", nil), Queue("u"), UniqueBy("ann")); err != nil || o.ID == a.ID {
		t.Fatalf("other fields: %+v %v", o, err)
	}
	// Bad options: a mode without a key.
	if _, err := cl.Enqueue(ctx, task, Queue("u"), UniqueMode(emq.UniqueReplace)); !errors.Is(err, emq.ErrArg) {
		t.Fatalf("mode without key: %v", err)
	}
}

// TestClientUniqueReplace: Replace deletes a waiting (delayed) owner and
// the new task owns the key; Debounce keeps the owner's id and takes the
// new body; an active owner is kept by both.
func TestClientUniqueReplace(t *testing.T) {
	c := fresh(t)
	ctx := tctx(t)
	cl := newClient(t, c)
	q := openQueue(t, c, "ur")
	old, err := cl.Enqueue(ctx, NewTask("sync", []byte("v1")), Queue("ur"), Unique("k"), ProcessAt(time.Now().Add(time.Hour)))
	if err != nil || old.State != emq.StateDelayed {
		t.Fatalf("%+v %v", old, err)
	}
	nu, err := cl.Enqueue(ctx, NewTask("sync", []byte("v2")), Queue("ur"), Unique("k"), UniqueMode(emq.UniqueReplace))
	if err != nil || nu.Unique != emq.UniqueReplaced || nu.Replaced != old.ID || nu.ID == old.ID || nu.State != emq.StatePending {
		t.Fatalf("replace: %+v %v", nu, err)
	}
	if _, ok, _ := q.Row(ctx, old.ID); ok {
		t.Fatal("the replaced owner's row is still there")
	}
	if id, _, _ := q.UniqueOwner(ctx, "k"); id != nu.ID {
		t.Fatalf("owner %s, want %s", id, nu.ID)
	}
	db, err := cl.Enqueue(ctx, NewTask("sync", []byte("v3")), Queue("ur"), Unique("k"), UniqueMode(emq.UniqueDebounce), ProcessIn(time.Hour))
	if err != nil || db.Unique != emq.UniqueDebounced || db.ID != nu.ID || db.State != emq.StateDelayed {
		t.Fatalf("debounce: %+v %v", db, err)
	}
	if e, _ := ParseEnvelope(row(t, q, nu.ID).Payload); string(e.Body) != "v3" {
		t.Fatalf("debounced body %q", e.Body)
	}
	// Active: claimed, then Replace keeps it.
	if err := q.RunNow(ctx, nu.ID); err != nil {
		t.Fatal(err)
	}
	if j, ok, err := q.Claim(ctx, time.Minute); err != nil || !ok || j.ID != nu.ID {
		t.Fatalf("claim %+v %v", j, err)
	}
	kept, err := cl.Enqueue(ctx, NewTask("sync", []byte("v4")), Queue("ur"), Unique("k"), UniqueMode(emq.UniqueReplace))
	if !errors.Is(err, ErrUniqueExists) || kept.ID != nu.ID {
		t.Fatalf("active owner: %+v %v", kept, err)
	}
}

// TestClientUniqueBulk: EnqueueBulk with a key per task (UniqueKeyFunc)
// enqueues each key once, reporting the earlier job of the batch for a
// repeated key, and the standing owner for a held one.
func TestClientUniqueBulk(t *testing.T) {
	c := fresh(t)
	ctx := tctx(t)
	cl := newClient(t, c)
	held, err := cl.Enqueue(ctx, NewTask("t", []byte("b")), Queue("ub"), Unique("b"))
	if err != nil {
		t.Fatal(err)
	}
	tasks := []*Task{NewTask("t", []byte("a")), NewTask("t", []byte("b")), NewTask("t", []byte("a")), NewTask("t", []byte("c"))}
	infos, errs, err := cl.EnqueueBulk(ctx, tasks, Queue("ub"), UniqueKeyFunc(func(t *Task) string { return string(t.Body) }))
	if err != nil || errs != nil {
		t.Fatalf("%v %v", err, errs)
	}
	want := []emq.UniqueStatus{emq.UniqueEnqueued, emq.UniqueExisting, emq.UniqueExisting, emq.UniqueEnqueued}
	for i, in := range infos {
		if in.Unique != want[i] {
			t.Fatalf("task %d: %+v, want %v", i, in, want[i])
		}
	}
	if infos[1].ID != held.ID || infos[2].ID != infos[0].ID || infos[3].ID == infos[0].ID {
		t.Fatalf("ids %+v (held %s)", infos, held.ID)
	}
	q := openQueue(t, c, "ub")
	if n, _ := c.Do(ctx, "ZCARD", q.Keys().Pending); n.Int != 3 {
		t.Fatalf("pending %d, want 3", n.Int)
	}
	// Delayed bulk goes through the same script.
	infos, _, err = cl.EnqueueBulk(ctx, []*Task{NewTask("t", []byte("d"))}, Queue("ub"), UniqueKeyFunc(func(t *Task) string { return string(t.Body) }), ProcessIn(time.Hour))
	if err != nil || infos[0].State != emq.StateDelayed || infos[0].Unique != emq.UniqueEnqueued {
		t.Fatalf("delayed: %+v %v", infos, err)
	}
}
