package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/jobs"
)

// A unique task: the second enqueue under the same key finds the first
// job and reports its id; Replace puts a new job in a waiting owner's
// place.
func ExampleUnique() {
	ctx := context.Background()
	cl := connect("example-unique")
	defer cl.Close()
	cl.Do(ctx, "DEL", "emq:{example-unique}:unique:"+emq.UniqueHash(jobs.UniqueKey("report:daily", "2026-12-01")))
	c := jobs.NewClient(cl, jobs.ClientConfig{})
	defer c.Close()

	task := jobs.NewTask("report:daily", []byte("2026-12-01"))
	key := jobs.UniqueBy("2026-12-01") // the type and this field: jobs.UniqueKey
	first, err := c.Enqueue(ctx, task, jobs.Queue("example-unique"), key, jobs.ProcessIn(time.Hour))
	if err != nil {
		log.Fatal(err)
	}
	again, err := c.Enqueue(ctx, task, jobs.Queue("example-unique"), key)
	fmt.Println(again.Unique, again.ID == first.ID, errors.Is(err, jobs.ErrUniqueExists))

	repl, err := c.Enqueue(ctx, task, jobs.Queue("example-unique"), key, jobs.UniqueMode(emq.UniqueReplace))
	fmt.Println(repl.Unique, repl.Replaced == first.ID, repl.State, err)
	// Output:
	// existing true true
	// replaced true pending <nil>
}

// A Scheduler fires a periodic Task; a Server over a Mux routes it by
// its type. Any number of schedulers may run the same schedule: each
// slot is enqueued once.
func ExampleScheduler() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl := connect("example-cron")
	defer cl.Close()
	cl.Do(ctx, "DEL", "emq:{example-cron}:cron", "emq:{example-cron}:cronjobs")
	q, err := emq.Open(ctx, cl, "example-cron")
	if err != nil {
		log.Fatal(err)
	}

	got := make(chan *jobs.Task, 8)
	mux := jobs.NewMux()
	mux.HandleFunc("report:tick", func(_ context.Context, t *jobs.Task) ([]byte, error) {
		got <- t
		return nil, nil
	})
	srv, err := jobs.NewServer(ctx, cl, mux, jobs.ServerConfig{Queues: map[string]int{"example-cron": 1}})
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown(ctx)

	sc := jobs.NewScheduler(jobs.SchedulerOptions{})
	err = sc.Register(jobs.Schedule{
		Name: "tick", Spec: "@every 100ms", Queue: q,
		Task: jobs.NewTask("report:tick", []byte("all")), Options: []jobs.Option{jobs.MaxRetries(1)},
	})
	if err != nil {
		log.Fatal(err)
	}
	go sc.Run(ctx)
	defer sc.Shutdown(ctx)

	t := <-got
	fmt.Println(t.Type, string(t.Body), t.Retries)
	// Output:
	// report:tick all 1
}
