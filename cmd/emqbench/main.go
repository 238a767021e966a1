// Command emqbench measures echomq-go against a Valkey or Redis node and
// runs the echomq:6.0.0 conformance gate.
//
//	emqbench [flags] <workload>
//
// # Target
//
// Without -url, emqbench starts a private node itself: $ECHOMQ_SERVER when
// set, else valkey-server, else redis-server, from PATH, on a free loopback
// port with persistence off
// (--save "" --appendonly no) in a temporary directory. The node is stopped
// when emqbench exits, after the report, on an error, or on Ctrl-C or
// SIGTERM; should emqbench be killed outright, the kernel kills the node
// (Linux). With -url it targets an existing node: redis://, rediss://,
// valkey://, valkeys:// or unix://, as conn.ParseURL reads them; or the
// primary of a master set through its sentinels,
// redis+sentinel://host:port[,host:port…]/master[/db] (valkey+sentinel://,
// rediss+sentinel://, valkeys+sentinel:// too, as sentinel.ParseURL reads
// them), followed across failovers: the run's first connection is a
// sentinel.Client and every other one (-conns, the e2e producers, pubsub,
// cache) a conn.Client dialing through its MasterSet. No
// message echoes an argument that looks like a URL or holds an '@' (a URL
// given where the workload goes, say): it shows as "<not shown: it may
// hold a password>".
//
// # Workloads
//
// ping, set and get send plain commands; enqueue runs the EchoMQ enqueue
// transition by EVALSHA (emq.Queue.Enqueue at depth 1, EnqueueBatch, one
// pipeline of enqueue transitions, above); claim pre-fills the queue and
// then claims and completes (Claim + Complete at depth 1; ClaimBatch +
// CompleteBatch of -depth jobs above); worker measures end-to-end jobs/s
// through emq.Worker draining a pre-filled queue; e2e runs -producers
// producers (EnqueueBulk, or EnqueueBatch with -enqueue batch, -depth jobs
// per call, paced by -rate) and a worker (-goroutines handlers) at once on
// one queue until -n jobs have completed or -duration has run out and
// what was enqueued has drained; pubsub has -goroutines publishers send
// numbered, timed messages (PUBLISH, -depth per pipeline) to one
// pubsub.Subscription and reports the publish-to-receive latency per
// message, lost (messages published but never received: 0 on a healthy
// run), duplicates, messages out of their publisher's order, gaps and
// reconnects; cache has -goroutines readers GET a Zipf-distributed key
// space of -keys keys through one cache.Cache while -writers writers SET
// versioned values through it, and reports reads/s, the hit ratio and
// stale reads (a read that returned a version older than the newest write
// acknowledged before it started: any fails the run), with -chaos killing
// the cache's connection that often. Every operation of a batch of -depth is sent at once;
// -goroutines callers share -conns pipelining connections.
//
// Keys and jobs are made under a prefix and a queue name unique to the
// run, and removed at the end unless -keep is given; nothing else on the
// node is touched. An explicit -queue must be empty (unless -keep), so
// that removing it removes only what the run made.
//
// # Report
//
// A progress line (ops/s now, done, elapsed, ETA) is redrawn on a
// terminal and omitted otherwise. The report gives ops/s; latency
// percentiles (p50, p90, p99, p99.9, max) from an HDR histogram, per
// operation at depth 1 and per pipelined batch (send to last reply)
// above; the client's CPU in µs per operation (getrusage); the
// server's CPU in µs per operation (the INFO cpu delta of used_cpu_sys +
// used_cpu_user over the measured phase: with -url it counts whatever
// else the node did meanwhile); heap allocations per operation
// (runtime.MemStats); and the SCRIPT LOADs the executors sent. e2e adds
// the latency from a job's enqueue to its first handler start and to its
// completion (each job's payload carries its index and the time its
// enqueue call began), the jobs enqueued, completed, lost (enqueued and
// never seen completed: expected 0) and completed twice (duplicates,
// expected 0), and the worker's server calls per job; a lost or duplicated
// job fails the run (exit 1). e2e -failover goes on across a failover
// of the node: an enqueue not sent is sent again, one whose answer was lost
// is counted apart (its jobs "ambiguous"), a completion whose answer was
// lost "settles" its job, worker errors and stale completions (the fencing
// token at work) are counted, leases are 2 s and reaped every 200 ms, and
// the run ends when the queue is empty; the report's "failover" object
// holds those counts (see e2e_failover.go). -fail makes the handler fail the first
// attempt of that fraction of the jobs (retried at once). -json prints the
// same as one JSON object.
//
// # Gate
//
// "emqbench gate" runs the eight checks of the echomq:6.0.0 gate, prints a
// record line per check (name, PASS or FAIL, the measured figure) and
// "PASS n/8", and exits 1 when any check failed. It flushes the script
// cache and resets INFO statistics of the node: point it at a node of
// your own.
//
// # Exit status
//
// 0 on success; 1 when the run or a gate check failed; 2 for bad flags, a
// node that cannot be started or reached (the message names the cause: no
// scheme in the URL, authentication failed, no such database, not a
// Redis/Valkey server); 130 when interrupted.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/echomq/echomq-go/internal/cliredact"
)

// Exit statuses.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitInterrupted = 130
)

// main runs the command with the process's arguments and exits with
// its status.
func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command, testable: it parses args, runs the workload or
// the gate, writes the report to stdout and one-line errors to stderr, and
// returns the exit status. Ctrl-C and SIGTERM end the run early; the node
// it started is stopped either way.
func run(args []string, stdout, stderr io.Writer) int {
	if len(cliredact.Secrets(args)) > 0 {
		stderr = cliredact.Writer{W: stderr, Args: args}
	}
	cfg, err := parseArgs(args, stdout)
	if errors.Is(err, errHelp) {
		return exitOK
	}
	if err != nil {
		fail(stderr, "%v (see emqbench -h)", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	nd, err := openNode(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			fail(stderr, "interrupted")
			return exitInterrupted
		}
		fail(stderr, "%v", err)
		return exitUsage
	}
	defer nd.close()

	var code int
	if cfg.workload == "gate" {
		code = runGate(ctx, nd, cfg, stdout, stderr)
	} else {
		code = runWorkload(ctx, nd, cfg, stdout, stderr)
	}
	if ctx.Err() != nil && code != exitUsage {
		fail(stderr, "interrupted")
		return exitInterrupted
	}
	return code
}

// fail prints one line to stderr: "emqbench: " and the message with any
// line breaks folded, so an error is never more than one line.
func fail(stderr io.Writer, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	msg = strings.Join(strings.Fields(msg), " ")
	fmt.Fprintf(stderr, "emqbench: %s\n", msg)
}

// isTerminal reports whether w is a terminal (a character device), where
// the progress line is drawn.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
