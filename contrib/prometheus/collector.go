package emqprom

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/echomq/echomq-go/emq"
)

// Options configure a [Collector]. The zero value is ready.
type Options struct {
	// Namespace prefixes every metric name. Default "emq".
	Namespace string
	// ConstLabels are added to every metric.
	ConstLabels prometheus.Labels
	// StatsTimeout bounds each watched queue's read at a scrape.
	// Default 5 s.
	StatsTimeout time.Duration
	// HandlerBuckets are the handler duration histogram's buckets, in
	// seconds. Default prometheus.DefBuckets.
	HandlerBuckets []float64
	// CommandBuckets are the command duration histogram's buckets, in
	// seconds. Default 50 µs to about 3.3 s, doubling.
	CommandBuckets []float64
}

// Collector gathers EchoMQ metrics; see the package documentation for
// the metrics and how to wire it. It is safe for concurrent use.
type Collector struct {
	opts Options

	mu     sync.Mutex
	queues []*emq.Queue // watched, read at each scrape
	caches []watchedCache

	queueJobs, queueLag, queueDue, queueExpired, queuePaused, queueUp *prometheus.Desc

	workerJobs *prometheus.CounterVec
	handler    *prometheus.HistogramVec
	commands   commandMetrics
	cache      cacheMetrics
}

// New returns a Collector; register it with a prometheus.Registerer.
func New(opts Options) *Collector {
	if opts.Namespace == "" {
		opts.Namespace = "emq"
	}
	if opts.StatsTimeout <= 0 {
		opts.StatsTimeout = 5 * time.Second
	}
	if opts.HandlerBuckets == nil {
		opts.HandlerBuckets = prometheus.DefBuckets
	}
	if opts.CommandBuckets == nil {
		opts.CommandBuckets = prometheus.ExponentialBuckets(50e-6, 2, 17)
	}
	ns, cl := opts.Namespace, opts.ConstLabels
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(ns, "queue", name), help, append([]string{"queue"}, labels...), cl)
	}
	c := &Collector{
		opts:         opts,
		queueJobs:    desc("jobs", "Jobs in each set of the queue: pending, active, delayed, dead.", "state"),
		queueLag:     desc("lag_seconds", "Age of the oldest pending job, from its id's mint time to the server's clock."),
		queueDue:     desc("due_jobs", "Delayed jobs whose due time has come."),
		queueExpired: desc("expired_leases", "Active jobs whose lease has run out."),
		queuePaused:  desc("paused", "1 while the queue is paused."),
		queueUp:      desc("up", "1 when the last read of the queue's counts succeeded."),
		workerJobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: "worker", Name: "jobs_total", ConstLabels: cl,
			Help: "Job outcomes reported by workers: completed, retried, dead, stale, abandoned, lease_lost, error.",
		}, []string{"queue", "outcome"}),
		handler: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Subsystem: "handler", Name: "duration_seconds", ConstLabels: cl, Buckets: opts.HandlerBuckets,
			Help: "How long handlers ran, by outcome: ok, error, panic.",
		}, []string{"queue", "outcome"}),
	}
	c.commands.init(ns, cl, opts.CommandBuckets)
	c.cache.init(ns, cl)
	return c
}

// WatchQueue adds q to the queues whose counts each scrape reads, with
// [emq.Queue.Stats] (one atomic read-only script, bounded by
// StatsTimeout). A queue watched twice is read once.
func (c *Collector) WatchQueue(q *emq.Queue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.queues {
		if w == q {
			return
		}
	}
	c.queues = append(c.queues, q)
}

// Describe sends the descriptors of every metric.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.queueJobs, c.queueLag, c.queueDue, c.queueExpired, c.queuePaused, c.queueUp} {
		ch <- d
	}
	c.workerJobs.Describe(ch)
	c.handler.Describe(ch)
	c.commands.describe(ch)
	c.cache.describe(ch)
}

// Collect reads every watched queue, concurrently, then sends every
// metric: the commands of those reads are counted in the same scrape. A
// queue whose read fails reports emq_queue_up 0 and nothing else.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	queues := append([]*emq.Queue(nil), c.queues...)
	caches := append([]watchedCache(nil), c.caches...)
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, q := range queues {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.collectQueue(ch, q)
		}()
	}
	wg.Wait()
	c.workerJobs.Collect(ch)
	c.handler.Collect(ch)
	c.commands.collect(ch)
	for _, w := range caches {
		c.cache.collect(ch, w)
	}
}

// collectQueue reads q's counts and sends them.
func (c *Collector) collectQueue(ch chan<- prometheus.Metric, q *emq.Queue) {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.StatsTimeout)
	defer cancel()
	name := q.Name()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{name}, labels...)...)
	}
	st, err := q.Stats(ctx)
	if err != nil {
		gauge(c.queueUp, 0)
		return
	}
	gauge(c.queueUp, 1)
	gauge(c.queueJobs, float64(st.Pending), "pending")
	gauge(c.queueJobs, float64(st.Active), "active")
	gauge(c.queueJobs, float64(st.Delayed), "delayed")
	gauge(c.queueJobs, float64(st.Dead), "dead")
	gauge(c.queueLag, st.Lag.Seconds())
	gauge(c.queueDue, float64(st.Due))
	gauge(c.queueExpired, float64(st.Expired))
	paused := 0.0
	if st.Paused {
		paused = 1
	}
	gauge(c.queuePaused, paused)
}
