// Command cachebench runs one cached-read workload against echomq-go's
// cache.Cache, rueidis's client-side cache (DoCache) and no cache
// (echomq-go's conn.Client, plain GET), side by side in one run, in
// interleaved rounds.
//
//	go run ./cmd/cachebench [-addr host:port] [-n 500000] [-keys 10000] [-goroutines 8] [-writers 1] [-rounds 3]
//
// Readers read a Zipf-distributed (s=1.1) key space, a writer updates
// keys chosen uniformly with versioned values through the same client,
// as fast as it can with -writers 1 (or none with -writers 0). For each
// client and round it prints reads/s, the hit ratio, client CPU per read
// (getrusage, the whole process, so the writer counts too), heap
// allocations per read, and stale reads (a read that returned a version
// older than the newest write acknowledged before it started). It exits
// 1 when echomq-go's cache served a stale read; the peers' stale reads
// are reported, not judged.
//
// Without -addr it starts redis-server (valkey-server when on PATH) on a
// free loopback port with --save "" --appendonly no and stops it by pid.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/echomq/echomq-go/cache"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
	"github.com/redis/rueidis"
)

type config struct {
	addr                            string
	n                               int64
	keys, goroutines, writers, size int
	rounds                          int
}

// client is one contender: get reads key (appending to dst), set writes.
type client interface {
	get(ctx context.Context, dst []byte, key string) ([]byte, bool, error)
	set(ctx context.Context, key, val string) error
	hits() (hits, misses uint64)
	close()
}

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "", "server address (default: start a private redis-server/valkey-server)")
	flag.Int64Var(&cfg.n, "n", 500_000, "reads per client per round")
	flag.IntVar(&cfg.keys, "keys", 10_000, "key space")
	flag.IntVar(&cfg.goroutines, "goroutines", 8, "reader goroutines")
	flag.IntVar(&cfg.writers, "writers", 1, "writer goroutines (0 or more)")
	flag.IntVar(&cfg.size, "size", 16, "value size in bytes")
	flag.IntVar(&cfg.rounds, "rounds", 3, "interleaved rounds")
	flag.Parse()
	if cfg.addr == "" {
		addr, stop, err := startServer()
		if err != nil {
			fmt.Fprintln(os.Stderr, "cachebench:", err)
			os.Exit(2)
		}
		defer stop()
		cfg.addr = addr
	}
	fmt.Printf("cachebench: %s, %d reads per run, %d keys (Zipf s=1.1), %d readers, %d writer(s), %d B values, GOMAXPROCS %d\n",
		cfg.addr, cfg.n, cfg.keys, cfg.goroutines, cfg.writers, cfg.size, runtime.GOMAXPROCS(0))
	fmt.Printf("%-8s %5s %12s %9s %13s %12s %6s %8s\n", "client", "round", "reads/s", "hit", "CPU µs/read", "allocs/read", "stale", "writes")
	failed := false
	for round := 1; round <= cfg.rounds; round++ {
		for _, name := range []string{"echomq", "rueidis", "nocache"} {
			r, err := runOne(cfg, name)
			if err != nil {
				fmt.Fprintf(os.Stderr, "cachebench: %s: %v\n", name, err)
				os.Exit(1)
			}
			fmt.Printf("%-8s %5d %12.0f %9.4f %13.3f %12.2f %6d %8d\n", name, round, r.readsPerSec, r.hitRatio, r.cpuPerRead, r.allocsPerRead, r.stale, r.writes)
			failed = failed || name == "echomq" && r.stale > 0
		}
	}
	if failed {
		os.Exit(1)
	}
}

type result struct {
	readsPerSec, hitRatio, cpuPerRead, allocsPerRead float64
	stale, writes                                    int64
}

func newClient(ctx context.Context, cfg config, name string) (client, error) {
	switch name {
	case "echomq":
		c, err := cache.New(ctx, cache.Options{Options: conn.Options{Addr: cfg.addr}})
		if err != nil {
			return nil, err
		}
		return echomqCache{c}, nil
	case "rueidis":
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{cfg.addr}, ForceSingleClient: true})
		if err != nil {
			return nil, err
		}
		return &rueidisCache{c: c}, nil
	default:
		c, err := conn.NewClient(ctx, conn.Options{Addr: cfg.addr})
		if err != nil {
			return nil, err
		}
		return &noCache{c: c}, nil
	}
}

func runOne(cfg config, name string) (result, error) {
	ctx := context.Background()
	cl, err := newClient(ctx, cfg, name)
	if err != nil {
		return result{}, err
	}
	defer cl.close()
	names := make([]string, cfg.keys)
	val := func(v int64) string {
		s := strconv.FormatInt(v, 10) + ":"
		for len(s) < cfg.size {
			s += "x"
		}
		return s
	}
	for i := range names {
		names[i] = "cachebench:" + strconv.Itoa(i)
		if err := cl.set(ctx, names[i], val(0)); err != nil {
			return result{}, err
		}
	}
	acked := make([]atomic.Int64, cfg.keys)
	h0, m0 := cl.hits()
	var stale, writes atomic.Int64
	bg, stop := context.WithCancel(ctx)
	var bgwg sync.WaitGroup
	for w := range cfg.writers {
		bgwg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w)+99, 1))
			n := (cfg.keys - w + cfg.writers - 1) / cfg.writers
			versions := make([]int64, n)
			for bg.Err() == nil {
				i := r.IntN(n)
				k := w + i*cfg.writers
				versions[i]++
				if err := cl.set(bg, names[k], val(versions[i])); err != nil {
					return
				}
				acked[k].Store(versions[i])
				writes.Add(1)
			}
		})
	}
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	u0, a0 := usage()
	start := time.Now()
	for g := range cfg.goroutines {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g)+1, 2))
			z := rand.NewZipf(r, 1.1, 1, uint64(cfg.keys-1))
			buf := make([]byte, 0, cfg.size+16)
			for next.Add(1) <= cfg.n {
				k := int(z.Uint64())
				want := acked[k].Load()
				v, ok, err := cl.get(ctx, buf[:0], names[k])
				if err != nil || !ok {
					firstErr.CompareAndSwap(nil, fmt.Errorf("get %s: found %v, %v", names[k], ok, err))
					return
				}
				buf = v
				i := 0
				for i < len(v) && v[i] != ':' {
					i++
				}
				got, _ := strconv.ParseInt(string(v[:i]), 10, 64)
				if got < want {
					stale.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	u1, a1 := usage()
	stop()
	bgwg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return result{}, err
	}
	h1, m1 := cl.hits()
	res := result{
		readsPerSec:   float64(cfg.n) / elapsed.Seconds(),
		cpuPerRead:    float64((u1 - u0).Microseconds()) / float64(cfg.n),
		allocsPerRead: float64(a1-a0) / float64(cfg.n),
		stale:         stale.Load(),
		writes:        writes.Load(),
	}
	if h, m := h1-h0, m1-m0; h+m > 0 {
		res.hitRatio = float64(h) / float64(h+m)
	}
	return res, nil
}

// usage is the process's CPU time and heap allocations so far.
func usage() (time.Duration, uint64) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	tv := func(t syscall.Timeval) time.Duration {
		return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
	}
	return tv(ru.Utime) + tv(ru.Stime), ms.Mallocs
}

// echomqCache is cache.Cache: GetInto, writes with Do (read your writes).
type echomqCache struct{ c *cache.Cache }

func (e echomqCache) get(ctx context.Context, dst []byte, key string) ([]byte, bool, error) {
	return e.c.GetInto(ctx, dst, key, time.Hour)
}
func (e echomqCache) set(ctx context.Context, key, val string) error {
	_, err := e.c.Do(ctx, "SET", key, val)
	return err
}
func (e echomqCache) hits() (uint64, uint64) { s := e.c.Stats(); return s.Hits, s.Misses }
func (e echomqCache) close()                 { e.c.Close() }

// rueidisCache is rueidis DoCache (its default OPTIN tracking); hits are
// counted with IsCacheHit.
type rueidisCache struct {
	c         rueidis.Client
	hit, miss atomic.Uint64
}

func (r *rueidisCache) get(ctx context.Context, dst []byte, key string) ([]byte, bool, error) {
	res := r.c.DoCache(ctx, r.c.B().Get().Key(key).Cache(), time.Hour)
	if res.IsCacheHit() {
		r.hit.Add(1)
	} else {
		r.miss.Add(1)
	}
	s, err := res.ToString()
	if rueidis.IsRedisNil(err) {
		return dst, false, nil
	}
	if err != nil {
		return dst, false, err
	}
	return append(dst, s...), true, nil
}
func (r *rueidisCache) set(ctx context.Context, key, val string) error {
	return r.c.Do(ctx, r.c.B().Set().Key(key).Value(val).Build()).Error()
}
func (r *rueidisCache) hits() (uint64, uint64) { return r.hit.Load(), r.miss.Load() }
func (r *rueidisCache) close()                 { r.c.Close() }

// noCache is conn.Client with plain GET: every read a round trip.
type noCache struct {
	c *conn.Client
	n atomic.Uint64
}

func (n *noCache) get(ctx context.Context, dst []byte, key string) ([]byte, bool, error) {
	var cmd [128]byte
	found := false
	err := n.c.DoFunc(ctx, resp.Command(cmd[:0], "GET", key), func(v resp.Value) error {
		found = !v.IsNull()
		dst = append(dst, v.Str...)
		return nil
	})
	n.n.Add(1)
	return dst, found, err
}
func (n *noCache) set(ctx context.Context, key, val string) error {
	_, err := n.c.Do(ctx, "SET", key, val)
	return err
}
func (n *noCache) hits() (uint64, uint64) { return 0, n.n.Load() }
func (n *noCache) close()                 { n.c.Close() }

// startServer starts a private server on a free loopback port.
func startServer() (string, func(), error) {
	bin, err := exec.LookPath("valkey-server")
	if err != nil {
		if bin, err = exec.LookPath("redis-server"); err != nil {
			return "", nil, fmt.Errorf("no valkey-server or redis-server on PATH")
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir, err := os.MkdirTemp("", "cachebench")
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		cmd.Process.Kill()
		cmd.Wait()
		os.RemoveAll(dir)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for range 200 {
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			c.Close()
			return addr, stop, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	return "", nil, fmt.Errorf("server on %s did not come up", addr)
}
