package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/jobs"
)

// With -jobs the e2e workload runs through the job system: each job's
// payload is a task's envelope (one of jobsTypes, by index), and one
// jobs.Server with a jobs.Mux consumes the jobsQueues queues, weighted
// 3:2:1, in place of a worker per queue.
const jobsQueues = 3

var jobsTypes = [...]string{"bench:a", "bench:b", "bench:c"}

// envelopeLen is the bytes of the envelope before a job's body: 0
// without -jobs. Every type has the same length.
func (r *e2eRun) envelopeLen() int {
	if !r.cfg.jobs {
		return 0
	}
	return len(jobs.Magic) + len("t=") + len(jobsTypes[0]) + 1
}

// envelope writes job i's envelope header into p (nothing without -jobs).
func (r *e2eRun) envelope(p []byte, i int64) {
	if !r.cfg.jobs {
		return
	}
	n := copy(p, jobs.Magic)
	n += copy(p[n:], "t=")
	n += copy(p[n:], jobsTypes[i%int64(len(jobsTypes))])
	p[n] = '\n'
}

// startServer starts the jobs.Server of a -jobs run.
func (r *e2eRun) startServer(done *atomic.Int64, lat *latencies, failWith func(error)) error {
	mux := jobs.NewMux()
	for _, typ := range jobsTypes {
		mux.HandleFunc(typ, func(_ context.Context, t *jobs.Task) ([]byte, error) {
			return nil, r.handle(t.ID, t.Body, t.Attempt)
		})
	}
	off := r.envelopeLen()
	onEvent := func(ev jobs.Event) {
		switch ev.Kind {
		case jobs.EventCompleted:
			r.completedJob(ev.Job.ID, ev.Job.Payload[min(off, len(ev.Job.Payload)):], wallClock(), done, lat, failWith)
		case jobs.EventRetried:
			if ev.Err != errInjected.Error() {
				failWith(fmt.Errorf("server: job %s retried: %v", ev.Job.ID, ev.Err))
			}
			r.retried.Add(1)
		case jobs.EventReleased:
		default:
			failWith(fmt.Errorf("server: %s %s: %v", ev.Kind, ev.Job.ID, ev.Err))
		}
	}
	queues := map[string]int{}
	for i, m := range r.qq.members {
		queues[m] = max(jobsQueues-i, 1)
	}
	// The run's queues on its first connection, with their executor and
	// the process's id generator.
	q0 := r.qq.qs[0]
	cfg := jobs.ServerConfig{
		Queues: queues, Concurrency: r.cfg.goroutines, Lease: e2eLease, OnEvent: onEvent,
		PollMin: time.Millisecond, PollMax: 5 * time.Millisecond, Heartbeat: -1,
		Backoff:      func(int64, error) time.Duration { return 0 },
		QueueOptions: []emq.Option{emq.WithExecutor(q0.Executor()), emq.WithIDGenerator(emq.DefaultIDGenerator())},
	}
	s, err := jobs.NewServer(context.Background(), q0.Sender(), mux, cfg)
	if err != nil {
		return err
	}
	if err := s.Start(); err != nil {
		return err
	}
	r.server = s
	return nil
}

// shutdownServer stops the jobs.Server of a -jobs run, if any.
func (r *e2eRun) shutdownServer() {
	if r.server == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.server.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		fmt.Println("emqbench: server shutdown:", err)
	}
	r.rep.WorkerCalls += r.server.Stats().Calls
	r.server = nil
}
