// Command jobs-asynq is examples/jobs written with asynq: 10,000 jobs of
// two types over two queues (email:send on critical, report:build on
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

	"github.com/hibiken/asynq"
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
	opt, err := asynq.ParseRedisURI(url)
	if err != nil {
		return err
	}

	var sent, retried, built, periodic atomic.Int64
	mux := asynq.NewServeMux()
	mux.HandleFunc("email:send", func(ctx context.Context, t *asynq.Task) error {
		attempt, _ := asynq.GetRetryCount(ctx)
		if i, _ := strconv.Atoi(string(t.Payload())); i%20 == 0 && attempt == 0 {
			return errors.New("smtp: try again")
		} else if attempt > 0 {
			retried.Add(1)
		}
		sent.Add(1)
		return nil
	})
	mux.HandleFunc("report:build", func(ctx context.Context, t *asynq.Task) error {
		if string(t.Payload()) == "periodic" {
			periodic.Add(1)
		} else {
			built.Add(1)
		}
		return nil
	})
	srv := asynq.NewServer(opt, asynq.Config{
		Queues:                   map[string]int{"critical": 6, "default": 3},
		RetryDelayFunc:           func(int, error, *asynq.Task) time.Duration { return 10 * time.Millisecond },
		DelayedTaskCheckInterval: 100 * time.Millisecond,
	})
	if err := srv.Start(mux); err != nil {
		return err
	}
	defer srv.Shutdown()

	sc := asynq.NewScheduler(opt, nil)
	if _, err := sc.Register("@every 1s", asynq.NewTask("report:build", []byte("periodic"))); err != nil {
		return err
	}
	if err := sc.Start(); err != nil {
		return err
	}
	defer sc.Shutdown()

	client := asynq.NewClient(opt)
	defer client.Close()
	for i := range n {
		body := []byte(strconv.Itoa(i))
		switch {
		case i%2 == 0:
			_, err = client.Enqueue(asynq.NewTask("email:send", body), asynq.Queue("critical"), asynq.MaxRetry(3))
		case i%100 == 1:
			_, err = client.Enqueue(asynq.NewTask("report:build", body), asynq.ProcessIn(time.Second))
		default:
			_, err = client.Enqueue(asynq.NewTask("report:build", body))
		}
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "enqueued %d jobs, %d of them delayed\n", n, n/100)

	// Unique for an hour: asynq's lock outlives the job (it is a TTL);
	// the first waits a second, as in examples/jobs.
	daily := asynq.NewTask("report:build", []byte("daily"))
	if _, err := client.Enqueue(daily, asynq.Unique(time.Hour), asynq.ProcessIn(time.Second)); err != nil {
		return err
	}
	_, err = client.Enqueue(daily, asynq.Unique(time.Hour))
	fmt.Fprintln(w, "the second daily report refused as a duplicate:", errors.Is(err, asynq.ErrDuplicateTask))

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
