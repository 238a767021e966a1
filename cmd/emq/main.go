// Command emq is the operator's tool for EchoMQ queues: it reads a
// queue's counts, browses its sets, requeues and deletes jobs, trims the
// dead set, and pauses and resumes claims.
//
//	emq [flags] <command> [job ids]
//
// # Commands
//
//	stats     counts of every set, the delayed jobs due, the expired
//	          leases, the paused flag and the lag (the oldest pending
//	          job's age); -watch prints a line every -interval until
//	          interrupted
//	browse    a page of one set (-state, -offset, -count) with the rows
//	requeue   dead jobs back to pending: the ids given, every one (-all),
//	          or those a filter selects (-error-prefix, -since, -before),
//	          at most -limit
//	delete    the jobs given by id, whatever their state, with their rows
//	trim      the oldest dead jobs, beyond -max-age or -max-count, or -all
//	pause     stop claims on the queue; resume lets them run again
//
// # The dashboard
//
//	emq web [-addr 127.0.0.1:8080] [-queues a,b] [-registry=false]
//	        [-read-only] [-prefix /emq] [URL]
//
// serves the web dashboard (package web) for the server at URL (or
// -url, $EMQ_URL, the default) until interrupted: the queues named by
// -queues and those registered in web.RegistryKey, with their actions
// unless -read-only (a replica is read-only by itself). It takes no
// -queue; web must be the first argument.
//
// Every command names its queue with -queue, and its server with -url
// (redis://, rediss://, valkey://, valkeys:// or unix://, as
// conn.ParseURL reads them), else $EMQ_URL, else redis://127.0.0.1:6379.
// -json prints JSON, one object per line (stats -watch: one per
// interval). The verbs are those of package emq: [emq.Queue.Stats],
// [emq.Queue.Browse], [emq.Queue.RequeueBatch], [emq.Queue.RequeueDead],
// [emq.Queue.DeleteBatch], [emq.Queue.TrimDead], [emq.Queue.Pause] and
// [emq.Queue.Resume].
//
// # Exit status
//
// 0 on success, and for stats -watch when interrupted (SIGINT, SIGTERM),
// its normal end; 1 when the operation failed, or some job given was not
// found (delete) or not dead (requeue); 2 for bad flags or a server that
// cannot be reached or opened (the message names the cause: no scheme in
// the URL, authentication failed, no such database, not a Redis/Valkey
// server); 130 when interrupted otherwise.
//
// stats and browse only read: they check the wire fence without writing
// it ([emq.OpenReadOnly]), so they work on a read-only replica. stats on
// a queue none of whose sets or flags is on the server says "queue … does
// not exist" (JSON: "exists": false) and exits 0: on the server a queue
// emptied of every job is the same as one never used. Every
// error is one line on stderr, and no message echoes an argument that
// looks like a URL or holds an '@': it shows as "<not shown: it may hold
// a password>".
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

	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/cliconn"
	"github.com/echomq/echomq-go/internal/cliredact"
)

// Exit statuses.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitInterrupted = 130
)

// main runs the command with the process's arguments and exits with its
// status.
func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command, testable: it parses args, connects, runs the
// command, writes its output to stdout and one-line errors to stderr,
// and returns the exit status. SIGINT and SIGTERM end it.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "web" {
		return runWeb(args[1:], stdout, stderr)
	}
	if len(cliredact.Secrets(args)) > 0 {
		stderr = cliredact.Writer{W: stderr, Args: args}
	}
	cfg, err := parseArgs(args, stdout)
	if errors.Is(err, errHelp) {
		return exitOK
	}
	if err != nil {
		fail(stderr, "%v (see emq -h)", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	q, closeQueue, err := open(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			fail(stderr, "interrupted")
			return exitInterrupted
		}
		fail(stderr, "%v", err)
		return exitUsage
	}
	defer closeQueue()

	out := &printer{w: stdout, json: cfg.json, queue: cfg.queue}
	code := runCommand(ctx, q, cfg, out, stderr)
	if ctx.Err() != nil && !(cfg.cmd.name == "stats" && cfg.watch) {
		fail(stderr, "interrupted")
		return exitInterrupted
	}
	return code
}

// open connects to the server with a conn.Client, or a cluster.Client
// when the node is part of a cluster (cluster_enabled:1), and opens the
// queue (checking the wire fence; the commands that only read, stats and
// browse, read it and write nothing, so they work on a read-only
// replica). Its errors are one line, naming the cause (a URL without a
// scheme, a failed authentication, no such database, not a Redis/Valkey
// server), and mean exit 2.
func open(ctx context.Context, cfg config) (*emq.Queue, func(), error) {
	opts, err := cliconn.ParseURL(cfg.url)
	if err != nil {
		return nil, nil, fmt.Errorf("-url: %v", err)
	}
	opts.ClientName = "emq"
	cl, err := dial(ctx, opts)
	if err != nil {
		return nil, nil, cliconn.Explain(where(opts), opts, err)
	}
	openQueue := emq.Open
	if readOnly[cfg.cmd.name] {
		openQueue = emq.OpenReadOnly
	}
	q, err := openQueue(ctx, cl, cfg.queue)
	if err != nil {
		cl.Close()
		return nil, nil, fmt.Errorf("cannot open queue %q on %s: %w", cfg.queue, where(opts), err)
	}
	return q, func() { cl.Close() }, nil
}

// readOnly are the commands that write nothing, not even the fence.
var readOnly = map[string]bool{"stats": true, "browse": true}

// client is a conn.Client or a cluster.Client.
type client interface {
	conn.Sender
	Close() error
}

// dial connects to the node, and through it to its cluster when it is
// part of one: then every command is routed by slot.
func dial(ctx context.Context, opts conn.Options) (client, error) {
	cl, err := conn.NewClient(ctx, opts)
	if err != nil {
		return nil, err
	}
	v, err := cl.Do(ctx, "INFO", "cluster")
	if err != nil || !strings.Contains(string(v.VerbatimText()), "cluster_enabled:1") {
		return cl, nil
	}
	cl.Close()
	o := cluster.Options{Seeds: []string{opts.Addr}}
	o.Node = opts
	return cluster.NewClient(ctx, o)
}

// where names the server for messages, without any password.
func where(o conn.Options) string {
	if o.Network == "unix" {
		return "unix:" + o.Addr
	}
	return o.Addr
}

// fail prints one line to stderr: "emq: " and the message with any line
// breaks folded, so that an error is never more than one line.
func fail(stderr io.Writer, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	msg = strings.Join(strings.Fields(msg), " ")
	fmt.Fprintf(stderr, "emq: %s\n", msg)
}
