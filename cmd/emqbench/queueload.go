package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/emq"
)

const (
	// fillCap is how many jobs claim and worker pre-fill when only
	// -duration bounds the run; the run ends early if they are all done.
	fillCap = 200_000
	// fillBatch is the jobs per EnqueueBatch when pre-filling.
	fillBatch = 1000
	// benchLease is the lease of the jobs claim takes: long enough that
	// none expires during a run.
	benchLease = time.Minute
)

// queues is one emq.Queue per connection, each with its own scripted
// executor, so the report can sum their SCRIPT LOADs.
type queues struct {
	name    string
	members []string // the member queues' names: name alone unless -shards
	qs      []*emq.Queue
	execs   []*dispatch.Scripted
	native  bool // the transitions go through dispatch.NewNative
}

// openQueues opens the run's queue on every connection. An explicit
// -queue must be empty unless -keep is set: the cleanup removes the whole
// queue, which must then hold only what this run made.
func openQueues(ctx context.Context, nd *node, cfg config) (*queues, error) {
	name := cfg.queue
	if !cfg.queueSet {
		name = "emqbench-" + nd.runID
	}
	qq := &queues{name: name, members: []string{name}}
	if cfg.shards > 1 {
		names, err := emq.ShardNames(name, cfg.shards)
		if err != nil {
			return nil, usageErr{err}
		}
		qq.members = names
	}
	// One id generator for every connection's queue, the process's own:
	// two generators on one node would mint the same ids. With -shards,
	// every connection opens every member (qs: connection-major).
	ids := emq.DefaultIDGenerator()
	for _, c := range nd.conns {
		x := dispatch.NewScripted(c)
		var exec dispatch.Executor = x
		if cfg.executor != emq.ExecutorScript {
			native, err := emq.HasNative(ctx, c) // on a cluster: every primary
			if err != nil {
				return nil, err
			}
			if !native && cfg.executor == emq.ExecutorNative {
				if err := emq.CheckNative(ctx, c); err != nil {
					return nil, err // names what is missing, and where
				}
				return nil, emq.ErrNoNative
			}
			if native {
				exec = dispatch.NewNative(c)
				qq.native = true
			}
		}
		for _, m := range qq.members {
			q, err := emq.Open(ctx, c, m, emq.WithExecutor(exec), emq.WithIDGenerator(ids))
			if err != nil {
				return nil, err
			}
			qq.qs = append(qq.qs, q)
		}
		qq.execs = append(qq.execs, x)
	}
	if cfg.queueSet && !cfg.keep {
		k := qq.qs[0].Keys()
		n, err := existing(ctx, nd, k.Pending, k.Active, k.Delayed, k.Dead, k.Meta)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			return nil, usageErr{fmt.Errorf("queue %q already holds jobs: emqbench removes its queue at the end, so it runs only on an empty one (pick another -queue, or give -keep)", name)}
		}
	}
	return qq, nil
}

// existing returns how many of keys exist (EXISTS).
func existing(ctx context.Context, nd *node, keys ...string) (int64, error) {
	v, err := doArgs(ctx, nd, append([]string{"EXISTS"}, keys...)...)
	if err != nil {
		return 0, err
	}
	return v.AsInt()
}

// loads sums the SCRIPT LOADs of every executor.
func (qq *queues) loads() uint64 {
	var n uint64
	for _, x := range qq.execs {
		n += x.Stats().Loads
	}
	return n
}

// cleanup removes every key of the queue.
func (qq *queues) cleanup(nd *node) func(ctx context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		total := 0
		for _, m := range qq.members {
			n, err := deleteMatching(ctx, nd, "emq:{"+globEscape(m)+"}:*")
			total += n
			if err != nil {
				return total, err
			}
		}
		return total, nil
	}
}

// enqueueWorkload enqueues one job of cfg.size bytes per operation:
// Queue.Enqueue at depth 1, Queue.EnqueueBatch (a pipeline of enqueue
// transitions) above.
func enqueueWorkload(ctx context.Context, nd *node, cfg config) (*workload, error) {
	qq, err := openQueues(ctx, nd, cfg)
	if err != nil {
		return nil, err
	}
	p := payload(cfg.size)
	how := "EVALSHA enqueue"
	if qq.native {
		how = "EMQ.ENQUEUE (native)"
	}
	method := how + " (emq.Queue.Enqueue)"
	if cfg.depth > 1 {
		method = fmt.Sprintf("%s, %d pipelined per emq.Queue.EnqueueBatch", how, cfg.depth)
	}
	return &workload{
		method: method,
		queue:  qq.name,
		loads:  qq.loads,
		newCaller: func(g int) caller {
			q := qq.qs[g%len(qq.qs)]
			payloads := make([][]byte, cfg.depth)
			for i := range payloads {
				payloads[i] = p
			}
			return func(ctx context.Context, _ int64, k int) (int, error) {
				if k == 1 {
					if _, err := q.Enqueue(ctx, p); err != nil {
						return 0, err
					}
					return 1, nil
				}
				res, err := q.EnqueueBatch(ctx, payloads[:k])
				if err != nil {
					return 0, err
				}
				for i, r := range res {
					if r.Err != nil {
						return i, r.Err
					}
				}
				return k, nil
			}
		},
		cleanup: qq.cleanup(nd),
	}, nil
}

// fillTotal is how many jobs claim and worker pre-fill.
func fillTotal(cfg config) int64 {
	if cfg.n == unbounded {
		return fillCap
	}
	return cfg.n
}

// fillQueue enqueues total jobs made by mk (job i's payload) with
// EnqueueBatch, a few pipelines at once.
func fillQueue(ctx context.Context, qq *queues, total int64, mk func(i int64) []byte) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		q := qq.qs[g%len(qq.qs)]
		wg.Go(func() {
			payloads := make([][]byte, 0, fillBatch)
			for ctx.Err() == nil {
				first := next.Add(fillBatch) - fillBatch
				if first >= total {
					return
				}
				payloads = payloads[:0]
				for i := first; i < min(first+fillBatch, total); i++ {
					payloads = append(payloads, mk(i))
				}
				res, err := q.EnqueueBatch(ctx, payloads)
				for _, r := range res {
					if err == nil {
						err = r.Err
					}
				}
				if err != nil {
					errs <- fmt.Errorf("pre-fill: %w", err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}

// claimWorkload claims and completes pre-filled jobs, one operation per
// job: Claim + Complete at depth 1; ClaimBatch + CompleteBatch of up to
// -depth jobs (the claim_batch and complete_batch transitions) above.
func claimWorkload(ctx context.Context, nd *node, cfg config) (*workload, error) {
	qq, err := openQueues(ctx, nd, cfg)
	if err != nil {
		return nil, err
	}
	p := payload(cfg.size)
	method := "claim + complete (emq.Queue.Claim, Complete), two round trips"
	if cfg.depth > 1 {
		method = fmt.Sprintf("claim_batch + complete_batch of %d jobs (emq.Queue.ClaimBatch, CompleteBatch), two round trips", cfg.depth)
	}
	return &workload{
		method: method,
		queue:  qq.name,
		loads:  qq.loads,
		prepare: func(ctx context.Context) error {
			return fillQueue(ctx, qq, fillTotal(cfg), func(int64) []byte { return p })
		},
		newCaller: func(g int) caller {
			q := qq.qs[g%len(qq.qs)]
			var jobs []emq.Job
			var acks []emq.Ack
			var done []bool
			return func(ctx context.Context, _ int64, k int) (_ int, err error) {
				if k == 1 && cfg.depth == 1 {
					job, ok, err := q.Claim(ctx, benchLease)
					if err != nil || !ok {
						return 0, dryOr(err)
					}
					if err := q.Complete(ctx, job.ID, job.Token, 0); err != nil {
						return 0, err
					}
					return 1, nil
				}
				jobs, err = q.AppendClaimBatch(ctx, jobs[:0], benchLease, k)
				if err != nil || len(jobs) == 0 {
					return 0, dryOr(err)
				}
				acks = acks[:0]
				for _, j := range jobs {
					acks = append(acks, emq.Ack{ID: j.ID, Token: j.Token})
				}
				done, err = q.AppendCompleteBatch(ctx, done[:0], acks, 0)
				if err != nil {
					return 0, err
				}
				for i, ok := range done {
					if !ok {
						return i, fmt.Errorf("complete of %s: %w", acks[i].ID, emq.ErrStale)
					}
				}
				if len(jobs) < k {
					return len(jobs), errDry
				}
				return len(jobs), nil
			}
		},
		cleanup: qq.cleanup(nd),
	}, nil
}

// dryOr returns err, or errDry when a claim found nothing.
func dryOr(err error) error {
	if err != nil {
		return err
	}
	return errDry
}

// workerWorkload measures jobs/s through emq.Worker: the queue is
// pre-filled, then one worker per connection (-goroutines handlers in all)
// drains it. A job's latency is from its handler's start to the worker's
// report that it completed (complete acknowledged by the server).
func workerWorkload(ctx context.Context, nd *node, cfg config) (*workload, error) {
	qq, err := openQueues(ctx, nd, cfg)
	if err != nil {
		return nil, err
	}
	total := fillTotal(cfg)
	size := max(cfg.size, 8) // the first 8 bytes carry the job's index
	starts := make([]atomic.Int64, total)
	method := "emq.Worker: settle_claim rounds, handler (no-op)"
	if cfg.depthSet {
		method += fmt.Sprintf("; claim and ack batches of %d", cfg.depth)
	}
	return &workload{
		method: method,
		latPer: "job",
		queue:  qq.name,
		loads:  qq.loads,
		prepare: func(ctx context.Context) error {
			return fillQueue(ctx, qq, total, func(i int64) []byte {
				p := payload(size)
				binary.BigEndian.PutUint64(p, uint64(i))
				return p
			})
		},
		run: func(ctx context.Context, _ int64, done *atomic.Int64, lat *latencies) error {
			return runWorkers(ctx, qq, cfg, total, starts, done, lat)
		},
		cleanup: qq.cleanup(nd),
	}, nil
}

// runWorkers runs one worker per queue until total jobs completed (then
// nil), ctx ends (its error), or a worker reports an error.
func runWorkers(ctx context.Context, qq *queues, cfg config, total int64, starts []atomic.Int64, done *atomic.Int64, lat *latencies) error {
	finished := make(chan struct{})
	failed := make(chan error, 1)
	var once sync.Once
	index := func(j *emq.Job) int64 {
		if len(j.Payload) < 8 {
			return -1
		}
		i := int64(binary.BigEndian.Uint64(j.Payload))
		if i < 0 || i >= total {
			return -1
		}
		return i
	}
	handler := emq.HandlerFunc(func(_ context.Context, j *emq.Job) error {
		if i := index(j); i >= 0 {
			starts[i].Store(time.Now().UnixNano())
		}
		return nil
	})
	onEvent := func(e emq.Event) {
		switch e.Kind {
		case emq.EventCompleted:
			if i := index(&e.Job); i >= 0 {
				lat.record(int(i), time.Duration(time.Now().UnixNano()-starts[i].Load()))
			}
			if done.Add(1) == total {
				once.Do(func() { close(finished) })
			}
		case emq.EventError, emq.EventRetried, emq.EventDead, emq.EventStale:
			select {
			case failed <- fmt.Errorf("worker: %s %s: %v", e.Kind, e.Op, e.Err):
			default:
			}
		}
	}
	per := (cfg.goroutines + len(qq.qs) - 1) / len(qq.qs)
	var ws []*emq.Worker
	for _, q := range qq.qs {
		wc := emq.WorkerConfig{Concurrency: per, Lease: benchLease, OnEvent: onEvent}
		if cfg.depthSet {
			wc.ClaimBatch, wc.AckBatch = cfg.depth, cfg.depth
		}
		w, err := emq.NewWorker(q, handler, wc)
		if err == nil {
			err = w.Start()
		}
		if err != nil {
			shutdownAll(ws)
			return err
		}
		ws = append(ws, w)
	}
	var err error
	select {
	case <-finished:
		if cfg.n == unbounded {
			err = errDry
		}
	case err = <-failed:
	case <-ctx.Done():
		err = ctx.Err()
	}
	shutdownAll(ws)
	return err
}

// shutdownAll stops the workers, waiting up to ten seconds in all.
func shutdownAll(ws []*emq.Worker) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, w := range ws {
		_ = w.Shutdown(ctx)
	}
}
