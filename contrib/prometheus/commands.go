package emqprom

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/resp"
)

var _ conn.Observer = (*Collector)(nil)

// Hook is the [conn.Hook] that counts every command a connection or
// Client sends (set it in conn.Options.Hooks): its start, its end, its
// duration and its error, if any. Pipelines are counted command by
// command.
func (c *Collector) Hook() conn.Hook {
	return conn.Hook{
		BeforeCommand: func(ctx context.Context, _ conn.CommandInfo, _ conn.RawCommand) context.Context {
			c.commands.inFlight.Inc()
			return ctx
		},
		AfterCommand: func(_ context.Context, cmd conn.CommandInfo, _ resp.Value, took time.Duration, err error) {
			c.CommandEnd(cmd, took, err)
		},
	}
}

// CommandStart counts cmd in flight. With CommandEnd it makes the
// Collector a [conn.Observer] too, as conn.Options.Observer was used
// before hooks; prefer Hook.
func (c *Collector) CommandStart(conn.CommandInfo) { c.commands.inFlight.Inc() }

// CommandEnd counts cmd, its duration and its error, if any.
func (c *Collector) CommandEnd(cmd conn.CommandInfo, took time.Duration, err error) {
	m := &c.commands
	m.inFlight.Dec()
	s := m.series(cmd)
	s.total.Inc()
	s.duration.Observe(took.Seconds())
	if err != nil {
		m.errors.WithLabelValues(s.command, s.script, m.code(err)).Inc()
	}
}

// commandMetrics are the command metrics, with the series of each
// command resolved once.
type commandMetrics struct {
	total    *prometheus.CounterVec
	errors   *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge

	mu    sync.RWMutex
	byID  map[conn.CommandInfo]*commandSeries
	codes map[string]bool // the error codes counted one by one
}

// commandSeries is one command's resolved series.
type commandSeries struct {
	command, script string
	total           prometheus.Counter
	duration        prometheus.Observer
}

func (m *commandMetrics) init(ns string, cl prometheus.Labels, buckets []float64) {
	m.total = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Name: "commands_total", ConstLabels: cl,
		Help: "Commands ended, by command and, for EVALSHA, the EchoMQ script it names.",
	}, []string{"command", "script"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: ns, Name: "command_errors_total", ConstLabels: cl,
		Help: "Commands that ended in an error, by the server's error code or the kind of failure.",
	}, []string{"command", "script", "code"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: ns, Name: "command_duration_seconds", ConstLabels: cl, Buckets: buckets,
		Help: "From a command's queueing to its reply.",
	}, []string{"command", "script"})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: ns, Name: "commands_in_flight", ConstLabels: cl,
		Help: "Commands started and not yet ended.",
	})
	m.byID = map[conn.CommandInfo]*commandSeries{}
	m.codes = map[string]bool{}
}

func (m *commandMetrics) describe(ch chan<- *prometheus.Desc) {
	m.total.Describe(ch)
	m.errors.Describe(ch)
	m.duration.Describe(ch)
	m.inFlight.Describe(ch)
}

func (m *commandMetrics) collect(ch chan<- prometheus.Metric) {
	m.total.Collect(ch)
	m.errors.Collect(ch)
	m.duration.Collect(ch)
	m.inFlight.Collect(ch)
}

// maxSeries bounds the commands resolved one by one; beyond it every
// other command counts as "other", so that a stream of odd names cannot
// grow the series without bound.
const maxSeries = 512

// maxCodes bounds the error codes counted one by one; beyond it every
// other code counts as "other": a script may reply with error codes of
// its own (redis.error_reply), any number of them.
const maxCodes = 64

// code returns err's code label: conn.ErrorKind, or "other" once
// maxCodes codes have been seen.
func (m *commandMetrics) code(err error) string {
	code := conn.ErrorKind(err)
	m.mu.RLock()
	seen := m.codes[code]
	m.mu.RUnlock()
	if seen {
		return code
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.codes[code]:
	case len(m.codes) < maxCodes:
		m.codes[code] = true
	default:
		return "other"
	}
	return code
}

// series returns cmd's series, resolving it on first sight.
func (m *commandMetrics) series(cmd conn.CommandInfo) *commandSeries {
	m.mu.RLock()
	s, ok := m.byID[cmd]
	m.mu.RUnlock()
	if ok {
		return s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.byID[cmd]; ok {
		return s
	}
	key := cmd
	if len(m.byID) >= maxSeries {
		key = conn.CommandInfo{Name: "other"}
		if s, ok := m.byID[key]; ok {
			return s
		}
	}
	script := ""
	if key.Script != "" {
		script = scriptName(key.Script)
	}
	s = &commandSeries{command: key.Name, script: script}
	s.total = m.total.WithLabelValues(s.command, s.script)
	s.duration = m.duration.WithLabelValues(s.command, s.script)
	m.byID[key] = s
	return s
}

// scripts maps the SHA1 of every EchoMQ script to its name.
var scripts = func() map[string]string {
	m := map[string]string{}
	for _, s := range emq.DispatchScripts() {
		m[s.SHA()] = s.Name()
	}
	return m
}()

// scriptName names the script of an EVALSHA: an EchoMQ script's name, or
// "other".
func scriptName(sha string) string {
	if name, ok := scripts[sha]; ok {
		return name
	}
	return "other"
}
