package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in nanoseconds, from 100 ns to a minute, to three
// significant digits; a slower batch is recorded as a minute.
const (
	histLowest  = 100
	histHighest = int64(time.Minute)
	histDigits  = 3
	histShards  = 16 // goroutine g records into shard g % histShards
)

// latencies is an HDR histogram sharded by goroutine, so that callers
// seldom share a lock.
type latencies struct {
	shards [histShards]struct {
		mu sync.Mutex
		h  *hdrhistogram.Histogram
		_  [40]byte // keep shards off each other's cache line
	}
}

// newLatencies returns empty histograms.
func newLatencies() *latencies {
	l := &latencies{}
	for i := range l.shards {
		l.shards[i].h = hdrhistogram.New(histLowest, histHighest, histDigits)
	}
	return l
}

// record adds one latency observed by goroutine g.
func (l *latencies) record(g int, d time.Duration) {
	v := min(max(int64(d), histLowest), histHighest)
	s := &l.shards[g%histShards]
	s.mu.Lock()
	_ = s.h.RecordValue(v) // in range by construction
	s.mu.Unlock()
}

// recordN adds n latencies d observed by goroutine g.
func (l *latencies) recordN(g int, d time.Duration, n int64) {
	v := min(max(int64(d), histLowest), histHighest)
	s := &l.shards[g%histShards]
	s.mu.Lock()
	_ = s.h.RecordValues(v, n) // in range by construction
	s.mu.Unlock()
}

// merged returns every shard merged into one histogram.
func (l *latencies) merged() *hdrhistogram.Histogram {
	all := hdrhistogram.New(histLowest, histHighest, histDigits)
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		all.Merge(s.h)
		s.mu.Unlock()
	}
	return all
}

// usage is a snapshot of what the process has spent: CPU time and heap
// allocations.
type usage struct {
	cpu     time.Duration // user + system
	mallocs uint64
}

// takeUsage reads getrusage(RUSAGE_SELF) and the allocation count. It
// stops the world briefly (runtime.ReadMemStats): call it only at the
// edges of the measured phase.
func takeUsage() usage {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	tv := func(t syscall.Timeval) time.Duration {
		return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
	}
	return usage{cpu: tv(ru.Utime) + tv(ru.Stime), mallocs: ms.Mallocs}
}

// latencyReport is the latency part of a report, in microseconds.
type latencyReport struct {
	// Per is "op" (one latency per operation, at depth 1), "batch" (one
	// per pipelined batch of Depth operations, send to last reply) or
	// "job" (worker: from a job's handler start to its completion
	// acknowledged by the server).
	Per     string  `json:"per"`
	Samples int64   `json:"samples"`
	P50     float64 `json:"p50_us"`
	P90     float64 `json:"p90_us"`
	P99     float64 `json:"p99_us"`
	P999    float64 `json:"p99_9_us"`
	Max     float64 `json:"max_us"`
}

// report is the outcome of one workload run; -json prints it as is.
type report struct {
	Workload   string        `json:"workload"`
	Server     string        `json:"server"`
	Protocol   int           `json:"protocol"`
	Conns      int           `json:"conns"`
	Goroutines int           `json:"goroutines"`
	Depth      int           `json:"depth"`
	Size       int           `json:"size"`
	Queue      string        `json:"queue,omitempty"`
	Method     string        `json:"method"` // what one operation sends
	Ops        int64         `json:"ops"`
	ElapsedSec float64       `json:"elapsed_s"`
	OpsPerSec  float64       `json:"ops_per_sec"`
	Latency    latencyReport `json:"latency"`
	// CPUPerMOps is the client's CPU (user+system) per operation, in
	// seconds per million operations, which is µs per operation: the
	// text report says µs per op; the JSON name stays as it was.
	CPUPerMOps float64 `json:"cpu_s_per_million_ops"`
	// ServerCPUPerOp is the server's CPU (INFO cpu: used_cpu_sys +
	// used_cpu_user, every thread of the process) over the measured
	// phase, in µs per operation; null when INFO cpu could not be read.
	// It counts whatever else the server did meanwhile.
	ServerCPUPerOp *float64     `json:"server_cpu_us_per_op"`
	AllocsPerOp    float64      `json:"allocs_per_op"`
	E2E            *e2eReport   `json:"e2e,omitempty"`
	ScriptLoads    *uint64      `json:"script_loads"` // null for workloads without scripts
	Bus            *busReport   `json:"pubsub,omitempty"`
	Cache          *cacheReport `json:"cache,omitempty"`
	Stopped        string       `json:"stopped"` // why the run ended
	Error          string       `json:"error,omitempty"`
	Cleanup        string       `json:"cleanup"`
}

// busReport is what the pubsub workload delivered. Lost counts the
// messages published (PUBLISH answered) that the subscriber never
// received: 0 on a healthy run. Unheard are those PUBLISH counted no
// subscriber for (during an outage), included in Lost.
type busReport struct {
	Published  int64  `json:"published"`
	Received   int64  `json:"received"`
	Lost       int64  `json:"lost"`
	Unheard    int64  `json:"unheard"`
	Duplicates int64  `json:"duplicates"`
	Reordered  int64  `json:"reordered"`
	Gaps       int64  `json:"gaps"`
	Reconnects uint64 `json:"reconnects"`
	Stalls     uint64 `json:"stalls"`
}

// fillLatency sets the latency percentiles from h.
func (r *report) fillLatency(h *hdrhistogram.Histogram, per string) {
	if h.TotalCount() == 0 {
		r.Latency = latencyReport{Per: per}
		return
	}
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	r.Latency = latencyReport{
		Per:     per,
		Samples: h.TotalCount(),
		P50:     us(h.ValueAtQuantile(50)),
		P90:     us(h.ValueAtQuantile(90)),
		P99:     us(h.ValueAtQuantile(99)),
		P999:    us(h.ValueAtQuantile(99.9)),
		Max:     us(h.Max()),
	}
}

// fillServerCPU sets the server's CPU per operation from two INFO cpu
// readings, in seconds; a negative reading (INFO failed) leaves it null.
func (r *report) fillServerCPU(before, after float64) {
	if r.Ops == 0 || before < 0 || after < 0 {
		return
	}
	us := (after - before) / float64(r.Ops) * 1e6
	r.ServerCPUPerOp = &us
}

// fillUsage sets the CPU and allocation figures from two snapshots.
func (r *report) fillUsage(before, after usage) {
	if r.Ops == 0 {
		return
	}
	r.CPUPerMOps = (after.cpu - before.cpu).Seconds() / float64(r.Ops) * 1e6
	r.AllocsPerOp = float64(after.mallocs-before.mallocs) / float64(r.Ops)
}

// write prints the report as text, or as one JSON object.
func (r *report) write(w io.Writer, asJSON bool) {
	if asJSON {
		enc := json.NewEncoder(w)
		_ = enc.Encode(r)
		return
	}
	fmt.Fprintf(w, "emqbench %s: %s, RESP%d\n", r.Workload, r.Server, r.Protocol)
	fmt.Fprintf(w, "  setup        %d conn(s), %d goroutine(s), depth %d, size %d B", r.Conns, r.Goroutines, r.Depth, r.Size)
	if r.Queue != "" {
		fmt.Fprintf(w, ", queue %q", r.Queue)
	}
	fmt.Fprintf(w, "\n  operation    %s\n", r.Method)
	unit := "ops"
	if r.E2E != nil {
		unit = "jobs"
	}
	fmt.Fprintf(w, "  throughput   %s %s/s (%s %s in %.2fs; stopped: %s)\n",
		group(int64(r.OpsPerSec+0.5)), unit, group(r.Ops), unit, r.ElapsedSec, r.Stopped)
	l := r.Latency
	what := "per operation"
	switch l.Per {
	case "batch":
		what = fmt.Sprintf("per batch of %d operations, send to last reply", r.Depth)
	case "job":
		what = "per job, handler start to completion acknowledged"
	case "message":
		what = "per message, publish to receive"
	case "read":
		what = fmt.Sprintf("per read through the cache, 1 in %d sampled", cacheSampleEvery)
	case "e2e":
		what = "per job, enqueue to completion acknowledged"
	}
	if x := r.E2E; x != nil {
		s := x.ToStart
		fmt.Fprintf(w, "  to start     p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  (per job, enqueue to its first handler start; %s samples)\n",
			fmtUS(s.P50), fmtUS(s.P90), fmtUS(s.P99), fmtUS(s.P999), fmtUS(s.Max), group(s.Samples))
	}
	fmt.Fprintf(w, "  latency      p50 %s  p90 %s  p99 %s  p99.9 %s  max %s  (%s; %s samples)\n",
		fmtUS(l.P50), fmtUS(l.P90), fmtUS(l.P99), fmtUS(l.P999), fmtUS(l.Max), what, group(l.Samples))
	if x := r.E2E; x != nil {
		fmt.Fprintf(w, "  jobs         enqueued %s  completed %s  lost %d  duplicates %d  extra runs %d  failed %d  retried %d\n",
			group(x.Enqueued), group(x.Completed), x.Lost, x.Duplicates, x.ExtraRuns, x.Failed, x.Retried)
		fmt.Fprintf(w, "  worker calls %s (%.1f jobs per call, %.1f per claim); producers %d x %d in flight, busy in calls %.0f%%\n",
			group(int64(x.WorkerCalls)), x.JobsPerCall, x.JobsPerClaim, x.Producers, x.InFlight, 100*x.ProducerBusy)
	}
	fmt.Fprintf(w, "  client CPU   %.3f µs per op (user+system, getrusage)\n", r.CPUPerMOps)
	if r.ServerCPUPerOp != nil {
		fmt.Fprintf(w, "  server CPU   %.3f µs per op (INFO cpu: used_cpu_sys + used_cpu_user delta)\n", *r.ServerCPUPerOp)
	} else {
		fmt.Fprintf(w, "  server CPU   - (INFO cpu not readable)\n")
	}
	fmt.Fprintf(w, "  allocations  %.2f per op (heap, runtime.MemStats)\n", r.AllocsPerOp)
	if b := r.Bus; b != nil {
		fmt.Fprintf(w, "  delivery     lost %s of %s published (%s unheard), %s received; %s duplicates, %s out of order\n",
			group(b.Lost), group(b.Published), group(b.Unheard), group(b.Received), group(b.Duplicates), group(b.Reordered))
		fmt.Fprintf(w, "  connection   %d reconnects, %d gaps reported, %d backpressure stalls\n", b.Reconnects, b.Gaps, b.Stalls)
	}
	if x := r.Cache; x != nil {
		x.write(w)
	}
	if r.ScriptLoads != nil {
		fmt.Fprintf(w, "  script loads %d (SCRIPT LOAD sent by the executors)\n", *r.ScriptLoads)
	} else {
		fmt.Fprintf(w, "  script loads - (no scripts in this workload)\n")
	}
	fmt.Fprintf(w, "  cleanup      %s\n", r.Cleanup)
	if r.Error != "" {
		fmt.Fprintf(w, "  error        %s\n", r.Error)
	}
}

// fmtUS formats microseconds with a unit that keeps three or four digits.
func fmtUS(us float64) string {
	switch {
	case us >= 1e6:
		return strconv.FormatFloat(us/1e6, 'f', 2, 64) + "s"
	case us >= 1e3:
		return strconv.FormatFloat(us/1e3, 'f', 2, 64) + "ms"
	}
	return strconv.FormatFloat(us, 'f', 1, 64) + "µs"
}

// group formats n with thousands separators: 1234567 → "1,234,567".
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
