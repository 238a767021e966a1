// Command jobs is the job program a newcomer writes: 10,000 jobs of two
// types over two queues (email:send on critical, report:build on
// default), a hundred of them delayed, every tenth email failing its first
// attempt and retried, a daily report made unique, and a report run every
// second, on the server given by -url or REDIS_URL (default
// redis://127.0.0.1:6379). It prints what ran once everything has.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/jobs"
)

func main() {
	url := flag.String("url", cmp.Or(os.Getenv("REDIS_URL"), "redis://127.0.0.1:6379"), "server URL")
	flag.Parse()
	if err := run(context.Background(), *url, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

const n = 10000 // jobs, half of each type

func run(ctx context.Context, url string, w io.Writer) error {
	c, err := conn.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close()

	var sent, retried, built, periodic atomic.Int64
	mux := jobs.NewMux()
	mux.HandleFunc("email:send", func(ctx context.Context, t *jobs.Task) ([]byte, error) {
		if i, _ := strconv.Atoi(string(t.Body)); i%20 == 0 && t.Attempt == 1 {
			return nil, errors.New("smtp: try again")
		} else if t.Attempt > 1 {
			retried.Add(1)
		}
		sent.Add(1)
		return nil, nil
	})
	mux.HandleFunc("report:build", func(ctx context.Context, t *jobs.Task) ([]byte, error) {
		if string(t.Body) == "periodic" {
			periodic.Add(1)
		} else {
			built.Add(1)
		}
		return nil, nil
	})
	srv, err := jobs.StartServer(ctx, c, mux, jobs.ServerConfig{
		Queues:      map[string]int{"critical": 6, "default": 3},
		BackoffBase: 10 * time.Millisecond,
	})
	if err != nil {
		return err
	}
	defer srv.Shutdown(ctx)

	sc, err := jobs.StartScheduler(ctx, jobs.SchedulerOptions{Sender: c}, jobs.Schedule{Name: "periodic",
		Spec: "@every 1s", QueueName: "default", Task: jobs.NewTask("report:build", []byte("periodic"))})
	if err != nil {
		return err
	}
	defer sc.Shutdown(ctx)

	client := jobs.NewClient(c, jobs.ClientConfig{})
	for i := range n {
		body := []byte(strconv.Itoa(i))
		switch {
		case i%2 == 0:
			_, err = client.Enqueue(ctx, jobs.NewTask("email:send", body), jobs.Queue("critical"), jobs.MaxRetries(3))
		case i%100 == 1:
			_, err = client.Enqueue(ctx, jobs.NewTask("report:build", body), jobs.ProcessIn(time.Second))
		default:
			_, err = client.Enqueue(ctx, jobs.NewTask("report:build", body))
		}
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "enqueued %d jobs, %d of them delayed\n", n, n/100)

	// Unique while the first one lives: it waits a second, so the second
	// enqueue finds it.
	daily := jobs.NewTask("report:build", []byte("daily"))
	if _, err := client.Enqueue(ctx, daily, jobs.UniqueBy("daily"), jobs.ProcessIn(time.Second)); err != nil {
		return err
	}
	_, err = client.Enqueue(ctx, daily, jobs.UniqueBy("daily"))
	fmt.Fprintln(w, "the second daily report refused as a duplicate:", errors.Is(err, jobs.ErrUniqueExists))

	for sent.Load() < n/2 || built.Load() < n/2+1 || periodic.Load() == 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	fmt.Fprintf(w, "email:send: %d sent, %d of them retried\n", sent.Load(), retried.Load())
	fmt.Fprintf(w, "report:build: %d built, and the periodic report ran\n", built.Load())
	return nil
}
