// Command peerbench measures one Redis/Valkey client per process on one
// workload and prints one JSON line: ops/s over the timed section, the
// process's CPU seconds (user+sys) per million ops, and allocations per op.
//
// Clients: rueidis, goredis, redigo, echomq (adapter_echomq.go: the raw
// paths), echomq-typed (adapter_echomq_typed.go: cmds builders, kv.Call,
// pipeline handles), floor (no library), and the C
// reference redis-benchmark/valkey-benchmark (-client redis-benchmark),
// which is run as a child whose rusage gives its CPU.
//
//	peerbench -client rueidis -workload set -depth 100 -n 1000000 -addr 127.0.0.1:6379
//
// Exit status: 0 ok, 1 failure (I/O error or any wrong reply), 2 usage,
// 3 the adapter is not wired yet.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"
)

const exitNotWired = 3

// cpuProfile is -cpuprofile: where runClient writes the timed section's
// CPU profile, "" for none.
var cpuProfile string

// record is one JSON line of raw.jsonl.
type record struct {
	Client      string   `json:"client"`
	Version     string   `json:"version,omitempty"` // client library version
	Workload    string   `json:"workload"`
	Depth       int      `json:"depth"`
	Goroutines  int      `json:"goroutines"`
	N           int      `json:"n"`
	Size        int      `json:"size"`
	OpsPerSec   float64  `json:"ops_per_sec"`
	WallS       float64  `json:"wall_s"`
	CPUUserS    float64  `json:"cpu_user_s"`
	CPUSysS     float64  `json:"cpu_sys_s"`
	CPUPer1M    float64  `json:"cpu_s_per_1m"`
	AllocsPerOp *float64 `json:"allocs_per_op,omitempty"`
	BytesPerOp  *float64 `json:"bytes_per_op,omitempty"`
	GCs         *uint32  `json:"gcs,omitempty"` // GC cycles in the timed section
	Errors      int64    `json:"errors"`
	Rows        *int64   `json:"rows,omitempty"` // enqueue: ZCARD pending after the run
	Server      string   `json:"server"`
	Go          string   `json:"go"`
	Time        string   `json:"time"`
	Load1       string   `json:"load1,omitempty"` // /proc/loadavg at start: a noisy machine shows here
	Note        string   `json:"note,omitempty"`
	Skipped     string   `json:"skipped,omitempty"`
}

func main() {
	client := flag.String("client", "", "rueidis|goredis|redigo|echomq|echomq-typed|floor|redis-benchmark|valkey-benchmark")
	wl := flag.String("workload", wPing, "ping|set|enqueue|get|pubsub")
	depth := flag.Int("depth", 1, "pipeline depth: commands per batch from one goroutine")
	gs := flag.Int("goroutines", 1, "G > 1: G goroutines, one command at a time each")
	n := flag.Int("n", 100000, "timed ops")
	warmup := flag.Int("warmup", -1, "untimed ops first (-1: n/10, at most 50000)")
	addr := flag.String("addr", "127.0.0.1:6379", "server address (loopback)")
	size := flag.Int("size", 64, "value/payload size in bytes")
	bench := flag.String("bench", "", "path of redis-benchmark/valkey-benchmark (reference client)")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the timed section to this file (go tool pprof)")
	flag.Parse()

	w, err := newWorkload(*wl, *depth, *gs, *size)
	if err != nil || *n < 1 {
		fmt.Fprintln(os.Stderr, "peerbench:", err)
		os.Exit(2)
	}
	rec := record{
		Client: *client, Workload: w.name, Depth: *depth, Goroutines: *gs, N: *n,
		Size: *size, Go: runtime.Version(), Time: time.Now().UTC().Format(time.RFC3339),
		Load1: load1(),
	}
	if strings.HasSuffix(*client, "-benchmark") {
		err = runReference(&rec, w, *addr, *bench)
	} else {
		err = runClient(&rec, w, *addr, *n, *warmup)
	}
	if errors.Is(err, errNotWired) {
		rec.Skipped = err.Error()
		emit(rec)
		fmt.Fprintf(os.Stderr, "peerbench: %s: %v\n", *client, err)
		os.Exit(exitNotWired)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "peerbench: %s %s: %v\n", *client, w.name, err)
		os.Exit(1)
	}
	emit(rec)
	if rec.Errors > 0 {
		fmt.Fprintf(os.Stderr, "peerbench: %s %s: %d wrong replies, first: %s\n",
			*client, w.name, rec.Errors, w.firstErr)
		os.Exit(1)
	}
}

func emit(rec record) {
	b, _ := json.Marshal(rec)
	fmt.Println(string(b))
}

// runClient prepares the server, warms the client up, and times n ops.
func runClient(rec *record, w *workload, addr string, n, warmup int) error {
	mk, ok := adapters[rec.Client]
	if !ok {
		return fmt.Errorf("unknown client %q (want %s or redis-benchmark)", rec.Client, strings.Join(adapterNames(), "|"))
	}
	rec.Version = libVersion(rec.Client)
	server, err := prepare(addr, w)
	if err != nil {
		return err
	}
	rec.Server = server
	r, err := mk(config{addr: addr, goroutines: w.goroutines, depth: w.depth})
	if err != nil {
		return err
	}
	defer r.close()
	ctx := context.Background()
	if warmup < 0 {
		warmup = min(n/10, 50000)
	}
	warmup = max(warmup, w.depth, w.goroutines) // every pooled conn dialled before timing
	if err := r.run(ctx, w, warmup); err != nil {
		return fmt.Errorf("warmup: %w", err)
	}
	w.advance(warmup)

	runtime.GC()
	var m0, m1 runtime.MemStats
	var u0, u1 syscall.Rusage
	runtime.ReadMemStats(&m0)
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &u0)
	t0 := time.Now()
	err = r.run(ctx, w, n)
	wall := time.Since(t0)
	syscall.Getrusage(syscall.RUSAGE_SELF, &u1)
	if cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	runtime.ReadMemStats(&m1)
	if err != nil {
		return err
	}

	rec.WallS = wall.Seconds()
	rec.OpsPerSec = float64(n) / wall.Seconds()
	rec.CPUUserS = tvSeconds(u1.Utime) - tvSeconds(u0.Utime)
	rec.CPUSysS = tvSeconds(u1.Stime) - tvSeconds(u0.Stime)
	rec.CPUPer1M = (rec.CPUUserS + rec.CPUSysS) / float64(n) * 1e6
	allocs := float64(m1.Mallocs-m0.Mallocs) / float64(n)
	bytes := float64(m1.TotalAlloc-m0.TotalAlloc) / float64(n)
	gcs := m1.NumGC - m0.NumGC
	rec.AllocsPerOp, rec.BytesPerOp, rec.GCs = &allocs, &bytes, &gcs
	rec.Errors = w.errs.Load()
	if w.name == wEnqueue {
		rows, err := countRows(addr)
		if err != nil {
			return err
		}
		rec.Rows = &rows
		if want := int64(warmup + n); rows != want && rec.Errors == 0 {
			rec.Errors = want - rows
			w.firstErr = fmt.Sprintf("ZCARD pending = %d, want %d", rows, want)
		}
	}
	return nil
}

func tvSeconds(tv syscall.Timeval) float64 {
	return float64(tv.Sec) + float64(tv.Usec)/1e6
}

// libVersion reports the module version of the client library linked in.
func libVersion(client string) string {
	path := map[string]string{
		"rueidis":      "github.com/redis/rueidis",
		"goredis":      "github.com/redis/go-redis/v9",
		"redigo":       "github.com/gomodule/redigo",
		"echomq":       "github.com/echomq/echomq-go",
		"echomq-typed": "github.com/echomq/echomq-go",
	}[client]
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			return d.Version
		}
	}
	return ""
}

// load1 is the 1-minute load average, or "" where /proc is absent.
func load1() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}
