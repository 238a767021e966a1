package emq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/echomq/echomq-go/conn"
)

// Sharded spreads one logical queue over n member queues, so that one
// queue's throughput can grow past what one server core gives: on a
// cluster each member hashes to its own slot, and [ShardNames] picks the
// members' names so their slots spread evenly over the slot space (and
// so over the primaries, when each serves an even share).
//
// Each member is an ordinary echomq:6.0.0 queue with its own hashtag:
// any runtime reads and works it as a queue by its member name. Order is
// FIFO within a member; across members there is none: a job enqueued
// later on one member may be claimed before an earlier one on another.
// Producers spread jobs round robin; [ShardedWorker] claims fairly, an
// equal share of the handlers per member.
type Sharded struct {
	name    string
	members []*Queue
	next    atomic.Uint64
}

// maxShards bounds n: a member per slot at most.
const maxShards = SlotCount

// ShardNames returns the member names of the sharded queue name over n
// members: member i is "<name>~<k>" for the smallest k whose slot falls
// in the i-th of n equal ranges of the slot space (so no two members
// share a name). The rule is deterministic: every runtime finds the same
// members.
func ShardNames(name string, n int) ([]string, error) {
	if n < 1 || n > maxShards {
		return nil, fmt.Errorf("emq: %d shards: want 1 to %d", n, maxShards)
	}
	names := make([]string, 0, n)
	for i := range n {
		for k := 0; ; k++ {
			m := name + "~" + strconv.Itoa(k)
			if int(Slot(m))*n/SlotCount == i {
				names = append(names, m)
				break
			}
			if k > 64*SlotCount {
				return nil, fmt.Errorf("emq: no member name for shard %d of %d", i, n)
			}
		}
	}
	for _, m := range names {
		if err := ValidQueue(m); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// OpenSharded opens the n members of the sharded queue name (see
// [ShardNames]) over s, each with opts, checking the fence once.
func OpenSharded(ctx context.Context, s conn.Sender, name string, n int, opts ...Option) (*Sharded, error) {
	names, err := ShardNames(name, n)
	if err != nil {
		return nil, err
	}
	sh := &Sharded{name: name}
	for _, m := range names {
		q, err := Open(ctx, s, m, opts...)
		if err != nil {
			return nil, err
		}
		sh.members = append(sh.members, q)
	}
	return sh, nil
}

// Name returns the logical queue's name.
func (sh *Sharded) Name() string { return sh.name }

// Members returns the member queues, in shard order.
func (sh *Sharded) Members() []*Queue { return sh.members }

// pick returns the next member, round robin.
func (sh *Sharded) pick() *Queue {
	return sh.members[int((sh.next.Add(1)-1)%uint64(len(sh.members)))]
}

// Enqueue enqueues one job on the next member, round robin, and returns
// its id (unique across members: every member mints with the process's
// generator).
func (sh *Sharded) Enqueue(ctx context.Context, payload []byte) (string, error) {
	return sh.pick().Enqueue(ctx, payload)
}

// EnqueueBulk spreads the payloads over the members in equal contiguous
// runs, each run enqueued with [Queue.EnqueueBulk], the members at once.
// results[i] is payloads[i]'s. The error is the first member's that
// failed as a whole; its payloads' results then carry it too.
func (sh *Sharded) EnqueueBulk(ctx context.Context, payloads [][]byte) ([]EnqueueResult, error) {
	results := make([]EnqueueResult, len(payloads))
	n := len(sh.members)
	per := (len(payloads) + n - 1) / n
	var g errgroup.Group
	start := int(sh.next.Add(1) - 1)
	for j := 0; j*per < len(payloads); j++ {
		lo, hi := j*per, min((j+1)*per, len(payloads))
		q := sh.members[(start+j)%n]
		g.Go(func() error {
			res, err := q.EnqueueBulk(ctx, payloads[lo:hi])
			if err != nil {
				for i := lo; i < hi; i++ {
					results[i].Err = err
				}
				return err
			}
			copy(results[lo:hi], res)
			return nil
		})
	}
	return results, g.Wait()
}

// Count sums the members' counts of one set.
func (sh *Sharded) Count(ctx context.Context, set State) (int64, error) {
	var total int64
	for _, q := range sh.members {
		n, err := q.Count(ctx, set)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// ShardedWorker works a sharded queue: one [Worker] per member, each
// with an equal share of the handlers (at least one), so every member is
// served however busy the others are.
type ShardedWorker struct {
	workers []*Worker
}

// NewShardedWorker returns a worker for every member of sh, splitting
// cfg.Concurrency (and ClaimBatch) evenly between them.
func NewShardedWorker(sh *Sharded, h Handler, cfg WorkerConfig) (*ShardedWorker, error) {
	if sh == nil || len(sh.members) == 0 {
		return nil, errors.New("emq: NewShardedWorker needs a sharded queue")
	}
	n := len(sh.members)
	c := cfg
	if c.Concurrency > 0 {
		c.Concurrency = max(1, c.Concurrency/n)
	}
	if c.ClaimBatch > 0 {
		c.ClaimBatch = max(1, c.ClaimBatch/n)
	}
	sw := &ShardedWorker{}
	for _, q := range sh.members {
		w, err := NewWorker(q, h, c)
		if err != nil {
			return nil, err
		}
		sw.workers = append(sw.workers, w)
	}
	return sw, nil
}

// Workers returns the members' workers, in shard order.
func (sw *ShardedWorker) Workers() []*Worker { return sw.workers }

// Start starts every member's worker.
func (sw *ShardedWorker) Start() error {
	for i, w := range sw.workers {
		if err := w.Start(); err != nil {
			for _, started := range sw.workers[:i] {
				started.Shutdown(context.Background())
			}
			return err
		}
	}
	return nil
}

// Shutdown stops every member's worker (see [Worker.Shutdown]), all at
// once, and returns the first error.
func (sw *ShardedWorker) Shutdown(ctx context.Context) error {
	errs := make([]error, len(sw.workers))
	var wg sync.WaitGroup
	for i, w := range sw.workers {
		wg.Go(func() { errs[i] = w.Shutdown(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Run starts the workers, waits until ctx ends or one of them stops on
// its own (its connection finished), then shuts them all down.
func (sw *ShardedWorker) Run(ctx context.Context) error {
	if err := sw.Start(); err != nil {
		return err
	}
	stopped := make(chan error, len(sw.workers))
	for _, w := range sw.workers {
		go func() {
			select {
			case <-w.Done():
				stopped <- w.Err()
			case <-ctx.Done():
				stopped <- nil
			}
		}()
	}
	err := <-stopped
	sctx, cancel := context.WithTimeout(context.Background(), sw.workers[0].cfg.ShutdownTimeout)
	defer cancel()
	return errors.Join(err, sw.Shutdown(sctx))
}

// Stats sums the members' workers' counters.
func (sw *ShardedWorker) Stats() WorkerStats {
	var s WorkerStats
	for _, w := range sw.workers {
		ws := w.Stats()
		s.Rounds += ws.Rounds
		s.Claims += ws.Claims
		s.AckBatches += ws.AckBatches
		s.Claimed += ws.Claimed
		s.Completed += ws.Completed
		s.Retried += ws.Retried
		s.Dead += ws.Dead
		s.Stale += ws.Stale
		s.Abandoned += ws.Abandoned
		s.Panics += ws.Panics
		s.LeaseLost += ws.LeaseLost
		s.Errors += ws.Errors
		s.Promoted += ws.Promoted
		s.Reaped += ws.Reaped
		s.Released += ws.Released
		s.Trimmed += ws.Trimmed
		s.TimedOut += ws.TimedOut
		s.Hung += ws.Hung
	}
	return s
}
