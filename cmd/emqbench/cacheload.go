package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq-go/cache"
	"github.com/echomq/echomq-go/conn"
)

// cacheSample is one read in cacheSampleEvery whose latency is recorded:
// a hit costs about as much as recording it would.
const cacheSampleEvery = 32

// cacheWorkload measures cached reads: -goroutines readers read a
// Zipf-distributed key space of -keys keys through one cache.Cache while
// -writers writers update the same keys (uniformly, each writer its own
// keys, in order) with versioned values, through the same Cache. One
// operation is one read. A read that returns a version older than the
// newest write acknowledged before it started is stale, and any stale
// read fails the run. -chaos kills the Cache's connection every so often
// (CLIENT KILL from another connection): the Cache must empty itself and
// redial, and still serve nothing stale.
func cacheWorkload(ctx context.Context, nd *node, cfg config) (*workload, error) {
	prefix := "emqbench:" + nd.runID + ":c:"
	o := cache.Options{Options: nd.opts}
	o.MinBackoff, o.MaxBackoff = time.Millisecond, 100*time.Millisecond
	var c cacheClient
	if nd.cluster {
		if cfg.chaos > 0 {
			return nil, usageErr{errors.New("-chaos needs a standalone node")}
		}
		cc, err := cache.NewCluster(ctx, cache.ClusterOptions{Options: o, Addrs: []string{nd.opts.Addr}})
		if err != nil {
			return nil, fmt.Errorf("cache: %w", err)
		}
		c = clusterClient{cc}
	} else {
		sc, err := cache.New(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("cache: %w", err)
		}
		c = standaloneClient{sc}
	}
	cw := &cacheRun{cfg: cfg, nd: nd, c: c, prefix: prefix, acked: make([]atomic.Int64, cfg.keys)}
	cw.keys(cfg.keys)
	return &workload{
		method: fmt.Sprintf("GET through cache.%s of %d keys (Zipf s=1.1, %d B versioned values), %d writer(s) SET through the same cache",
			c.name(), cfg.keys, cfg.size, cfg.writers),
		latPer:  "read",
		prepare: cw.prepare,
		run:     cw.run,
		close:   func() { c.Close() },
		finish:  cw.finish,
		report:  cw.check,
		cleanup: func(ctx context.Context) (int, error) {
			return deleteMatching(ctx, nd, globEscape(prefix)+"*")
		},
	}, nil
}

// cacheRun is one cache run.
type cacheRun struct {
	cfg    config
	nd     *node
	c      cacheClient
	prefix string
	names  []string
	acked  []atomic.Int64 // newest version of key i whose write was acknowledged

	writes, writeErrs, readErrs, kills atomic.Int64
	stale                              atomic.Int64
	mu                                 sync.Mutex
	firstStale                         string
	s0                                 cache.Stats
}

// keys makes the key names.
func (cw *cacheRun) keys(n int) []string {
	if cw.names == nil {
		cw.names = make([]string, n)
		for i := range cw.names {
			cw.names[i] = cw.prefix + strconv.Itoa(i)
		}
	}
	return cw.names
}

// value is version v padded to -size bytes.
func (cw *cacheRun) value(buf []byte, v int64) []byte {
	buf = strconv.AppendInt(buf[:0], v, 10)
	buf = append(buf, ':')
	for len(buf) < cw.cfg.size {
		buf = append(buf, 'x')
	}
	return buf
}

// version reads the version a value carries.
func version(v []byte) (int64, error) {
	for i, b := range v {
		if b == ':' {
			return strconv.ParseInt(string(v[:i]), 10, 64)
		}
	}
	return 0, fmt.Errorf("value %.20q carries no version", v)
}

// prepare writes version 0 of every key.
func (cw *cacheRun) prepare(ctx context.Context) error {
	return fillKeys(ctx, cw.nd, cw.prefix, cw.cfg.keys, cw.value(nil, 0))
}

// run reads total times from the readers while the writers and, with
// -chaos, the killer run until the readers are done.
func (cw *cacheRun) run(ctx context.Context, total int64, done *atomic.Int64, lat *latencies) error {
	cw.s0 = cw.c.Stats()
	bg, stopBG := context.WithCancel(ctx)
	var bgwg sync.WaitGroup
	for w := range cw.cfg.writers {
		bgwg.Go(func() { cw.write(bg, w) })
	}
	if cw.cfg.chaos > 0 {
		bgwg.Go(func() { cw.chaos(bg) })
	}
	var next atomic.Int64
	var failed error
	var once sync.Once
	var wg sync.WaitGroup
	for g := range cw.cfg.goroutines {
		wg.Go(func() {
			if err := cw.read(ctx, g, total, &next, done, lat); err != nil {
				once.Do(func() { failed = err })
			}
		})
	}
	wg.Wait()
	stopBG()
	bgwg.Wait()
	return failed
}

// read is one reader.
func (cw *cacheRun) read(ctx context.Context, g int, total int64, next, done *atomic.Int64, lat *latencies) error {
	r := rand.New(rand.NewPCG(uint64(g)+1, uint64(time.Now().UnixNano())))
	z := rand.NewZipf(r, 1.1, 1, uint64(cw.cfg.keys-1))
	buf := make([]byte, 0, cw.cfg.size+32)
	for ctx.Err() == nil {
		op := next.Add(1) - 1
		if op >= total {
			return nil
		}
		k := int(z.Uint64())
		want := cw.acked[k].Load()
		var t0 time.Time
		sample := op%cacheSampleEvery == 0
		if sample {
			t0 = time.Now()
		}
		v, found, err := cw.c.GetInto(ctx, buf[:0], cw.names[k], time.Hour)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if cw.cfg.chaos > 0 && (errors.Is(err, cache.ErrNotConnected) || errors.Is(err, conn.ErrBroken)) {
				cw.readErrs.Add(1)
				next.Add(-1) // not a read: try again
				time.Sleep(100 * time.Microsecond)
				continue
			}
			return fmt.Errorf("read %s: %w", cw.names[k], err)
		}
		if sample {
			lat.record(g, time.Since(t0))
		}
		buf = v
		if !found {
			return fmt.Errorf("read %s: no such key", cw.names[k])
		}
		got, err := version(v)
		if err != nil {
			return fmt.Errorf("read %s: %w", cw.names[k], err)
		}
		if got < want {
			if cw.stale.Add(1) == 1 {
				cw.mu.Lock()
				cw.firstStale = fmt.Sprintf("%s: read version %d, version %d was acknowledged before the read", cw.names[k], got, want)
				cw.mu.Unlock()
			}
		}
		done.Add(1)
	}
	return nil
}

// write is writer w: it owns the keys k with k % writers == w, picks one
// at random and writes its next version, until ctx ends.
func (cw *cacheRun) write(ctx context.Context, w int) {
	r := rand.New(rand.NewPCG(uint64(w)+1000, uint64(time.Now().UnixNano())))
	n := cw.cfg.keys / cw.cfg.writers
	if w < cw.cfg.keys%cw.cfg.writers {
		n++
	}
	if n == 0 {
		return
	}
	versions := make([]int64, n)
	var buf []byte
	for ctx.Err() == nil {
		i := r.IntN(n)
		k := w + i*cw.cfg.writers
		versions[i]++
		buf = cw.value(buf, versions[i])
		err := cw.c.set(ctx, cw.names[k], string(buf))
		if err != nil {
			if ctx.Err() != nil {
				return // the run is over
			}
			// Not acknowledged: it may or may not have been applied;
			// the next version is higher either way.
			cw.writeErrs.Add(1)
			if cw.cfg.chaos == 0 {
				return
			}
			time.Sleep(100 * time.Microsecond)
			continue
		}
		cw.acked[k].Store(versions[i])
		cw.writes.Add(1)
	}
}

// chaos kills the Cache's connection every cfg.chaos until ctx ends.
func (cw *cacheRun) chaos(ctx context.Context) {
	t := time.NewTicker(cw.cfg.chaos)
	defer t.Stop()
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
		v, err := cw.c.(standaloneClient).Do(ctx, "CLIENT", "ID")
		if err != nil {
			continue
		}
		if _, err := cw.nd.probe.Do(ctx, "CLIENT", "KILL", "ID", strconv.FormatInt(v.Int, 10)); err == nil {
			cw.kills.Add(1)
		}
	}
}

// cacheReport is what a cache run saw.
type cacheReport struct {
	HitRatio      float64 `json:"hit_ratio"`
	Hits          uint64  `json:"hits"`
	Misses        uint64  `json:"misses"`
	Stale         int64   `json:"stale"`
	Writes        int64   `json:"writes"`
	WriteErrors   int64   `json:"write_errors"`
	ReadRetries   int64   `json:"read_retries"`
	Invalidations uint64  `json:"invalidations"`
	Discarded     uint64  `json:"discarded"`
	Evictions     uint64  `json:"evictions"`
	Flushes       uint64  `json:"flushes"`
	Kills         int64   `json:"kills"`
	Reconnects    uint64  `json:"reconnects"`
	Bytes         int64   `json:"bytes"`
}

// finish puts the cache's figures in the report.
func (cw *cacheRun) finish(r *report) {
	s := cw.c.Stats()
	x := &cacheReport{
		Hits: s.Hits - cw.s0.Hits, Misses: s.Misses - cw.s0.Misses,
		Stale: cw.stale.Load(), Writes: cw.writes.Load(), WriteErrors: cw.writeErrs.Load(),
		ReadRetries: cw.readErrs.Load(), Invalidations: s.Invalidations - cw.s0.Invalidations,
		Discarded: s.Discarded - cw.s0.Discarded, Evictions: s.Evictions - cw.s0.Evictions,
		Flushes: s.Flushes - cw.s0.Flushes, Kills: cw.kills.Load(), Reconnects: s.Reconnects - cw.s0.Reconnects,
		Bytes: s.Bytes,
	}
	if x.Hits+x.Misses > 0 {
		x.HitRatio = float64(x.Hits) / float64(x.Hits+x.Misses)
	}
	r.Cache = x
}

// check fails the run on a stale read.
func (cw *cacheRun) check(r *report) error {
	if n := cw.stale.Load(); n > 0 {
		cw.mu.Lock()
		defer cw.mu.Unlock()
		return fmt.Errorf("%d stale reads; the first: %s", n, cw.firstStale)
	}
	return nil
}

// write prints the cache lines of the text report.
func (x *cacheReport) write(w io.Writer) {
	fmt.Fprintf(w, "  cache        hit ratio %.4f (%s hits, %s misses); stale %d; %s writes (%d failed)\n",
		x.HitRatio, group(int64(x.Hits)), group(int64(x.Misses)), x.Stale, group(x.Writes), x.WriteErrors)
	fmt.Fprintf(w, "  invalidation %s entries invalidated, %s replies discarded (raced a write), %s evictions, %d flushes, %d kills, %d reconnects\n",
		group(int64(x.Invalidations)), group(int64(x.Discarded)), group(int64(x.Evictions)), x.Flushes, x.Kills, x.Reconnects)
}

// cacheClient is a cache.Cache or a cache.ClusterCache.
type cacheClient interface {
	GetInto(ctx context.Context, dst []byte, key string, ttl time.Duration) ([]byte, bool, error)
	set(ctx context.Context, key, val string) error
	Stats() cache.Stats
	Close() error
	name() string
}

type standaloneClient struct{ *cache.Cache }

func (c standaloneClient) set(ctx context.Context, key, val string) error {
	_, err := c.Do(ctx, "SET", key, val)
	return err
}
func (standaloneClient) name() string { return "Cache" }

type clusterClient struct{ *cache.ClusterCache }

func (c clusterClient) set(ctx context.Context, key, val string) error {
	_, err := c.Do(ctx, key, "SET", key, val)
	return err
}
func (clusterClient) name() string { return "ClusterCache" }
