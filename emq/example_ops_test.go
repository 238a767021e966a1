package emq_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
)

// exampleQueue opens queue name, emptied, on the server REDIS_URL names
// (the tests point it at their own); close closes the client.
func exampleQueue(name string) (q *emq.Queue, close func()) {
	ctx := context.Background()
	opts, err := conn.ParseURL(os.Getenv("REDIS_URL"))
	if err != nil {
		log.Fatal(err)
	}
	cl, err := conn.NewClient(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	k, _ := emq.NewKeys(name)
	if _, err := cl.Do(ctx, "DEL", k.Pending, k.Active, k.Delayed, k.Dead, k.Meta); err != nil {
		log.Fatal(err)
	}
	q, err = emq.Open(ctx, cl, name)
	if err != nil {
		log.Fatal(err)
	}
	return q, func() { cl.Close() }
}

// fail claims the next job and fails it for good: it goes to dead.
func fail(q *emq.Queue, reason string) {
	ctx := context.Background()
	job, ok, err := q.Claim(ctx, time.Minute)
	if err != nil || !ok {
		log.Fatal("nothing claimed: ", err)
	}
	if _, err := q.Retry(ctx, job.ID, job.Token, 0, 1, reason); err != nil {
		log.Fatal(err)
	}
}

// Stats reads every count at one instant on the server's clock.
func ExampleQueue_Stats() {
	q, done := exampleQueue("example-stats")
	defer done()
	ctx := context.Background()
	for range 3 {
		q.Enqueue(ctx, []byte("now"))
	}
	q.EnqueueIn(ctx, time.Hour, []byte("later"))
	q.Claim(ctx, time.Minute)

	st, err := q.Stats(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("pending", st.Pending, "active", st.Active, "delayed", st.Delayed, "dead", st.Dead)
	fmt.Println("due", st.Due, "expired", st.Expired, "paused", st.Paused)
	fmt.Println("lag measured:", st.Lag >= 0 && st.Oldest != "")
	// Output:
	// pending 2 active 1 delayed 1 dead 0
	// due 0 expired 0 paused false
	// lag measured: true
}

// Requeue one dead job by id, or those a filter selects.
func ExampleQueue_RequeueDead() {
	q, done := exampleQueue("example-requeue")
	defer done()
	ctx := context.Background()
	for range 3 {
		q.Enqueue(ctx, nil)
	}
	fail(q, "timeout: upstream took 30s")
	fail(q, "timeout: upstream took 31s")
	fail(q, "invalid payload")

	n, err := q.RequeueDead(ctx, emq.DeadFilter{ErrorPrefix: "timeout:"})
	fmt.Println(n, err)

	page, _ := q.Browse(ctx, emq.StateDead, 0, 10)
	fmt.Println(page[0].Error)
	fmt.Println(q.Requeue(ctx, page[0].ID))
	fmt.Println(errors.Is(q.Requeue(ctx, page[0].ID), emq.ErrNotDead))
	pending, _ := q.PendingSize(ctx)
	fmt.Println("pending", pending)
	// Output:
	// 2 <nil>
	// invalid payload
	// <nil>
	// true
	// pending 3
}

// Delete takes a job out of whichever set holds it, with its row.
func ExampleQueue_Delete() {
	q, done := exampleQueue("example-delete")
	defer done()
	ctx := context.Background()
	id, _ := q.EnqueueIn(ctx, time.Hour, []byte("reminder"))

	was, err := q.Delete(ctx, id)
	fmt.Println(was, err)
	_, err = q.Delete(ctx, id)
	fmt.Println(errors.Is(err, emq.ErrNotFound))
	// Output:
	// delayed <nil>
	// true
}

// TrimDead bounds the dead set by age, by count, or both; a worker does
// it on its own (WorkerConfig.DeadMaxAge and DeadMaxCount).
func ExampleQueue_TrimDead() {
	q, done := exampleQueue("example-trim")
	defer done()
	ctx := context.Background()
	for range 3 {
		q.Enqueue(ctx, nil)
		fail(q, "boom")
	}
	n, err := q.TrimDead(ctx, 30*24*time.Hour, 1) // keep a month, at most one
	fmt.Println(n, err)
	dead, _ := q.Count(ctx, emq.StateDead)
	fmt.Println("dead", dead)
	// Output:
	// 2 <nil>
	// dead 1
}
