package emqprom

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/echomq/echomq-go/emq"
)

// outcomes names each worker event kind as emq_worker_jobs_total's
// outcome label.
var outcomes = map[emq.EventKind]string{
	emq.EventCompleted: "completed", emq.EventRetried: "retried", emq.EventDead: "dead",
	emq.EventStale: "stale", emq.EventAbandoned: "abandoned", emq.EventLeaseLost: "lease_lost",
	emq.EventError: "error", emq.EventTimedOut: "timed_out",
}

// OnEvent returns a function for [emq.WorkerConfig.OnEvent] that counts
// each event of queue's worker in emq_worker_jobs_total. It does not
// block and allocates nothing.
func (c *Collector) OnEvent(queue string) func(emq.Event) {
	counters := make(map[emq.EventKind]prometheus.Counter, len(outcomes))
	for k, o := range outcomes {
		counters[k] = c.workerJobs.WithLabelValues(queue, o)
	}
	return func(e emq.Event) {
		if ctr, ok := counters[e.Kind]; ok {
			ctr.Inc()
		}
	}
}

// Middleware returns an [emq.Middleware] that times each handler run of
// queue's worker in emq_handler_duration_seconds, by outcome: ok (nil),
// error (any error, ErrAbandon and ErrSkipRetry included), or panic (the
// handler panicked: the panic goes on to the worker, which recovers it).
// Put it first, outermost, to time the rest of the chain too.
func (c *Collector) Middleware(queue string) emq.Middleware {
	ok, failed, panicked := c.handler.WithLabelValues(queue, "ok"), c.handler.WithLabelValues(queue, "error"),
		c.handler.WithLabelValues(queue, "panic")
	return func(next emq.Handler) emq.Handler {
		return emq.HandlerFunc(func(ctx context.Context, job *emq.Job) (err error) {
			start := time.Now()
			returned := false
			defer func() {
				h := panicked
				switch {
				case returned && err == nil:
					h = ok
				case returned:
					h = failed
				}
				h.Observe(time.Since(start).Seconds())
			}()
			err = next.ProcessJob(ctx, job)
			returned = true
			return err
		})
	}
}

// Instrument wires queue's worker configuration to c: Middleware goes
// first in cfg.Middleware, and cfg.OnEvent counts each event before
// calling the OnEvent already set, if any.
func (c *Collector) Instrument(cfg *emq.WorkerConfig, queue string) {
	cfg.Middleware = append([]emq.Middleware{c.Middleware(queue)}, cfg.Middleware...)
	count, next := c.OnEvent(queue), cfg.OnEvent
	if next == nil {
		cfg.OnEvent = count
		return
	}
	cfg.OnEvent = func(e emq.Event) {
		count(e)
		next(e)
	}
}
