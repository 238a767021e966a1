package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/emq"
)

// checkTimeout bounds one gate check.
const checkTimeout = 60 * time.Second

// gate runs the eight checks of the echomq:6.0.0 gate ("The gate" in the
// protocol) against one node. Each check uses queues of its own, named
// after the run, and the gate removes them all at the end.
type gate struct {
	nd     *node
	prefix string // every gate queue's name starts with it
	// native: the transitions go through the module's EMQ.* commands
	// (-executor native, or auto on a server that has them). The checks
	// then read as PROTOCOL.md's gate does for a native executor: script
	// loads 0 where the scripted executor loads once, the throughput of
	// EMQ.ENQUEUE instead of EVALSHA, no reload after SCRIPT FLUSH.
	native bool
}

// check is one gate check: its name and its body, which returns the
// measured figure or detail, or an error that fails the check.
type check struct {
	name string
	run  func(g *gate, ctx context.Context) (string, error)
}

// checks are the gate, in the protocol's order.
var checks = []check{
	{"connect", (*gate).connect},
	{"fence", (*gate).fence},
	{"script_loads", (*gate).scriptLoads},
	{"evalsha_throughput", (*gate).throughput},
	{"pipeline_order", (*gate).pipelineOrder},
	{"stale_token", (*gate).staleToken},
	{"flush_reload", (*gate).flushReload},
	{"lease_reap", (*gate).leaseReap},
}

// checkResult is the record of one check.
type checkResult struct {
	Num    int    `json:"num"`
	Name   string `json:"name"`
	Pass   bool   `json:"pass"`
	Detail string `json:"detail"`
}

// gateReport is what -json prints for the gate.
type gateReport struct {
	Gate     string        `json:"gate"`
	Server   string        `json:"server"`
	Executor string        `json:"executor"` // "script" or "native"
	Checks   []checkResult `json:"checks"`
	Passed   int           `json:"passed"`
	Total    int           `json:"total"`
	Cleanup  string        `json:"cleanup"`
}

// runGate runs every check, printing one record line per check as it
// ends, then "PASS n/8". It returns exitFailed when any check failed.
func runGate(ctx context.Context, nd *node, cfg config, stdout, stderr io.Writer) int {
	g := &gate{nd: nd, prefix: "emqbench-gate-" + nd.runID}
	rep := gateReport{Gate: emq.Version, Server: nd.desc, Total: len(checks), Executor: "script"}
	switch cfg.executor {
	case emq.ExecutorNative:
		g.native = true
	case emq.ExecutorAuto: // on a cluster: native when every primary has the module
		has, err := emq.HasNative(ctx, nd.conns[0])
		g.native = err == nil && has
	}
	if g.native {
		rep.Executor = "native"
		if err := emq.CheckNative(ctx, nd.conns[0]); err != nil {
			fail(stderr, "gate: -executor native, but %v (-module module/emq.so loads it on a server emqbench starts)", err)
			return exitUsage
		}
	}
	if !cfg.json {
		fmt.Fprintf(stdout, "emqbench gate: %s against %s, %s executor\n", emq.Version, nd.desc, rep.Executor)
	}
	for i, c := range checks {
		res := checkResult{Num: i + 1, Name: c.name}
		if ctx.Err() != nil {
			res.Detail = "not run: interrupted"
		} else {
			cctx, cancel := context.WithTimeout(ctx, checkTimeout)
			detail, err := c.run(g, cctx)
			cancel()
			res.Pass, res.Detail = err == nil, detail
			if err != nil {
				res.Detail = joinDetail(detail, oneLine(err))
			}
		}
		if res.Pass {
			rep.Passed++
		}
		rep.Checks = append(rep.Checks, res)
		if !cfg.json {
			fmt.Fprintf(stdout, "%d %-18s %s  %s\n", res.Num, res.Name, verdict(res.Pass), res.Detail)
		}
	}
	rep.Cleanup = g.cleanup()
	if cfg.json {
		_ = json.NewEncoder(stdout).Encode(rep)
	} else {
		fmt.Fprintf(stdout, "cleanup: %s\n", rep.Cleanup)
		fmt.Fprintf(stdout, "PASS %d/%d\n", rep.Passed, rep.Total)
	}
	if rep.Passed != rep.Total {
		fail(stderr, "gate: %d of %d checks failed", rep.Total-rep.Passed, rep.Total)
		return exitFailed
	}
	return exitOK
}

// verdict is a check's PASS or FAIL.
func verdict(pass bool) string {
	if pass {
		return "PASS"
	}
	return "FAIL"
}

// joinDetail joins what a check measured and why it failed.
func joinDetail(detail, why string) string {
	if detail == "" {
		return why
	}
	return detail + "; " + why
}

// queue opens the gate queue of check n, with an executor of its own.
func (g *gate) queue(ctx context.Context, n int) (*emq.Queue, loadCounter, error) {
	x, loads := g.executor(g.nd.conns[0])
	q, err := emq.Open(ctx, g.nd.conns[0], g.prefix+"-"+strconv.Itoa(n), emq.WithExecutor(x))
	return q, loads, err
}

// loadCounter reports the SCRIPT LOADs an executor has sent.
type loadCounter func() uint64

// executor returns the gate's executor over s, and its load counter (0
// for ever on the native executor: it has no script to load).
func (g *gate) executor(s conn.Sender) (dispatch.Executor, loadCounter) {
	if g.native {
		return dispatch.NewNative(s), func() uint64 { return 0 }
	}
	x := dispatch.NewScripted(s)
	return x, func() uint64 { return x.Stats().Loads }
}

// cleanup removes every gate queue and the gate's scratch key.
func (g *gate) cleanup() string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := deleteMatching(ctx, g.nd, "emq:{"+globEscape(g.prefix)+"*")
	if err == nil {
		var m int
		m, err = deleteMatching(ctx, g.nd, globEscape(g.incrKey()))
		n += m
	}
	if err != nil {
		return fmt.Sprintf("removed %d keys; failed: %s", n, oneLine(err))
	}
	return fmt.Sprintf("removed %d keys", n)
}

// incrKey is the counter of the pipeline-order check.
func (g *gate) incrKey() string { return "emqbench:" + g.nd.runID + ":gate:incr" }
