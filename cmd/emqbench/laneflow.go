package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq-go/emq"
)

// The lanes and flow workloads (issue 27), beside e2e for a relative
// figure, -goroutines consumers over the connections. The lanes consumers
// claim with LaneClaim (the lane-aware claim) and settle with
// FlowCompleteBatch; the flow consumers settle and claim with
// FlowCompleteClaim (one call per batch, as e2e's settle_claim).
const (
	laneCount = 1000 // lanes of cap 1 the lanes workload spreads its jobs over
	laneChunk = 100  // jobs per LaneEnqueue call (as e2e's enqueue_batch)
	laneClaim = 100  // jobs per LaneClaim without -depth
)

// laneFlowRun is one lanes or flow run's state.
type laneFlowRun struct {
	cfg   config
	qq    *queues
	total int64
	begun []atomic.Int64 // Unix ns each job became known (its enqueue or submit call's start), by index
	seen  []atomic.Int32 // completions per job, by index
	dups  atomic.Int64
	calls atomic.Int64 // consumers' server calls
	pconn sender       // flow: the submitter's own connection
	pq    *emq.Queue   // flow: the queue on it
}

// lanesWorkload: -producers enqueue n jobs over 1,000 lanes of cap 1 (job
// i in lane i mod 1,000, laneChunk per LaneEnqueueMany call) while the consumers run them.
func lanesWorkload(ctx context.Context, nd *node, cfg config) (*workload, error) {
	return laneFlowWorkload(ctx, nd, cfg, fmt.Sprintf(
		"%d producer(s) LaneEnqueueMany %d jobs a call, job i in lane i mod %d (cap 1); %d consumers LaneCompleteClaim rounds of %d (complete the last batch, claim the next)",
		cfg.producers, laneChunk, laneCount, cfg.goroutines, claimSize(cfg)), (*laneFlowRun).produceLanes)
}

// flowWorkload: one flow of n jobs, a root, n-2 children of the root and
// a fan-in depending on every child, submitted (staged, in bounded
// parts) while the consumers run it; it ends when the fan-in completes.
func flowWorkload(ctx context.Context, nd *node, cfg config) (*workload, error) {
	return laneFlowWorkload(ctx, nd, cfg, fmt.Sprintf(
		"SubmitFlow of 1 flow of n jobs (root, n-2 children, fan-in) on a connection of its own; %d consumers FlowCompleteClaim (settle and claim batches of %d in one call)",
		cfg.goroutines, claimSize(cfg)), (*laneFlowRun).produceFlow)
}

func claimSize(cfg config) int {
	if cfg.depthSet {
		return min(max(cfg.depth, 1), 1000)
	}
	return laneClaim
}

func laneFlowWorkload(ctx context.Context, nd *node, cfg config, method string, produce func(*laneFlowRun, context.Context, int, int64) error) (*workload, error) {
	qq, err := openQueues(ctx, nd, cfg)
	if err != nil {
		return nil, err
	}
	if len(qq.members) > 1 {
		return nil, usageErr{fmt.Errorf("%s: -shards is not supported", cfg.workload)}
	}
	r := &laneFlowRun{cfg: cfg, qq: qq, total: cfg.n}
	if cfg.workload == "flow" && (r.total < 3 || r.total > emq.MaxFlowNodes) {
		return nil, usageErr{fmt.Errorf("flow: -n %d, want 3 to %d", r.total, emq.MaxFlowNodes)}
	}
	r.begun = make([]atomic.Int64, r.total)
	r.seen = make([]atomic.Int32, r.total)
	if cfg.workload == "flow" {
		// the submitter on a connection of its own, as e2e's producers
		// are: its pipelined parts do not queue the consumers' calls
		c, err := nd.dial(ctx)
		if err != nil {
			return nil, fmt.Errorf("producer connection: %w", err)
		}
		r.pconn = c
		if r.pq, err = emq.Open(ctx, c, qq.name, emq.WithIDGenerator(emq.DefaultIDGenerator()), emq.WithExecutorChoice(cfg.executor)); err != nil {
			c.Close()
			return nil, err
		}
	}
	return &workload{
		method: method,
		latPer: "job",
		queue:  qq.name,
		loads:  qq.loads,
		run: func(ctx context.Context, _ int64, done *atomic.Int64, lat *latencies) error {
			return r.run(ctx, done, lat, produce)
		},
		report: func(rep *report) error {
			if d := r.dups.Load(); d > 0 {
				return fmt.Errorf("%s: %d jobs completed twice", cfg.workload, d)
			}
			return nil
		},
		cleanup: qq.cleanup(nd),
		close: func() {
			if r.pconn != nil {
				r.pconn.Close()
			}
		},
	}, nil
}

// body is job i's payload: its index, then padding to -size.
func (r *laneFlowRun) body(i int64) []byte {
	p := payload(max(r.cfg.size, 8))
	binary.BigEndian.PutUint64(p, uint64(i))
	return p
}

// run starts the consumers, then the producers, until every job
// completed.
func (r *laneFlowRun) run(ctx context.Context, done *atomic.Int64, lat *latencies, produce func(*laneFlowRun, context.Context, int, int64) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, r.cfg.goroutines+r.cfg.producers)
	var wg sync.WaitGroup
	for g := range r.cfg.goroutines {
		q := r.qq.qs[g%len(r.qq.qs)]
		consume := r.consume
		if r.cfg.workload == "lanes" {
			consume = r.consumeLanes
		}
		wg.Go(func() {
			if err := consume(ctx, q, g, done, lat); err != nil && ctx.Err() == nil {
				errs <- err
			}
		})
	}
	producers := r.cfg.producers
	if r.cfg.workload == "flow" {
		producers = 1
	}
	for p := range producers {
		wg.Go(func() {
			if err := produce(r, ctx, p, int64(producers)); err != nil && ctx.Err() == nil {
				errs <- err
			}
		})
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	defer wg.Wait()
	defer cancel()
	for done.Load() < r.total {
		select {
		case err := <-errs:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// produceLanes is producer p of np: chunks p, p+np, ... of laneChunk jobs
// (LaneEnqueueMany), job i into lane i mod laneCount.
func (r *laneFlowRun) produceLanes(ctx context.Context, p int, np int64) error {
	q := r.qq.qs[p%len(r.qq.qs)]
	js := make([]emq.LaneJob, 0, laneChunk)
	for c := int64(p); c*laneChunk < r.total; c += np {
		first := c * laneChunk
		k := min(int64(laneChunk), r.total-first)
		js = js[:0]
		now := time.Now().UnixNano()
		for i := first; i < first+k; i++ {
			js = append(js, emq.LaneJob{Lane: "u" + strconv.FormatInt(i%laneCount, 10), Payload: r.body(i)})
			r.begun[i].Store(now)
		}
		if _, err := q.LaneEnqueueMany(ctx, js); err != nil {
			return fmt.Errorf("lane enqueue: %w", err)
		}
	}
	return nil
}

// produceFlow submits the run's one flow. The payloads are cut from one
// slab and the children's dependencies from one array, as e2e's producer
// cuts its payloads from a slab: no allocation per node.
func (r *laneFlowRun) produceFlow(ctx context.Context, _ int, _ int64) error {
	n := int(r.total)
	nodes := make([]emq.FlowNode, n)
	in := &nodes[n-1]
	in.Deps = make([]emq.FlowDep, 0, n-2)
	kids := make([]emq.FlowDep, n) // kids[i]: child i's one dependency, the root
	body := r.body(0)
	size := len(body)
	slab := make([]byte, n*size)
	for i := range nodes {
		p := slab[i*size : (i+1)*size : (i+1)*size]
		copy(p, body)
		binary.BigEndian.PutUint64(p, uint64(i))
		nodes[i].Payload = p
		if i > 0 && i < n-1 {
			nodes[i].Deps = kids[i : i+1 : i+1]
			in.Deps = append(in.Deps, emq.FlowDep{Node: i})
		}
	}
	now := time.Now().UnixNano()
	for i := range r.begun {
		r.begun[i].Store(now)
	}
	if _, _, err := r.pq.SubmitFlow(ctx, nodes); err != nil {
		return fmt.Errorf("submit flow: %w", err)
	}
	return nil
}

// flowPollMax bounds a flow consumer's wait after empty claims (e2e's
// Worker has PollMin 1 ms, PollMax 5 ms).
const flowPollMax = 5 * time.Millisecond

// consume is consumer g: claim a batch, run it (no-op), complete it in
// one call; back off on an empty claim, 1 ms doubling to 5 ms (e2e's
// Worker's polls): the consumers' empty polls while a staged flow is
// being submitted cost the server what the submission needs. The flow workload settles
// and claims in one call (FlowCompleteClaim, the worker's exchange for
// flow jobs); the lanes workload claims with LaneClaim and completes with
// FlowCompleteBatch.
func (r *laneFlowRun) consume(ctx context.Context, q *emq.Queue, g int, done *atomic.Int64, lat *latencies) error {
	n := claimSize(r.cfg)
	rs := make([]emq.FlowResult, 0, n)
	idx := make([]int64, 0, n)
	exchange := func(rs []emq.FlowResult) ([]bool, []emq.Job, error) {
		if r.cfg.workload == "flow" {
			ok, js, err := q.FlowCompleteClaim(ctx, rs, 0, benchLease, n)
			r.calls.Add(1)
			if err != nil {
				return nil, nil, fmt.Errorf("flow complete and claim: %w", err)
			}
			return ok, js, nil
		}
		var ok []bool
		if len(rs) > 0 {
			var err error
			ok, err = q.FlowCompleteBatch(ctx, rs, 0)
			r.calls.Add(1)
			if err != nil {
				return nil, nil, fmt.Errorf("flow complete: %w", err)
			}
		}
		js, err := q.LaneClaim(ctx, benchLease, n)
		r.calls.Add(1)
		if err != nil {
			return nil, nil, fmt.Errorf("lane claim: %w", err)
		}
		return ok, js, nil
	}
	poll := time.Millisecond
	for ctx.Err() == nil && done.Load() < r.total {
		ok, js, err := exchange(rs)
		if err != nil {
			return err
		}
		if err := r.completed(g, idx, ok, func(k int) string { return rs[k].ID }, done, lat); err != nil {
			return err
		}
		rs, idx = rs[:0], idx[:0]
		if len(js) == 0 {
			// as e2e's Worker polls an empty queue: 1 ms, doubling to 5
			time.Sleep(poll)
			poll = min(2*poll, flowPollMax)
			continue
		}
		poll = time.Millisecond
		for _, j := range js {
			i := int64(-1)
			if len(j.Payload) >= 8 {
				i = int64(binary.BigEndian.Uint64(j.Payload))
			}
			if i < 0 || i >= r.total {
				return fmt.Errorf("job %s of no index", j.ID)
			}
			rs = append(rs, emq.FlowResult{ID: j.ID, Token: j.Token})
			idx = append(idx, i)
		}
	}
	return nil
}

// consumeLanes is consumer g of the lanes workload: each round is one
// LaneCompleteClaim, completing the last batch (advancing its lanes) and
// claiming the next; back off on an empty round as e2e's Worker polls an
// empty queue (1 ms, doubling to 5): a constant 1 ms made the idle
// consumers' empty rounds 3,800 of a 100,000-job run's 4,800 claims.
func (r *laneFlowRun) consumeLanes(ctx context.Context, q *emq.Queue, g int, done *atomic.Int64, lat *latencies) error {
	n := claimSize(r.cfg)
	acks := make([]emq.Ack, 0, n)
	idx := make([]int64, 0, n)
	poll := time.Millisecond
	for ctx.Err() == nil && done.Load() < r.total {
		ok, js, err := q.LaneCompleteClaim(ctx, acks, 0, benchLease, n)
		r.calls.Add(1)
		if err != nil {
			return fmt.Errorf("lane complete/claim: %w", err)
		}
		if err := r.completed(g, idx, ok, func(k int) string { return acks[k].ID }, done, lat); err != nil {
			return err
		}
		acks, idx = acks[:0], idx[:0]
		if len(js) == 0 {
			time.Sleep(poll)
			poll = min(2*poll, flowPollMax)
			continue
		}
		poll = time.Millisecond
		for _, j := range js {
			if len(j.Payload) < 8 || binary.BigEndian.Uint64(j.Payload) >= uint64(r.total) {
				return fmt.Errorf("job %s of no index", j.ID)
			}
			acks = append(acks, emq.Ack{ID: j.ID, Token: j.Token})
			idx = append(idx, int64(binary.BigEndian.Uint64(j.Payload)))
		}
	}
	return nil
}

// completed accounts for the settled jobs of indices idx, ok[k] saying
// job k (of id id(k)) completed: a stale one fails the run, one completed
// twice is counted.
func (r *laneFlowRun) completed(g int, idx []int64, ok []bool, id func(int) string, done *atomic.Int64, lat *latencies) error {
	now := time.Now().UnixNano()
	for k, i := range idx {
		if !ok[k] {
			return fmt.Errorf("job %s: stale", id(k))
		}
		if r.seen[i].Add(1) > 1 {
			r.dups.Add(1)
			continue
		}
		lat.record(g, time.Duration(now-r.begun[i].Load()))
		done.Add(1)
	}
	return nil
}
