package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// 1. connect: RESP3 via HELLO 3, or RESP2 where the server refuses HELLO.
func (g *gate) connect(ctx context.Context) (string, error) {
	c := g.nd.conns[0]
	var how string
	switch {
	case g.nd.probe.Protocol() == 3:
		how = "RESP3 via HELLO 3"
	case g.nd.opts.Protocol == 2:
		how = "RESP2 (protocol=2 asked for)"
	default:
		how = "RESP2: the server refused HELLO 3"
	}
	t0 := time.Now()
	v, err := c.Do(ctx, "PING")
	rtt := time.Since(t0)
	if err != nil {
		return how, err
	}
	if !v.Equal("PONG") {
		return how, fmt.Errorf("PING answered %q", v)
	}
	return fmt.Sprintf("%s; %s; PING %s", how, g.nd.server, fmtUS(float64(rtt.Nanoseconds())/1e3)), nil
}

// 2. fence: {emq}:version read or initialised; a foreign major refused.
// The refusal is shown in a scratch database (9, or 8 when the run uses
// 9), whose fence key is put back as it was.
func (g *gate) fence(ctx context.Context) (string, error) {
	c := g.nd.conns[0]
	before, had, err := getKey(ctx, c, emq.VersionKey)
	if err != nil {
		return "", err
	}
	if _, _, err := g.queue(ctx, 2); err != nil {
		return "", fmt.Errorf("open: %w", err)
	}
	after, _, err := getKey(ctx, c, emq.VersionKey)
	if err != nil {
		return "", err
	}
	var detail string
	switch {
	case !had && after == emq.Version:
		detail = fmt.Sprintf("%s absent, initialised to %s", emq.VersionKey, after)
	case had && after == before:
		detail = fmt.Sprintf("%s read: %s", emq.VersionKey, after)
	default:
		return "", fmt.Errorf("%s was %q, is %q after open", emq.VersionKey, before, after)
	}
	refusal, err := g.foreignMajor(ctx)
	return joinDetail(detail, refusal), err
}

// foreignMajor sets a fence to echomq:5.0.0 and checks that opening a
// queue there is refused, naming both versions: the fence of a scratch
// database (9, or 8 when the run uses 9), or, on a cluster, which has one
// database, the live fence key for a moment, put back at once.
func (g *gate) foreignMajor(ctx context.Context) (string, error) {
	const foreign = "echomq:5.0.0"
	var c conn.Sender
	where := "the live fence (cluster: no scratch database)"
	if g.nd.cluster {
		c = g.nd.conns[0]
	} else {
		db := 9
		if g.nd.opts.DB == db {
			db = 8
		}
		o := g.nd.opts
		o.DB = db
		dc, err := conn.Dial(ctx, o)
		if err != nil {
			return "", fmt.Errorf("scratch db %d: %w", db, err)
		}
		defer dc.Close()
		c, where = dc, fmt.Sprintf("db %d", db)
	}
	// SET … GET swaps in the foreign fence and returns the old one in one step.
	old, err := c.Do(ctx, "SET", emq.VersionKey, foreign, "GET")
	if err != nil {
		return "", err
	}
	_, openErr := emq.Open(ctx, c, g.prefix+"-2")
	// Put the fence back as it was, whatever the outcome.
	if !old.IsNull() {
		_, err = c.Do(ctx, "SET", emq.VersionKey, old.Text())
	} else {
		_, err = c.Do(ctx, "DEL", emq.VersionKey)
	}
	if err != nil {
		return "", fmt.Errorf("restoring %s in %s: %w", emq.VersionKey, where, err)
	}
	switch {
	case openErr == nil:
		return "", fmt.Errorf("%s in %s was accepted", foreign, where)
	case !errors.Is(openErr, emq.ErrFence):
		return "", fmt.Errorf("open in %s failed otherwise: %w", where, openErr)
	case !strings.Contains(openErr.Error(), foreign) || !strings.Contains(openErr.Error(), emq.Version):
		return "", fmt.Errorf("the refusal does not name both versions: %q", openErr)
	}
	return fmt.Sprintf("%s in %s refused: %q", foreign, where, openErr.Error()), nil
}

// getKey returns the string at key, and whether it exists.
func getKey(ctx context.Context, s conn.Sender, key string) (string, bool, error) {
	v, err := s.Do(ctx, "GET", key)
	if err != nil {
		return "", false, err
	}
	return v.Text(), !v.IsNull(), nil
}

// 3. script_loads = 1: after SCRIPT FLUSH, 64 concurrent callers and a
// 1,000-command pipeline start cold; the executor sends exactly one SCRIPT
// LOAD and the server counts exactly one. On the native executor the
// record is script_loads = 0: the same cold start sends no SCRIPT LOAD and
// no EVALSHA, and the server counts one EMQ.ENQUEUE per job.
func (g *gate) scriptLoads(ctx context.Context) (string, error) {
	if g.native {
		return g.scriptLoadsNative(ctx)
	}
	const callers, pipelined = 64, 1000
	// Every caller's EVALSHA and the pipeline are held at a barrier and
	// written together, so all of them certainly meet the empty cache.
	cold := newColdStart(g.nd.conns[0], callers+1, 5*time.Second)
	x := dispatch.NewScripted(cold)
	q, err := emq.Open(ctx, g.nd.conns[0], g.prefix+"-3", emq.WithExecutor(x))
	if err != nil {
		return "", err
	}
	if err := flushAndReset(ctx, g.nd.conns[0]); err != nil {
		return "", err
	}
	loads0, noScripts0 := g.nd.routedLoads(), g.nd.routedNoScripts()
	if err := coldEnqueue(ctx, q, callers, pipelined); err != nil {
		return "", err
	}
	st := x.Stats()
	loads := st.Loads + g.nd.routedLoads() - loads0
	server, err := g.nd.commandCallsAll(ctx, "script|load")
	if err != nil {
		return "", err
	}
	detail := fmt.Sprintf("script_loads = %d (%s, server cmdstat_script|load %d); %d callers + a %s-command pipeline sent cold as one submission (%d of %d callers held together), %s NOSCRIPT, all enqueued",
		loads, g.nd.loadsBy(st.Loads, g.nd.routedLoads()-loads0), server, callers, group(pipelined), cold.together(), callers+1, group(int64(st.NoScripts)+int64(g.nd.routedNoScripts()-noScripts0)))
	if loads != 1 || server != 1 {
		return detail, errors.New("want exactly one SCRIPT LOAD")
	}
	return detail, nil
}

// coldEnqueue runs check 3's load: callers concurrent enqueues and one
// pipeline of pipelined more, all at once; any error fails it.
func coldEnqueue(ctx context.Context, q *emq.Queue, callers, pipelined int) error {
	p := payload(16)
	batch := make([][]byte, pipelined)
	for i := range batch {
		batch[i] = p
	}
	errs := make(chan error, callers+1)
	var wg sync.WaitGroup
	wg.Go(func() { errs <- enqueueAll(ctx, q, batch) })
	for range callers {
		wg.Go(func() {
			_, err := q.Enqueue(ctx, p)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// scriptLoadsNative is check 3 on the native executor.
func (g *gate) scriptLoadsNative(ctx context.Context) (string, error) {
	const callers, pipelined = 64, 1000
	cold := newColdStart(g.nd.conns[0], callers+1, 5*time.Second)
	x, _ := g.executor(cold)
	q, err := emq.Open(ctx, g.nd.conns[0], g.prefix+"-3", emq.WithExecutor(x))
	if err != nil {
		return "", err
	}
	if err := flushAndReset(ctx, g.nd.conns[0]); err != nil {
		return "", err
	}
	if err := coldEnqueue(ctx, q, callers, pipelined); err != nil {
		return "", err
	}
	counts := map[string]int64{}
	for _, name := range []string{"script|load", "evalsha", "emq.enqueue", "emq.enqueue_batch"} {
		if counts[name], err = g.nd.commandCallsAll(ctx, name); err != nil {
			return "", err
		}
	}
	native := counts["emq.enqueue"] + counts["emq.enqueue_batch"]
	detail := fmt.Sprintf("script_loads = 0 (native executor; server cmdstat_script|load %d, cmdstat_evalsha %d, EMQ.ENQUEUE/EMQ.ENQUEUE_BATCH %d); %d callers + a %s-command pipeline sent cold as one submission (%d of %d callers held together), all enqueued",
		counts["script|load"], counts["evalsha"], native, callers, group(pipelined), cold.together(), callers+1)
	switch {
	case counts["script|load"] != 0 || counts["evalsha"] != 0:
		return detail, errors.New("the native executor sent a script")
	case native == 0:
		return detail, errors.New("no EMQ.* command reached the server")
	}
	return detail, nil
}

// flushAndReset empties the script cache and resets INFO statistics.
func flushAndReset(ctx context.Context, s conn.Sender) error {
	if _, err := s.Do(ctx, "SCRIPT", "FLUSH"); err != nil {
		return err
	}
	_, err := s.Do(ctx, "CONFIG", "RESETSTAT")
	return err
}

// 4. pipelined EVALSHA throughput: the enqueue workload at depth 100.
func (g *gate) throughput(ctx context.Context) (string, error) {
	cfg := config{
		workload: "enqueue", conns: len(g.nd.conns), goroutines: 4, depth: 100,
		size: 16, n: 20_000, queue: g.prefix + "-4", queueSet: true, keep: true,
		executor: emq.ExecutorScript, // the gate measures EVALSHA
	}
	how := "EVALSHA"
	if g.native {
		cfg.executor, how = emq.ExecutorNative, "EMQ.ENQUEUE"
	}
	wl, err := enqueueWorkload(ctx, g.nd, cfg)
	if err != nil {
		return "", err
	}
	m := measure(ctx, cfg, wl, nil)
	h := m.lat.merged()
	detail := fmt.Sprintf("%s ops/s (%s enqueues by %s, depth 100, %d goroutines; batch p50 %s)",
		group(int64(float64(m.ops)/m.elapsed.Seconds())), group(m.ops), how, cfg.goroutines,
		fmtUS(float64(h.ValueAtQuantile(50))/1e3))
	if m.err != nil {
		return detail, m.err
	}
	if m.ops != cfg.n {
		return detail, fmt.Errorf("%d of %d enqueued (%s)", m.ops, cfg.n, m.stopped)
	}
	return detail, nil
}

// 5. a 10,000-command pipeline of INCR returns 1..10000 in order.
func (g *gate) pipelineOrder(ctx context.Context) (string, error) {
	const n = 10_000
	c := g.nd.conns[0]
	key := g.incrKey()
	if _, err := c.Do(ctx, "DEL", key); err != nil {
		return "", err
	}
	var b pipeline.Batch
	for range n {
		b.Add("INCR", key)
	}
	t0 := time.Now()
	err := b.Exec(ctx, c)
	took := time.Since(t0)
	if err != nil {
		return "", err
	}
	for i, v := range b.Replies() {
		if v.Type != resp.Integer || v.Int != int64(i+1) {
			return "", fmt.Errorf("reply %d is %s (%s), want %d", i, v, v.Type, i+1)
		}
	}
	if _, err := c.Do(ctx, "DEL", key); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s INCR replies 1..%d in order, one pipeline in %s", group(n), n, took.Round(time.Microsecond)), nil
}

// 6. enqueue → claim → complete; a stale token's complete answers 0.
func (g *gate) staleToken(ctx context.Context) (string, error) {
	q, _, err := g.queue(ctx, 6)
	if err != nil {
		return "", err
	}
	id, err := q.Enqueue(ctx, []byte("gate"))
	if err != nil {
		return "", fmt.Errorf("enqueue: %w", err)
	}
	job, ok, err := q.Claim(ctx, 30*time.Second)
	switch {
	case err != nil:
		return "", fmt.Errorf("claim: %w", err)
	case !ok || job.ID != id || job.Token != 1:
		return "", fmt.Errorf("claim got %q token %d (ok %t), want %q token 1", job.ID, job.Token, ok, id)
	}
	if err := q.Complete(ctx, id, job.Token-1, 0); !errors.Is(err, emq.ErrStale) {
		return "", fmt.Errorf("complete with stale token %d: %v, want 0 (stale)", job.Token-1, err)
	}
	if err := q.Complete(ctx, id, job.Token, 0); err != nil {
		return "", fmt.Errorf("complete with token %d: %w", job.Token, err)
	}
	if err := q.Complete(ctx, id, job.Token, 0); !errors.Is(err, emq.ErrStale) {
		return "", fmt.Errorf("second complete with token %d: %v, want 0 (stale)", job.Token, err)
	}
	return fmt.Sprintf("enqueue %s → claim token 1 → complete = 1; stale token 0 → 0; spent token 1 again → 0", id), nil
}

// 7. SCRIPT FLUSH in the middle of a pipelined run: every command
// succeeds, and each script is loaded again exactly once.
func (g *gate) flushReload(ctx context.Context) (string, error) {
	q, xloads, err := g.queue(ctx, 7)
	if err != nil {
		return "", err
	}
	const (
		workers = 4   // two enqueue, two claim + complete
		rounds  = 40  // batches per worker
		depth   = 100 // enqueues per pipeline; claims take half
		flushAt = 10  // batches done, all workers together, before the flush
	)
	p := payload(16)
	batch := make([][]byte, depth)
	for i := range batch {
		batch[i] = p
	}
	// Pre-fill enough for every claim, and load the three scripts.
	for range rounds + 1 {
		if err := enqueueAll(ctx, q, batch); err != nil {
			return "", fmt.Errorf("pre-fill: %w", err)
		}
	}
	if err := claimComplete(ctx, q, 1); err != nil {
		return "", fmt.Errorf("warm-up: %w", err)
	}
	if _, err := g.nd.conns[0].Do(ctx, "CONFIG", "RESETSTAT"); err != nil {
		return "", err
	}
	flusher, err := g.nd.dial(ctx)
	if err != nil {
		return "", err
	}
	defer flusher.Close()
	exec0, routed0 := xloads(), g.nd.routedLoads()
	loads0 := exec0 + routed0
	var done atomic.Int64
	flushed := make(chan error, 1)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range rounds {
				var err error
				if w < 2 {
					err = enqueueAll(ctx, q, batch)
				} else {
					err = claimComplete(ctx, q, depth/2)
				}
				if err != nil {
					errs <- err
					return
				}
				if done.Add(1) == flushAt {
					_, err := flusher.Do(ctx, "SCRIPT", "FLUSH")
					flushed <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return "", err
	}
	if err := <-flushed; err != nil {
		return "", fmt.Errorf("SCRIPT FLUSH: %w", err)
	}
	loads := xloads() + g.nd.routedLoads() - loads0
	server, err := g.nd.commandCallsAll(ctx, "script|load")
	if err != nil {
		return "", err
	}
	cmds := 2*rounds*depth + 2*rounds*2
	if g.native {
		// Nothing to reload: the module's commands outlive SCRIPT FLUSH.
		detail := fmt.Sprintf("SCRIPT FLUSH after %d of %d batches; %s commands all succeeded; reloads 0 (native executor; server cmdstat_script|load %d)",
			flushAt, workers*rounds, group(int64(cmds)), server)
		if loads != 0 || server != 0 {
			return detail, errors.New("the native executor loaded a script")
		}
		return detail, nil
	}
	detail := fmt.Sprintf("SCRIPT FLUSH after %d of %d batches; %s commands all succeeded; reloads %d for 3 scripts (enqueue, claim_batch, complete_batch; %s; server cmdstat_script|load %d)",
		flushAt, workers*rounds, group(int64(cmds)), loads, g.nd.loadsBy(xloads()-exec0, g.nd.routedLoads()-routed0), server)
	if loads != 3 || server != 3 {
		return detail, errors.New("want one reload per script")
	}
	return detail, nil
}

// enqueueAll enqueues the payloads in one pipeline; any job's error fails.
func enqueueAll(ctx context.Context, q *emq.Queue, payloads [][]byte) error {
	res, err := q.EnqueueBatch(ctx, payloads)
	for _, r := range res {
		if err == nil {
			err = r.Err
		}
	}
	return err
}

// claimComplete claims exactly n jobs in one claim_batch and completes
// them in one complete_batch.
func claimComplete(ctx context.Context, q *emq.Queue, n int) error {
	jobs, err := q.ClaimBatch(ctx, 30*time.Second, n)
	if err != nil {
		return err
	}
	if len(jobs) != n {
		return fmt.Errorf("claim_batch got %d jobs, want %d", len(jobs), n)
	}
	acks := make([]emq.Ack, len(jobs))
	for i, j := range jobs {
		acks[i] = emq.Ack{ID: j.ID, Token: j.Token}
	}
	done, err := q.CompleteBatch(ctx, acks, 0)
	if err != nil {
		return err
	}
	for i, ok := range done {
		if !ok {
			return fmt.Errorf("complete of %s answered 0", acks[i].ID)
		}
	}
	return nil
}

// 8. a lease expires, reap returns the job to pending, and the second
// claim's token is attempts = 2.
func (g *gate) leaseReap(ctx context.Context) (string, error) {
	q, _, err := g.queue(ctx, 8)
	if err != nil {
		return "", err
	}
	const lease = 50 * time.Millisecond
	id, err := q.Enqueue(ctx, []byte("gate"))
	if err != nil {
		return "", fmt.Errorf("enqueue: %w", err)
	}
	first, ok, err := q.Claim(ctx, lease)
	if err != nil || !ok || first.ID != id || first.Token != 1 {
		return "", fmt.Errorf("first claim: %q token %d ok %t err %v", first.ID, first.Token, ok, err)
	}
	time.Sleep(3 * lease)
	n, err := q.Reap(ctx, 100, 25)
	if err != nil || n != 1 {
		return "", fmt.Errorf("reap after the lease: %d, %v; want 1", n, err)
	}
	pending, err := q.PendingSize(ctx)
	if err != nil || pending != 1 {
		return "", fmt.Errorf("pending after reap: %d, %v; want 1", pending, err)
	}
	second, ok, err := q.Claim(ctx, 30*time.Second)
	if err != nil || !ok || second.ID != id {
		return "", fmt.Errorf("second claim: %q ok %t err %v; want %q", second.ID, ok, err, id)
	}
	detail := fmt.Sprintf("lease %s expired; reap = 1, job back in pending; second claim token attempts = %s",
		lease, strconv.FormatInt(second.Token, 10))
	if second.Token != 2 {
		return detail, errors.New("want attempts = 2")
	}
	if err := q.Complete(ctx, id, first.Token, 0); !errors.Is(err, emq.ErrStale) {
		return detail, fmt.Errorf("complete with the first token: %v, want 0 (stale)", err)
	}
	if err := q.Complete(ctx, id, second.Token, 0); err != nil {
		return detail, fmt.Errorf("complete with the second token: %w", err)
	}
	return detail + "; first token's complete = 0, second's = 1", nil
}
