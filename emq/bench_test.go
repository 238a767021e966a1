package emq

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// meter measures a benchmark's wall time, the client's CPU (getrusage
// RUSAGE_SELF: user + system) and the server's (INFO cpu).
type meter struct {
	t0   time.Time
	cpu0 time.Duration
	srv0 float64
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func serverCPU(b *testing.B) float64 {
	var total float64
	for line := range strings.Lines(do(b, "INFO", "cpu")) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return total
}

func startMeter(b *testing.B) meter {
	b.ResetTimer()
	return meter{t0: time.Now(), cpu0: processCPU(), srv0: serverCPU(b)}
}

// report adds jobs/s and, per million jobs, the client's and the server's
// CPU seconds.
func (m meter) report(b *testing.B, jobs int) {
	el := time.Since(m.t0)
	cpu := processCPU() - m.cpu0
	b.StopTimer()
	srv := serverCPU(b) - m.srv0
	b.ReportMetric(float64(jobs)/el.Seconds(), "jobs/s")
	b.ReportMetric(cpu.Seconds()/float64(jobs)*1e6, "cpu-s/Mop")
	b.ReportMetric(srv/float64(jobs)*1e6, "srv-cpu-s/Mop")
}

// fill enqueues n jobs of payload with EnqueueBulk, 500 at a time.
func fill(b *testing.B, q *Queue, n int, payload []byte) {
	ctx := context.Background()
	batch := make([][]byte, 500)
	for i := range batch {
		batch[i] = payload
	}
	for n > 0 {
		k := min(n, len(batch))
		if _, err := q.EnqueueBulk(ctx, batch[:k]); err != nil {
			b.Fatal(err)
		}
		n -= k
	}
}

var benchPayload = []byte(`{"to":"ada@example.com","template":"welcome","n":42}`)

// BenchmarkEnqueue enqueues one job per op, one caller waiting for each.
func BenchmarkEnqueue(b *testing.B) {
	q := fresh(b, "bench")
	ctx := context.Background()
	b.ReportAllocs()
	m := startMeter(b)
	for i := 0; i < b.N; i++ {
		if _, err := q.Enqueue(ctx, benchPayload); err != nil {
			b.Fatal(err)
		}
	}
	m.report(b, b.N)
}

// BenchmarkEnqueueParallel enqueues one job per op from 64 goroutines on
// one connection: the connection pipelines them.
func BenchmarkEnqueueParallel(b *testing.B) {
	q := fresh(b, "bench")
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(32)
	m := startMeter(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := q.Enqueue(ctx, benchPayload); err != nil {
				b.Fatal(err)
			}
		}
	})
	m.report(b, b.N)
}

// BenchmarkEnqueueBatch enqueues 100 jobs per op: EnqueueBatch (100
// enqueue transitions in one pipeline) or EnqueueBulk (one enqueue_batch
// transition).
func BenchmarkEnqueueBatch(b *testing.B) {
	for _, c := range []struct {
		name string
		f    func(*Queue) func(context.Context, [][]byte) ([]EnqueueResult, error)
	}{
		{"pipelined=100", func(q *Queue) func(context.Context, [][]byte) ([]EnqueueResult, error) { return q.EnqueueBatch }},
		{"bulk=100", func(q *Queue) func(context.Context, [][]byte) ([]EnqueueResult, error) { return q.EnqueueBulk }},
	} {
		b.Run(c.name, func(b *testing.B) {
			q := fresh(b, "bench")
			enqueue := c.f(q)
			ctx := context.Background()
			batch := make([][]byte, 100)
			for i := range batch {
				batch[i] = benchPayload
			}
			b.ReportAllocs()
			m := startMeter(b)
			for i := 0; i < b.N; i++ {
				if _, err := enqueue(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			m.report(b, 100*b.N)
		})
	}
}

// BenchmarkClaimComplete claims and completes one job per op: two round
// trips.
func BenchmarkClaimComplete(b *testing.B) {
	q := fresh(b, "bench")
	ctx := context.Background()
	fill(b, q, b.N, benchPayload)
	b.ReportAllocs()
	m := startMeter(b)
	for i := 0; i < b.N; i++ {
		job, ok, err := q.Claim(ctx, time.Minute)
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
		if err := q.Complete(ctx, job.ID, job.Token, 0); err != nil {
			b.Fatal(err)
		}
	}
	m.report(b, b.N)
}

// BenchmarkClaimBatchCompleteBatch claims 100 jobs with claim_batch and
// completes them with complete_batch: two round trips and two script
// calls per 100 jobs. An op is one job.
func BenchmarkClaimBatchCompleteBatch(b *testing.B) {
	q := fresh(b, "bench")
	ctx := context.Background()
	fill(b, q, b.N, benchPayload)
	var jobs []Job
	var acks []Ack
	var done []bool
	b.ReportAllocs()
	m := startMeter(b)
	for left := b.N; left > 0; {
		var err error
		jobs, err = q.AppendClaimBatch(ctx, jobs[:0], time.Minute, min(100, left))
		if err != nil || len(jobs) == 0 {
			b.Fatal(len(jobs), err)
		}
		acks = acks[:0]
		for _, j := range jobs {
			acks = append(acks, Ack{j.ID, j.Token})
		}
		if done, err = q.AppendCompleteBatch(ctx, done[:0], acks, 0); err != nil {
			b.Fatal(err)
		}
		left -= len(jobs)
	}
	m.report(b, b.N)
}

// BenchmarkWorker enqueues b.N jobs in batches, then times a Worker
// draining them: claim_batch per free slots, a no-op handler,
// complete_batch. An op is one job.
func BenchmarkWorker(b *testing.B) {
	for _, conc := range []int{16, 128} {
		b.Run("concurrency="+strconv.Itoa(conc), func(b *testing.B) {
			q := fresh(b, "bench")
			fill(b, q, b.N, benchPayload)
			runWorker(b, q, conc, b.N, nil)
		})
	}
}

// BenchmarkEndToEnd times b.N jobs enqueued (EnqueueBulk, 100 at a time,
// from one producer goroutine on its own connection) while a Worker claims
// and completes them: the enqueued → claimed → completed rate. An op is
// one job.
func BenchmarkEndToEnd(b *testing.B) {
	q := fresh(b, "bench")
	produce := func() {
		batch := make([][]byte, 100)
		for i := range batch {
			batch[i] = benchPayload
		}
		for left := b.N; left > 0; left -= len(batch) {
			if _, err := q.EnqueueBulk(context.Background(), batch[:min(left, 100)]); err != nil {
				b.Error(err)
				return
			}
		}
	}
	runWorker(b, q, 128, b.N, produce)
}

// runWorker starts a worker with conc handlers on q (over its own
// connection) and measures until n jobs have completed; produce, when
// set, runs meanwhile.
func runWorker(b *testing.B, q *Queue, conc, n int, produce func()) {
	var completed atomic.Int64
	done := make(chan struct{})
	wq, err := Open(context.Background(), dial(b), q.Name())
	if err != nil {
		b.Fatal(err)
	}
	w, err := NewWorker(wq, HandlerFunc(func(context.Context, *Job) error { return nil }), WorkerConfig{
		Concurrency: conc, PollMin: time.Millisecond, PollMax: 5 * time.Millisecond,
		OnEvent: func(e Event) {
			if e.Kind == EventCompleted && completed.Add(1) == int64(n) {
				close(done)
			}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	m := startMeter(b)
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	if produce != nil {
		go produce()
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("%d of %d completed", completed.Load(), n)
	}
	m.report(b, n)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	st := w.Stats()
	b.ReportMetric(float64(st.Claimed)/float64(max(st.Claims, 1)), "jobs/claim")
	b.ReportMetric(float64(st.Completed)/float64(max(st.AckBatches, 1)), "jobs/ack")
}
