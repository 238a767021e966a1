package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/jobs"
)

// connect opens a client on the server REDIS_URL names (the tests point
// it at their own) and empties the example's queues.
func connect(queues ...string) *conn.Client {
	ctx := context.Background()
	opts, err := conn.ParseURL(os.Getenv("REDIS_URL")) // e.g. redis://127.0.0.1:6379
	if err != nil {
		log.Fatal(err)
	}
	cl, err := conn.NewClient(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	for _, q := range queues {
		for _, set := range []string{"pending", "active", "delayed", "dead", "meta"} {
			cl.Do(ctx, "DEL", "emq:{"+q+"}:"+set)
		}
	}
	return cl
}

// A producer enqueues typed tasks with options.
func ExampleClient_Enqueue() {
	ctx := context.Background()
	cl := connect("example-mail")
	defer cl.Close()
	c := jobs.NewClient(cl, jobs.ClientConfig{PubSub: cl.Options()})
	defer c.Close()

	now, err := c.Enqueue(ctx, jobs.NewTask("email:send", []byte(`{"to":"ada@example.com"}`)),
		jobs.Queue("example-mail"), jobs.MaxRetries(3), jobs.Timeout(time.Minute))
	if err != nil {
		log.Fatal(err)
	}
	later, err := c.Enqueue(ctx, jobs.NewTask("email:digest", nil),
		jobs.Queue("example-mail"), jobs.ProcessIn(time.Hour))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(now.Queue, now.State, len(now.ID))
	fmt.Println(later.State)

	_, err = c.Enqueue(ctx, jobs.NewTask("not a type", nil))
	fmt.Println(errors.Is(err, jobs.ErrEnvelope))
	// Output:
	// example-mail pending 14
	// delayed
	// true
}

// A Server with a Mux runs tasks from two queues, weighted 3:1, and Wait
// returns a result.
func ExampleServer() {
	ctx := context.Background()
	cl := connect("example-critical", "example-low")
	defer cl.Close()

	mux := jobs.NewMux()
	mux.HandleFunc("text:upper", func(_ context.Context, t *jobs.Task) ([]byte, error) {
		return []byte(strings.ToUpper(string(t.Body))), nil
	})
	mux.HandleFunc("text:", func(_ context.Context, t *jobs.Task) ([]byte, error) {
		return nil, fmt.Errorf("%s: not supported: %w", t.Type, jobs.ErrSkipRetry)
	})
	srv, err := jobs.NewServer(ctx, cl, mux, jobs.ServerConfig{
		Queues: map[string]int{"example-critical": 3, "example-low": 1},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown(ctx)

	c := jobs.NewClient(cl, jobs.ClientConfig{PubSub: cl.Options()})
	defer c.Close()
	up, _ := c.Enqueue(ctx, jobs.NewTask("text:upper", []byte("hello")), jobs.Queue("example-critical"), jobs.Retention(time.Minute))
	rev, _ := c.Enqueue(ctx, jobs.NewTask("text:reverse", []byte("hello")), jobs.Queue("example-low"), jobs.Retention(time.Minute))

	res, err := c.Wait(ctx, "example-critical", up.ID)
	fmt.Printf("%s %v\n", res, err)
	_, err = c.Wait(ctx, "example-low", rev.ID)
	fmt.Println(errors.Is(err, jobs.ErrDead), err.(*jobs.JobError).Text)
	// Output:
	// HELLO <nil>
	// true text:reverse: not supported: jobs: skip retry
}

// Cancel ends a delayed job before it runs; Wait then reports it.
func ExampleClient_Cancel() {
	ctx := context.Background()
	cl := connect("example-cancel")
	defer cl.Close()
	c := jobs.NewClient(cl, jobs.ClientConfig{PubSub: cl.Options()})
	defer c.Close()

	info, _ := c.Enqueue(ctx, jobs.NewTask("report:build", nil), jobs.Queue("example-cancel"),
		jobs.ProcessIn(time.Hour), jobs.Retention(time.Minute))
	was, err := c.Cancel(ctx, "example-cancel", info.ID)
	fmt.Println(was, err)
	_, err = c.Wait(ctx, "example-cancel", info.ID)
	fmt.Println(errors.Is(err, jobs.ErrCancelled))
	_, err = c.Cancel(ctx, "example-cancel", info.ID)
	fmt.Println(err)
	// Output:
	// delayed <nil>
	// true
	// emq: the job has finished
}
