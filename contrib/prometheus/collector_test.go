package emqprom_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	emqprom "github.com/echomq/echomq-go/contrib/prometheus"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/servertest"
)

var srv *servertest.Server

func TestMain(m *testing.M) {
	os.Exit(servertest.Main(m, &srv, servertest.Options{}))
}

// scrape GETs the handler's metrics and parses them.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := http.Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	require.NoError(t, err, string(body))
	return fams
}

// value returns the value of the series of family name whose labels
// include want, or fails.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	v, ok := find(fams, name, want)
	require.True(t, ok, "no %s%v", name, want)
	return v
}

func find(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// TestScrape runs a worker over a queue with a Collector wired to the
// three hooks, then scrapes the promhttp handler: queue depth per set,
// lag, the dead count, the job outcomes, handler durations and command
// counts and errors all agree with what happened.
func TestScrape(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	ctx := context.Background()
	col := emqprom.New(emqprom.Options{})
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(col))
	hs := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer hs.Close()

	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr, Hooks: []conn.Hook{col.Hook()}})
	require.NoError(t, err)
	defer cl.Close()
	q, err := emq.Open(ctx, cl, "metrics")
	require.NoError(t, err)
	col.WatchQueue(q)
	col.WatchQueue(q) // once is enough

	// 30 jobs: every third dies at once, every third other fails once and
	// is retried, the rest complete; one handler panics once.
	const n = 30
	ids := map[string]int{}
	for i := range n {
		id, err := q.Enqueue(ctx, []byte{byte(i)})
		require.NoError(t, err)
		ids[id] = i
	}
	var mu sync.Mutex
	var events []emq.EventKind
	cfg := emq.WorkerConfig{
		Concurrency: 4, PollMin: time.Millisecond, PollMax: 5 * time.Millisecond,
		Backoff: func(int64, error) time.Duration { return 0 },
		OnEvent: func(e emq.Event) { // the Collector calls this after counting
			mu.Lock()
			events = append(events, e.Kind)
			mu.Unlock()
		},
	}
	col.Instrument(&cfg, "metrics")
	w, err := emq.NewWorker(q, emq.HandlerFunc(func(_ context.Context, j *emq.Job) error {
		switch i := int(j.Payload[0]); {
		case i%3 == 0:
			return emq.ErrSkipRetry
		case i%3 == 1 && j.Token == 1:
			if i == 1 {
				panic("handler panicked")
			}
			return errors.New("transient")
		}
		return nil
	}), cfg)
	require.NoError(t, err)
	require.NoError(t, w.Start())
	servertest.Eventually(t, "every job completed or dead", func() bool {
		return w.Stats().Completed+w.Stats().Dead >= n
	})
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, w.Shutdown(sctx))
	st := w.Stats()
	require.Equal(t, uint64(n-n/3), st.Completed)
	require.Equal(t, uint64(n/3), st.Dead)
	require.Equal(t, uint64(n/3), st.Retried)

	// Pending jobs for the lag, a server error for the command errors.
	for range 2 {
		_, err := q.Enqueue(ctx, nil)
		require.NoError(t, err)
	}
	_, err = cl.Do(ctx, "HGET", "emq:{metrics}:pending", "x")
	require.ErrorContains(t, err, "WRONGTYPE")

	fams := scrape(t, hs.URL)
	qm := func(state string) map[string]string { return map[string]string{"queue": "metrics", "state": state} }
	require.Equal(t, 2.0, value(t, fams, "emq_queue_jobs", qm("pending")))
	require.Equal(t, 0.0, value(t, fams, "emq_queue_jobs", qm("active")))
	require.Equal(t, 0.0, value(t, fams, "emq_queue_jobs", qm("delayed")))
	require.Equal(t, float64(n/3), value(t, fams, "emq_queue_jobs", qm("dead")))
	require.GreaterOrEqual(t, value(t, fams, "emq_queue_lag_seconds", map[string]string{"queue": "metrics"}), 0.0)
	require.Equal(t, 1.0, value(t, fams, "emq_queue_up", map[string]string{"queue": "metrics"}))
	require.Equal(t, 0.0, value(t, fams, "emq_queue_paused", map[string]string{"queue": "metrics"}))

	outcome := func(o string) map[string]string { return map[string]string{"queue": "metrics", "outcome": o} }
	require.Equal(t, float64(st.Completed), value(t, fams, "emq_worker_jobs_total", outcome("completed")))
	require.Equal(t, float64(st.Retried), value(t, fams, "emq_worker_jobs_total", outcome("retried")))
	require.Equal(t, float64(st.Dead), value(t, fams, "emq_worker_jobs_total", outcome("dead")))
	mu.Lock()
	require.Len(t, events, int(st.Completed+st.Retried+st.Dead), "the OnEvent set before Instrument still runs")
	mu.Unlock()

	// Every handler run is timed: n first runs and n/3 retries; one
	// panicked, the failures errored.
	require.Equal(t, float64(n-n/3-n/3+n/3), value(t, fams, "emq_handler_duration_seconds", outcome("ok")))
	require.Equal(t, float64(n/3+n/3-1), value(t, fams, "emq_handler_duration_seconds", outcome("error")))
	require.Equal(t, 1.0, value(t, fams, "emq_handler_duration_seconds", outcome("panic")))

	// Commands: the worker's scripts by name, the server's errors by code.
	cmd := func(c, s string) map[string]string { return map[string]string{"command": c, "script": s} }
	// The worker's rounds are settle_claim calls: one script settles and claims.
	require.Positive(t, value(t, fams, "emq_commands_total", cmd("EVALSHA", "settle_claim")))
	require.Positive(t, value(t, fams, "emq_commands_total", cmd("EVALSHA", "stats")))
	require.Positive(t, value(t, fams, "emq_command_duration_seconds", cmd("EVALSHA", "settle_claim")))
	require.Equal(t, 1.0, value(t, fams, "emq_command_errors_total", map[string]string{"command": "HGET", "code": "WRONGTYPE"}))
	require.Positive(t, value(t, fams, "emq_command_errors_total", map[string]string{"command": "EVALSHA", "code": "NOSCRIPT"}),
		"the flushed server's first EVALSHA of each script")
	require.Equal(t, 0.0, value(t, fams, "emq_commands_in_flight", nil))
}

// TestScrapeQueueDown: a watched queue whose server is gone reports
// emq_queue_up 0, and the scrape itself succeeds.
func TestScrapeQueueDown(t *testing.T) {
	servertest.Need(t, srv)
	ctx := context.Background()
	col := emqprom.New(emqprom.Options{Namespace: "jobs", StatsTimeout: time.Second})
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(col))
	hs := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer hs.Close()
	c, err := conn.Dial(ctx, conn.Options{Addr: srv.Addr, Hooks: []conn.Hook{col.Hook()}})
	require.NoError(t, err)
	q, err := emq.Open(ctx, c, "gone")
	require.NoError(t, err)
	col.WatchQueue(q)
	require.Equal(t, 1.0, value(t, scrape(t, hs.URL), "jobs_queue_up", map[string]string{"queue": "gone"}))
	require.NoError(t, c.Close())
	fams := scrape(t, hs.URL)
	require.Equal(t, 0.0, value(t, fams, "jobs_queue_up", map[string]string{"queue": "gone"}))
	_, ok := find(fams, "jobs_queue_jobs", map[string]string{"queue": "gone"})
	require.False(t, ok, "no counts from a queue that could not be read")
	require.Equal(t, 1.0, value(t, fams, "jobs_command_errors_total", map[string]string{"command": "EVALSHA", "script": "stats", "code": "closed"}))
}

// TestScrapeTimedOut: a handler that runs past its job's timeout is
// counted as outcome timed_out, and its retry (here to dead) as usual.
func TestScrapeTimedOut(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	ctx := context.Background()
	col := emqprom.New(emqprom.Options{})
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(col))
	hs := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer hs.Close()
	c, err := conn.Dial(ctx, conn.Options{Addr: srv.Addr})
	require.NoError(t, err)
	defer c.Close()
	q, err := emq.Open(ctx, c, "timeouts")
	require.NoError(t, err)
	_, err = q.Enqueue(ctx, nil)
	require.NoError(t, err)
	dead := make(chan struct{})
	cfg := emq.WorkerConfig{
		Timeout: 20 * time.Millisecond, MaxAttempts: 1, PollMax: 5 * time.Millisecond,
		OnEvent: func(e emq.Event) {
			if e.Kind == emq.EventDead {
				close(dead)
			}
		},
	}
	col.Instrument(&cfg, "timeouts")
	w, err := emq.NewWorker(q, emq.HandlerFunc(func(ctx context.Context, _ *emq.Job) error {
		<-ctx.Done()
		return ctx.Err()
	}), cfg)
	require.NoError(t, err)
	require.NoError(t, w.Start())
	select {
	case <-dead:
	case <-time.After(30 * time.Second): // only a hang gets there
		t.Fatal("no dead job")
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, w.Shutdown(sctx))
	fams := scrape(t, hs.URL)
	outcome := func(o string) map[string]string { return map[string]string{"queue": "timeouts", "outcome": o} }
	require.Equal(t, 1.0, value(t, fams, "emq_worker_jobs_total", outcome("timed_out")))
	require.Equal(t, 1.0, value(t, fams, "emq_worker_jobs_total", outcome("dead")))
}
