package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/cliredact"
)

// workloads lists what emqbench can run, in the order the usage shows.
var workloads = []string{"ping", "set", "get", "enqueue", "claim", "worker", "e2e", "lanes", "flow", "pubsub", "cache", "gate"}

// config is one run's settings, from the command line.
type config struct {
	workload   string
	url        string        // empty: start a private local server
	conns      int           // connections opened
	goroutines int           // concurrent callers, spread over the connections
	depth      int           // commands per pipelined batch
	depthSet   bool          // -depth was given (worker keeps its defaults otherwise)
	size       int           // value or payload bytes
	n          int64         // operations to run; math.MaxInt64 when only -duration bounds
	duration   time.Duration // 0: bounded by n alone
	queue      string        // queue name for enqueue/claim/worker
	queueSet   bool          // -queue was given
	keys       int           // key space of set/get
	keep       bool          // leave the keys of the run behind
	json       bool          // one JSON object instead of the text report

	// e2e only.
	producers int     // enqueuing goroutines, each on a connection of its own
	inflight  int     // enqueue calls each producer keeps in flight on its connection
	shards    int     // member queues of a sharded queue (emq.Sharded); 1: a plain queue
	rate      float64 // jobs/s all producers together; 0: as fast as they can
	fail      float64 // fraction of jobs whose handler fails its first attempt
	enqueue   string  // "bulk" (EnqueueBulk) or "batch" (EnqueueBatch)
	jobs      bool    // the job system: typed tasks, a jobs.Mux and a jobs.Server over 3 weighted queues
	failover  bool    // go on across a failover, accounting for what failed calls did (e2e_failover.go)
	// -failover through a sentinel URL: go on past -n until this many jobs
	// are acknowledged on the master set's new primary (0: stop at -n),
	// within switchWithin of the run's start.
	afterSwitch  int64
	switchWithin time.Duration

	// enqueue, claim, worker, e2e, gate: the queue's executor.
	executor emq.ExecutorChoice
	// module is a module for the private server to load (--loadmodule),
	// as an absolute path; "" loads none. Only without -url.
	module string
	// cache only.
	writers int           // writer goroutines
	chaos   time.Duration // kill the cache's connection this often; 0: never
	// cpuprofile is a file for the client's CPU profile of the measured
	// part of the run (runtime/pprof); "" takes none.
	cpuprofile string
}

// usageText is printed by -h; usageError formats the one-line errors.
const usageText = `usage: emqbench [flags] <workload>

Workloads:
  ping      PING
  set       SET of -size byte values over -keys keys
  get       GET of -keys keys, pre-filled with -size byte values
  enqueue   the EchoMQ enqueue transition (EVALSHA), one job of -size bytes per op
  claim     claim + complete of jobs pre-filled into the queue (one op = both)
  worker    jobs/s through emq.Worker draining a pre-filled queue (-goroutines = concurrency)
  e2e       producers enqueue (-producers, -rate) while an emq.Worker (-goroutines
            handlers) claims and completes, on one queue: jobs/s, enqueue-to-start
            and enqueue-to-done latency, lost and duplicate jobs (-depth: jobs per
            enqueue call, default 100)
  lanes     -producers LaneEnqueueMany -n jobs (100 a call, job i in lane i mod 1,000, cap 1)
            while -goroutines consumers LaneCompleteClaim (complete the last batch,
            claim the next -depth, default 100): jobs/s, enqueue-to-done; a job completed twice
            fails the run
  flow      one flow of -n jobs (a root, -n-2 children, a fan-in) submitted while
            -goroutines consumers run it as lanes does: jobs/s, submit-to-done
  pubsub    -goroutines publishers PUBLISH numbered, timed messages of -size
            bytes to one pubsub.Subscription; reports publish-to-receive
            latency, lost (0 on a healthy run) and reconnects
  cache     -goroutines readers GET a Zipf-distributed key space (-keys) through
            cache.Cache (ClusterCache on a cluster) while -writers writers SET versioned values of -size
            bytes through it: reads/s, hit ratio, stale reads (any fails the run)
  gate      the eight checks of the echomq:6.0.0 gate; ends with PASS n/8

Without -url emqbench starts a private valkey-server (else redis-server)
from PATH, or $ECHOMQ_SERVER when set, on a free loopback port, and stops
it on exit.

Flags:
`

// errHelp is returned by parseArgs for -h: usage was printed, exit 0.
var errHelp = errors.New("help requested")

// parseArgs reads the command line. Flags may come before or after the
// workload. Errors are one line, for the caller to print with exit 2.
func parseArgs(args []string, stdout io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("emqbench", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, by the caller
	fs.StringVar(&c.workload, "workload", "", "workload to run (or give it as the argument)")
	fs.StringVar(&c.url, "url", "", "server URL: redis://, rediss://, valkey://, valkeys:// or unix://; or a master set\nthrough its sentinels: redis+sentinel://host:port[,host:port…]/master[/db] (also\nvalkey+sentinel://, rediss+sentinel://, valkeys+sentinel://; see sentinel.ParseURL)\n(default: start a private local server)")
	fs.IntVar(&c.conns, "conns", 1, "connections to open")
	fs.IntVar(&c.goroutines, "goroutines", 8, "concurrent callers, spread over the connections")
	fs.IntVar(&c.depth, "depth", 1, "pipeline depth: commands sent together per batch")
	fs.IntVar(&c.size, "size", 16, "value / payload size in bytes")
	fs.Int64Var(&c.n, "n", 100_000, "operations to run (with -duration: at most this many, when given)")
	fs.DurationVar(&c.duration, "duration", 0, "run for this long instead of -n operations, e.g. 10s")
	fs.StringVar(&c.queue, "queue", "", "queue name (default: emqbench-<unique>, removed at the end)")
	fs.IntVar(&c.keys, "keys", 10_000, "key space of set and get")
	fs.BoolVar(&c.keep, "keep", false, "keep the keys and jobs the run created")
	fs.BoolVar(&c.json, "json", false, "print one JSON object instead of the text report")
	fs.IntVar(&c.producers, "producers", 1, "e2e: producer goroutines, each on its own connection")
	fs.IntVar(&c.inflight, "inflight", 1, "e2e: enqueue calls each producer keeps in flight on its connection\n(that many goroutines calling the enqueue verb on it, pipelined; -failover: 1)")
	fs.IntVar(&c.shards, "shards", 1, "enqueue, worker, e2e: spread the queue over this many member queues (emq.Sharded; on a cluster, over the primaries)")
	fs.Float64Var(&c.rate, "rate", 0, "e2e: jobs/s enqueued by all producers together (0: as fast as they can)")
	fs.Float64Var(&c.fail, "fail", 0, "e2e: fraction of jobs whose handler fails the first attempt (retried at once)")
	fs.BoolVar(&c.jobs, "jobs", false, "e2e: through the job system: enveloped tasks of 3 types, a jobs.Mux, one jobs.Server over 3 queues weighted 3:2:1 (-shards 3 unless given)")
	fs.BoolVar(&c.failover, "failover", false, "e2e: go on across a failover of the node (failed calls accounted for, not fatal; leases of 2s reaped every 200ms)")
	fs.Int64Var(&c.afterSwitch, "after-switch", 0, "e2e -failover through a sentinel URL: the producers go on past -n until this many jobs\nwere acknowledged by enqueue calls sent once the master set named a new primary\n(0: stop at -n); -switch-within bounds the wait, and the run fails past it")
	fs.DurationVar(&c.switchWithin, "switch-within", 2*time.Minute, "e2e -after-switch: the longest the run goes on, from its start, for the switch and the jobs after it")
	fs.StringVar(&c.enqueue, "enqueue", "bulk", "e2e: bulk (EnqueueBulk, the enqueue_batch transition) or batch (EnqueueBatch, pipelined enqueues)")
	executor := fs.String("executor", "auto", "enqueue, claim, worker, e2e, gate: the transitions' executor: native (the module's EMQ.* commands), script (EVALSHA) or auto (native when the server, on a cluster every primary, has the module)")
	fs.StringVar(&c.module, "module", "", "the private server loads this module (e.g. module/emq.so, built by make -C module); not with -url")
	fs.IntVar(&c.writers, "writers", 1, "cache: writer goroutines")
	fs.DurationVar(&c.chaos, "chaos", 0, "cache: kill the cache's connection this often, e.g. 100ms (0: never)")
	fs.StringVar(&c.cpuprofile, "cpuprofile", "", "write the client's CPU profile of the measured part of the run to this file (go tool pprof reads it)")
	fs.Usage = func() {}

	all := args
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printUsage(stdout, fs)
				return c, errHelp
			}
			// The flag package quotes the value it could not parse.
			return c, errors.New(cliredact.Redact(err.Error(), all))
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	c.queueSet, c.depthSet = set["queue"], set["depth"]
	var err error
	if c.executor, err = emq.ParseExecutorChoice(*executor); err != nil {
		return c, fmt.Errorf("-executor %s: want native, script or auto", cliredact.Quote(*executor))
	}
	if c.module != "" {
		if c.url != "" {
			return c, errors.New("-module loads a module into the private server: not with -url (start that server with --loadmodule)")
		}
		abs, err := filepath.Abs(c.module)
		if err != nil {
			return c, fmt.Errorf("-module %s: %v", cliredact.Quote(c.module), err)
		}
		if st, err := os.Stat(abs); err != nil || st.IsDir() {
			return c, fmt.Errorf("-module %s: no such file (build it with make -C module)", cliredact.Quote(c.module))
		}
		c.module = abs
	}
	if c.jobs && !set["shards"] {
		c.shards = jobsQueues
	}
	if c.duration > 0 && !set["n"] {
		c.n = math.MaxInt64
	}
	switch {
	case len(positional) > 1:
		shown := make([]string, len(positional))
		for i, p := range positional {
			shown[i] = cliredact.Quote(p)
		}
		return c, fmt.Errorf("one workload at a time, got %s%s", strings.Join(shown, " "), cliredact.URLHint(positional...))
	case len(positional) == 1 && c.workload != "" && c.workload != positional[0]:
		return c, fmt.Errorf("-workload %s and argument %s disagree%s", cliredact.Quote(c.workload), cliredact.Quote(positional[0]), cliredact.URLHint(c.workload, positional[0]))
	case len(positional) == 1:
		c.workload = positional[0]
	}
	return c, c.validate()
}

// validate checks the values the flag package cannot.
func (c *config) validate() error {
	switch {
	case c.workload == "":
		return fmt.Errorf("no workload given (one of %s)", strings.Join(workloads, ", "))
	case !slices.Contains(workloads, c.workload):
		return fmt.Errorf("unknown workload %s (one of %s)%s", cliredact.Quote(c.workload), strings.Join(workloads, ", "), cliredact.URLHint(c.workload))
	case c.conns < 1 || c.conns > 1024:
		return fmt.Errorf("-conns %d: want 1 to 1024", c.conns)
	case c.goroutines < 1 || c.goroutines > 100_000:
		return fmt.Errorf("-goroutines %d: want 1 to 100000", c.goroutines)
	case c.depth < 1 || c.depth > 100_000:
		return fmt.Errorf("-depth %d: want 1 to 100000", c.depth)
	case c.size < 0 || c.size > 64<<20:
		return fmt.Errorf("-size %d: want 0 to %d", c.size, 64<<20)
	case c.n < 1:
		return fmt.Errorf("-n %d: want at least 1", c.n)
	case c.duration < 0:
		return fmt.Errorf("-duration %v: want a positive duration", c.duration)
	case c.keys < 1:
		return fmt.Errorf("-keys %d: want at least 1", c.keys)
	case c.producers < 1 || c.producers > 1024:
		return fmt.Errorf("-producers %d: want 1 to 1024", c.producers)
	case c.inflight < 1 || c.inflight > 64:
		return fmt.Errorf("-inflight %d: want 1 to 64", c.inflight)
	case c.shards < 1 || c.shards > 1024:
		return fmt.Errorf("-shards %d: want 1 to 1024", c.shards)
	case c.rate < 0 || math.IsNaN(c.rate) || math.IsInf(c.rate, 0):
		return fmt.Errorf("-rate %v: want 0 (unbounded) or a positive jobs/s", c.rate)
	case !(c.fail >= 0 && c.fail <= 1):
		return fmt.Errorf("-fail %v: want a fraction from 0 to 1", c.fail)
	case c.writers < 0 || c.writers > 1024:
		return fmt.Errorf("-writers %d: want 0 to 1024", c.writers)
	case c.chaos < 0:
		return fmt.Errorf("-chaos %v: want a positive duration", c.chaos)
	case c.jobs && c.workload != "e2e":
		return errors.New("-jobs: only with the e2e workload")
	case c.failover && (c.workload != "e2e" || c.jobs):
		return errors.New("-failover: only with the e2e workload, without -jobs")
	case c.afterSwitch < 0:
		return fmt.Errorf("-after-switch %d: want 0 or a positive count of jobs", c.afterSwitch)
	case c.afterSwitch > 0 && (!c.failover || !isSentinelURL(c.url)):
		return errors.New("-after-switch: only with -failover and a sentinel URL (-url redis+sentinel://…)")
	case c.afterSwitch > 0 && c.duration > 0:
		return errors.New("-after-switch: not with -duration (-switch-within bounds the run)")
	case c.switchWithin <= 0:
		return fmt.Errorf("-switch-within %v: want a positive duration", c.switchWithin)
	case c.enqueue != "bulk" && c.enqueue != "batch":
		return fmt.Errorf("-enqueue %s: want bulk or batch", cliredact.Quote(c.enqueue))
	}
	if c.queueSet {
		if strings.Contains(c.queue, "://") {
			// It would name keys on the node and show in the report.
			return fmt.Errorf("-queue %s: a URL is not a queue name%s", cliredact.Quote(c.queue), cliredact.URLHint(c.queue))
		}
		if err := emq.ValidQueue(c.queue); err != nil {
			var qe *emq.QueueError
			if cliredact.LooksSecret(c.queue) && errors.As(err, &qe) {
				// QueueError quotes the name, clipped: redactArgs would
				// miss the clipped form.
				return fmt.Errorf("-queue %s: %s", cliredact.Quote(c.queue), qe.Reason)
			}
			return fmt.Errorf("-queue: %v", err)
		}
	}
	return nil
}

// printUsage writes the usage text and every flag with its default.
func printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, usageText)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	fmt.Fprint(w, `
Exit status: 0 on success, 1 when the run or a gate check failed,
2 for bad flags or an unreachable server, 130 when interrupted.
`)
}
