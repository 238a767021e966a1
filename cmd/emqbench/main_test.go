package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/echomq/echomq-go/internal/cliredact"
	"github.com/echomq/echomq-go/internal/servertest"
)

var srv *servertest.Server

func TestMain(m *testing.M) {
	os.Exit(servertest.Main(m, &srv, servertest.Options{}))
}

// emqbench runs the command against the test server and returns its exit
// status, stdout and stderr.
func emqbench(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	servertest.Need(t, srv)
	return runArgs(append([]string{"-url", "redis://" + srv.Addr}, args...)...)
}

// runArgs runs the command with exactly args.
func runArgs(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestGatePasses(t *testing.T) {
	code, out, errs := emqbench(t, "gate")
	t.Log("\n" + out)
	if code != exitOK || errs != "" {
		t.Fatalf("gate: exit %d, stderr %q", code, errs)
	}
	if !strings.HasSuffix(out, "PASS 8/8\n") {
		t.Errorf("gate output does not end with PASS 8/8")
	}
	for i, c := range checks {
		line := regexp.MustCompile(`(?m)^` + strconv.Itoa(i+1) + ` ` + c.name + ` +PASS  \S`)
		if !line.MatchString(out) {
			t.Errorf("no PASS record for check %d %s", i+1, c.name)
		}
	}
	if !strings.Contains(out, "script_loads = 1 ") || !strings.Contains(out, "attempts = 2") {
		t.Errorf("records lack their figures")
	}
	assertNoKeys(t, "emq:{emqbench-gate-*")
	assertNoKeys(t, "emqbench:*")
}

func TestGateJSON(t *testing.T) {
	code, out, _ := emqbench(t, "-json", "gate")
	var rep gateReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("gate -json: %v in %q", err, out)
	}
	if code != exitOK || rep.Passed != 8 || rep.Total != 8 || len(rep.Checks) != 8 {
		t.Errorf("gate -json: exit %d, %d/%d passed, %d checks", code, rep.Passed, rep.Total, len(rep.Checks))
	}
}

func TestPingReport(t *testing.T) {
	code, out, errs := emqbench(t, "-n", "2000", "-depth", "10", "ping")
	if code != exitOK || errs != "" {
		t.Fatalf("ping: exit %d, stderr %q\n%s", code, errs, out)
	}
	for _, want := range []string{
		"throughput", "ops/s", "2,000 ops", "stopped: n", "p50", "p99.9", "max",
		"per batch of 10 operations", "per op", "script loads -",
		"server CPU", "µs per op",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	// The client CPU line gives one unit, as the server CPU line does.
	if !regexp.MustCompile(`(?m)^  client CPU   \d+\.\d{3} µs per op \(user\+system, getrusage\)$`).MatchString(out) ||
		strings.Contains(out, "per million") {
		t.Errorf("client CPU line:\n%s", out)
	}
}

// jsonRun runs a workload with -json and decodes its report.
func jsonRun(t *testing.T, args ...string) report {
	t.Helper()
	code, out, errs := emqbench(t, append([]string{"-json"}, args...)...)
	if code != exitOK || errs != "" {
		t.Fatalf("%v: exit %d, stderr %q\n%s", args, code, errs, out)
	}
	var r report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: -json output does not parse: %v\n%s", args, err, out)
	}
	if strings.Count(out, "\n") != 1 {
		t.Errorf("%v: -json printed more than one line:\n%s", args, out)
	}
	return r
}

// sane checks the figures every report must have.
func sane(t *testing.T, r report, ops int64) {
	t.Helper()
	l := r.Latency
	switch {
	case r.Ops != ops || r.Stopped != "n":
		t.Errorf("%s: %d ops, stopped %q; want %d, n", r.Workload, r.Ops, r.Stopped, ops)
	case r.OpsPerSec <= 0 || math.IsInf(r.OpsPerSec, 0) || r.ElapsedSec <= 0:
		t.Errorf("%s: %v ops/s in %vs", r.Workload, r.OpsPerSec, r.ElapsedSec)
	case l.Samples < 1 || l.P50 <= 0 || l.P50 > l.P90 || l.P90 > l.P99 || l.P99 > l.P999 || l.P999 > l.Max:
		t.Errorf("%s: latency not ordered: %+v", r.Workload, l)
	case r.CPUPerMOps <= 0 || r.AllocsPerOp < 0:
		t.Errorf("%s: cpu %v s/Mops, allocs %v/op", r.Workload, r.CPUPerMOps, r.AllocsPerOp)
	case r.ServerCPUPerOp == nil || *r.ServerCPUPerOp < 0:
		t.Errorf("%s: server cpu %v µs/op", r.Workload, r.ServerCPUPerOp)
	case r.Error != "":
		t.Errorf("%s: error %q", r.Workload, r.Error)
	}
}

func TestWorkloadsJSON(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		per     string
		scripts bool
	}{
		{[]string{"-n", "500", "ping"}, "op", false},
		{[]string{"-n", "500", "-size", "100", "set"}, "op", false},
		{[]string{"-n", "500", "-keys", "50", "-depth", "20", "get"}, "batch", false},
		{[]string{"-n", "500", "enqueue"}, "op", true},
		{[]string{"-n", "500", "-depth", "100", "-conns", "2", "enqueue"}, "batch", true},
		{[]string{"-n", "300", "claim"}, "op", true},
		{[]string{"-n", "300", "-depth", "32", "claim"}, "batch", true},
		{[]string{"-n", "300", "-goroutines", "4", "worker"}, "job", true},
		{[]string{"-n", "300", "-goroutines", "4", "-producers", "2", "-depth", "7", "e2e"}, "e2e", true},
		{[]string{"-n", "3000", "-goroutines", "4", "-producers", "2", "lanes"}, "job", true},
		{[]string{"-n", "5000", "-goroutines", "4", "-depth", "50", "flow"}, "job", true},
	} {
		r := jsonRun(t, tc.args...)
		sane(t, r, r.Ops)
		n, _ := strconv.ParseInt(tc.args[1], 10, 64)
		if r.Ops != n {
			t.Errorf("%v: %d ops, want %d", tc.args, r.Ops, n)
		}
		if r.Latency.Per != tc.per {
			t.Errorf("%v: latency per %q, want %q", tc.args, r.Latency.Per, tc.per)
		}
		if (r.ScriptLoads != nil) != tc.scripts || r.ScriptLoads != nil && *r.ScriptLoads > uint64(r.Conns)*8 {
			t.Errorf("%v: script loads %v", tc.args, r.ScriptLoads)
		}
		if !strings.HasPrefix(r.Cleanup, "removed") && r.Cleanup != "nothing to remove" {
			t.Errorf("%v: cleanup %q", tc.args, r.Cleanup)
		}
	}
	assertNoKeys(t, "emq:{emqbench-*")
	assertNoKeys(t, "emqbench:*")
}

// The pubsub workload: every message published is received, once, in
// its publisher's order, with a latency each; at depth 1 and pipelined.
func TestPubsubWorkload(t *testing.T) {
	for _, args := range [][]string{
		{"-n", "5000", "-goroutines", "4", "pubsub"},
		{"-n", "5000", "-depth", "50", "-size", "200", "pubsub"},
	} {
		r := jsonRun(t, args...)
		sane(t, r, 5000)
		if r.Latency.Per != "message" || r.Latency.Samples != 5000 {
			t.Errorf("%v: latency per %q, %d samples", args, r.Latency.Per, r.Latency.Samples)
		}
		b := r.Bus
		if b == nil {
			t.Fatalf("%v: no pubsub figures", args)
		}
		got := *b
		got.Stalls = 0 // the subscriber may fall behind for a moment: not a fault
		if got != (busReport{Published: 5000, Received: 5000}) {
			t.Errorf("%v: delivery %+v, want 5000 published and received, nothing else", args, *b)
		}
	}
	code, out, errs := emqbench(t, "-n", "2000", "pubsub")
	if code != exitOK || errs != "" || !strings.Contains(out, "delivery     lost 0 of 2,000 published (0 unheard), 2,000 received") ||
		!strings.Contains(out, "0 reconnects, 0 gaps reported") || !strings.Contains(out, "per message, publish to receive") {
		t.Errorf("pubsub: exit %d, stderr %q\n%s", code, errs, out)
	}
}

// TestE2EReport: the e2e text report names jobs/s, both latencies, lost
// and duplicates, and the server's CPU per job.
func TestE2EReport(t *testing.T) {
	code, out, errs := emqbench(t, "-n", "3000", "-producers", "2", "e2e")
	if code != exitOK || errs != "" {
		t.Fatalf("e2e: exit %d, stderr %q\n%s", code, errs, out)
	}
	for _, want := range []string{
		"jobs/s", "3,000 jobs", "to start", "enqueue to its first handler start",
		"enqueue to completion acknowledged", "lost 0", "duplicates 0", "server CPU", "worker calls",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	assertNoKeys(t, "emq:{emqbench-*")
}

// TestE2EFailOnceNoneLost runs 200,000 jobs end to end (20,000 with
// -short or -race) through two producers and a worker whose handler fails
// the first attempt of 5% of the jobs: every job enqueued completes
// exactly once (the failing ones after their retry), none is lost, and the
// handler runs no job more often than that.
func TestE2EFailOnceNoneLost(t *testing.T) {
	n := int64(200_000)
	if testing.Short() || raceEnabled {
		n = 20_000
	}
	r := jsonRun(t, "-n", strconv.FormatInt(n, 10), "-producers", "2", "-fail", "0.05", "e2e")
	sane(t, r, n)
	x := r.E2E
	if x == nil {
		t.Fatal("no e2e section in the report")
	}
	t.Logf("%d jobs in %.2fs: %.0f jobs/s, %d failed once and retried, %.1f jobs per worker call, server %.2f µs/job",
		n, r.ElapsedSec, r.OpsPerSec, x.Failed, x.JobsPerCall, *r.ServerCPUPerOp)
	if x.Enqueued != n || x.Completed != n || x.Lost != 0 || x.Duplicates != 0 || x.ExtraRuns != 0 {
		t.Errorf("enqueued %d, completed %d, lost %d, duplicates %d, extra runs %d; want %d, %d, 0, 0, 0",
			x.Enqueued, x.Completed, x.Lost, x.Duplicates, x.ExtraRuns, n, n)
	}
	// About 5% fail: the choice is a fixed hash of the index.
	if x.Failed != x.Retried || x.Failed < n/25 || x.Failed > n*6/100 {
		t.Errorf("%d injected failures, %d retries; want equal, about %d", x.Failed, x.Retried, n/20)
	}
	if x.ToStart.Samples != n || x.ToDone.Samples != n {
		t.Errorf("latency samples %d to start, %d to done; want %d", x.ToStart.Samples, x.ToDone.Samples, n)
	}
	assertNoKeys(t, "emq:{emqbench-*")
}

// TestE2EInFlight: with -inflight 3, each of two producers runs three
// enqueue calls at once on its one connection; every job still completes
// exactly once under the id its enqueue returned, and the report says how
// the run was shaped: 3 in flight, the producers' share of time in calls
// (a fraction of one), and the jobs per claim (at most a claim's size).
func TestE2EInFlight(t *testing.T) {
	const n = 6000
	r := jsonRun(t, "-n", strconv.Itoa(n), "-producers", "2", "-inflight", "3", "-depth", "50", "e2e")
	sane(t, r, n)
	x := r.E2E
	if x == nil {
		t.Fatal("no e2e section in the report")
	}
	if x.Enqueued != n || x.Completed != n || x.Lost != 0 || x.Duplicates != 0 || x.ExtraRuns != 0 {
		t.Errorf("enqueued %d, completed %d, lost %d, duplicates %d, extra runs %d; want %d, %d, 0, 0, 0",
			x.Enqueued, x.Completed, x.Lost, x.Duplicates, x.ExtraRuns, n, n)
	}
	if x.InFlight != 3 || x.Producers != 2 {
		t.Errorf("inflight %d, producers %d; want 3, 2", x.InFlight, x.Producers)
	}
	if x.ProducerBusy <= 0 || x.ProducerBusy > 1 {
		t.Errorf("producer busy %v; want in (0, 1]", x.ProducerBusy)
	}
	if x.JobsPerClaim <= 0 || x.JobsPerClaim > 8+256 {
		t.Errorf("jobs per claim %v; want in (0, 264]", x.JobsPerClaim)
	}
	if code, _, errs := emqbench(t, "-inflight", "0", "e2e"); code == exitOK || !strings.Contains(errs, "-inflight 0") {
		t.Errorf("-inflight 0: exit %d, stderr %q; want a usage error naming it", code, errs)
	}
	assertNoKeys(t, "emq:{emqbench-*")
}

// TestE2EDuration: bounded by -duration, and paced by -rate, the
// producers stop at the deadline and the run ends once what they enqueued
// has drained: every job enqueued is completed, none lost.
func TestE2EDuration(t *testing.T) {
	r := jsonRun(t, "-duration", "500ms", "-rate", "4000", "-producers", "2", "-depth", "50", "e2e")
	x := r.E2E
	if x == nil {
		t.Fatal("no e2e section in the report")
	}
	if r.Stopped != "duration" || r.Error != "" {
		t.Errorf("stopped %q, error %q; want duration and none", r.Stopped, r.Error)
	}
	// The rate bounds the jobs from above; how many the producers reach
	// in 500 ms depends on the machine, so only that some were made.
	if x.Enqueued < 50 || x.Enqueued > 2100 || x.Completed != x.Enqueued || x.Lost != 0 || x.Duplicates != 0 {
		t.Errorf("enqueued %d, completed %d, lost %d, duplicates %d", x.Enqueued, x.Completed, x.Lost, x.Duplicates)
	}
	if r.Ops != x.Completed || x.Rate != 4000 || x.Producers != 2 || x.Chunk != 50 {
		t.Errorf("ops %d, rate %v, producers %d, chunk %d", r.Ops, x.Rate, x.Producers, x.Chunk)
	}
}

func TestKeepLeavesKeys(t *testing.T) {
	srvFlush(t)
	r := jsonRun(t, "-n", "10", "-keep", "-queue", "kept", "enqueue")
	if r.Cleanup != "kept (-keep)" {
		t.Errorf("cleanup %q", r.Cleanup)
	}
	if n, err := srv.Do("ZCARD", "emq:{kept}:pending"); err != nil || n != "10" {
		t.Errorf("kept queue holds %q jobs (%v), want 10", n, err)
	}
	// An explicit queue that is not empty is refused without -keep: the
	// cleanup would remove jobs the run did not make.
	code, _, errs := emqbench(t, "-n", "10", "-queue", "kept", "enqueue")
	if code != exitUsage || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "already holds jobs") {
		t.Errorf("non-empty -queue: exit %d, stderr %q", code, errs)
	}
}

func TestDurationBound(t *testing.T) {
	r := jsonRun(t, "-duration", "300ms", "ping")
	// Stopped by the duration, not after it by anything else: how much
	// later it stopped depends on the machine's load, so is not bounded.
	if r.Stopped != "duration" || r.Ops < 1 || r.ElapsedSec < 0.25 {
		t.Errorf("-duration 300ms: stopped %q after %d ops in %vs", r.Stopped, r.Ops, r.ElapsedSec)
	}
}

func TestBadFlagsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"-bogus", "ping"},
		{"-depth", "0", "ping"},
		{"-n", "x", "ping"},
		{"nosuch"},
		{},
		{"ping", "set"},
		{"-queue", "a{b}", "enqueue"},
		{"-url", "ftp://127.0.0.1", "ping"},
		{"-producers", "0", "e2e"},
		{"-fail", "1.5", "e2e"},
		{"-rate", "-1", "e2e"},
		{"-enqueue", "single", "e2e"},
		{"-failover", "-after-switch", "100", "e2e"}, // no sentinel URL
		{"-url", "redis+sentinel://127.0.0.1:1/m", "-after-switch", "100", "e2e"}, // no -failover
		{"-url", "redis+sentinel://127.0.0.1:1/m", "-failover", "-after-switch", "-1", "e2e"},
		{"-url", "redis+sentinel://127.0.0.1:1/m", "-failover", "-after-switch", "1", "-switch-within", "0s", "e2e"},
		{"-url", "redis+sentinel://127.0.0.1:1/m", "-failover", "-after-switch", "1", "-duration", "1s", "e2e"},
	} {
		code, out, errs := runArgs(args...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "emqbench: ") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and one line", args, code, out, errs)
		}
	}
	if code, out, errs := runArgs("-h"); code != exitOK || !strings.Contains(out, "usage: emqbench") || errs != "" {
		t.Errorf("-h: exit %d, stderr %q", code, errs)
	}
}

func TestUnreachableExit2(t *testing.T) {
	code, out, errs := runArgs("-url", "redis://:hunter2@127.0.0.1:1", "ping")
	if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 {
		t.Fatalf("unreachable: exit %d, stdout %q, stderr %q; want 2 and one line", code, out, errs)
	}
	if !strings.Contains(errs, "127.0.0.1:1") || strings.Contains(errs, "hunter2") || strings.Contains(errs, "goroutine") {
		t.Errorf("unreachable: stderr %q", errs)
	}
}

// TestLocalServerStopped runs without -url: emqbench starts its own node
// and must leave no process and no directory behind.
func TestLocalServerStopped(t *testing.T) {
	servertest.Need(t, srv)
	code, out, errs := runArgs("-n", "100", "ping")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	m := regexp.MustCompile(`started by emqbench on (\S+), pid (\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("report does not name the local node:\n%s", out)
	}
	pid, _ := strconv.Atoi(m[2])
	servertest.Eventually(t, "the server started by emqbench to exit with it", func() bool {
		return syscall.Kill(pid, 0) != nil
	})
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kill -0 %d: %v, want ESRCH", pid, err)
	}
}

func TestParseArgs(t *testing.T) {
	c, err := parseArgs([]string{"-n", "5", "enqueue", "-depth", "7", "-queue", "q1"}, nil)
	if err != nil || c.workload != "enqueue" || c.n != 5 || c.depth != 7 || c.queue != "q1" || !c.queueSet || !c.depthSet {
		t.Errorf("flags around the workload: %+v, %v", c, err)
	}
	c, err = parseArgs([]string{"-workload", "ping", "-duration", "2s"}, nil)
	if err != nil || c.workload != "ping" || c.n != unbounded || c.duration != 2*time.Second {
		t.Errorf("-workload and -duration: %+v, %v", c, err)
	}
	c, err = parseArgs([]string{"-duration", "2s", "-n", "9", "ping"}, nil)
	if err != nil || c.n != 9 {
		t.Errorf("-duration with -n: %+v, %v", c, err)
	}
	if _, err := parseArgs([]string{"-workload", "ping", "set"}, nil); err == nil {
		t.Errorf("disagreeing -workload and argument accepted")
	}
}

// assertNoKeys fails when keys matching pattern remain on the server.
func assertNoKeys(t *testing.T, pattern string) {
	t.Helper()
	keys, err := srv.Do("KEYS", pattern)
	if err != nil || keys != "" {
		t.Errorf("keys %q left behind: %q (%v)", pattern, keys, err)
	}
}

// srvFlush empties the test server.
func srvFlush(t *testing.T) {
	t.Helper()
	servertest.Need(t, srv)
	srv.Flush(t)
}

// An argument that looks like a URL (it has "://" or an '@') is never
// echoed: "emqbench redis://:pw@host", a URL where the workload goes, is
// a common mistake, and a flag value or queue name may be one too.
func TestSecretArgsNotEchoed(t *testing.T) {
	const pw = "Hunter2pw"
	long := strings.Repeat("q", 300) + "@" + pw + "{"
	for _, args := range [][]string{
		{"redis://:" + pw + "@h:6379"},
		{"valkeys://alice:" + pw + "@h/0?protocol=3"},
		{"redis://:" + pw + "#x@h"},
		{pw + "@h"},
		{"ping", "redis://:" + pw + "@h"},
		{"redis://:" + pw + "@h", "ping"},
		{"-workload", "ping", "redis://:" + pw + "@h"},
		{"-workload", "redis://:" + pw + "@h"},
		{"-workload=redis://:" + pw + "@h"},
		{"-n", "redis://:" + pw + "@h", "ping"},
		{"-n=redis://:" + pw + "@h", "ping"},
		{"-keep=redis://:" + pw + "@h", "ping"},
		{"-duration", "redis://:" + pw + "@h", "ping"},
		{"-bogus=redis://:" + pw + "@h", "ping"},
		{"-queue", "redis://:" + pw + "@h", "enqueue"},
		{"-queue", "a{" + pw + "}@h", "enqueue"},
		{"-queue", long, "enqueue"},
		{"-url", "redis://:" + pw + "#x@127.0.0.1:1", "ping"},
		{"-url", "redis://:" + pw + "/x@127.0.0.1:1", "ping"},
		{"-url", "redis://:" + pw + "@127.0.0.1:1", "nosuch"},
		{"-url", "ftp://:" + pw + "@127.0.0.1:1", "ping"},
	} {
		code, out, errs := runArgs(args...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "emqbench: ") {
			t.Errorf("%d args: exit %d, stdout %q, stderr %d lines; want 2 and one line", len(args), code, out, strings.Count(errs, "\n"))
		}
		if strings.Contains(errs, pw) || strings.Contains(errs, "@h") {
			t.Errorf("%d args: stderr echoes the argument: %s", len(args), errs)
		}
		// parseArgs redacts by itself, before run's stderr does.
		if _, err := parseArgs(args, nil); err != nil && (strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "@h")) {
			t.Errorf("%d args: parseArgs error echoes the argument: %v", len(args), err)
		}
	}
	// A workload given as a URL gets the hint; a plain unknown one is
	// still quoted.
	if _, _, errs := runArgs("redis://:" + pw + "@h"); !strings.Contains(errs, "unknown workload <not shown") || !strings.Contains(errs, "-url") {
		t.Errorf("URL as the workload: %s", errs)
	}
	if _, _, errs := runArgs("nosuch"); !strings.Contains(errs, `unknown workload "nosuch"`) || strings.Contains(errs, "-url") {
		t.Errorf("unknown workload: %s", errs)
	}
	if _, _, errs := runArgs("-n", "x", "ping"); !strings.Contains(errs, `"x"`) {
		t.Errorf("-n x: %s", errs)
	}
}

func TestRedactArgs(t *testing.T) {
	args := []string{"-url=redis://bob:s3cret-pw@h:1", "-n", "5", "ping", "rediss://:tiny@h", "x@y"}
	for _, c := range []struct{ in, want string }{
		{`bad "-url=redis://bob:s3cret-pw@h:1"`, "bad " + cliredact.NotShown},
		{"value redis://bob:s3cret-pw@h:1 here", "value " + cliredact.NotShown + " here"},
		{"the password s3cret-pw alone", "the password " + cliredact.NotShown + " alone"},
		{`got "x@y" and "rediss://:tiny@h"`, "got " + cliredact.NotShown + " and " + cliredact.NotShown},
		{"tiny passwords stay: tiny, and so does 5 or ping", "tiny passwords stay: tiny, and so does 5 or ping"},
	} {
		if got := cliredact.Redact(c.in, args); got != c.want {
			t.Errorf("redactArgs(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestCPUProfile: -cpuprofile writes a CPU profile of the run that the
// profile reader takes; a file that cannot be made is an exit 2 with the
// flag named, before the measured run.
func TestCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.prof")
	code, out, errs := emqbench(t, "-n", "3000", "-cpuprofile", path, "e2e")
	if code != exitOK || errs != "" {
		t.Fatalf("e2e: exit %d, stderr %q\n%s", code, errs, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A profile is gzip-compressed protobuf.
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("profile of %d bytes is not gzip", len(b))
	}
	code, _, errs = emqbench(t, "-n", "10", "-cpuprofile", filepath.Join(t.TempDir(), "no", "such", "dir", "p"), "ping")
	if code != exitUsage || !strings.Contains(errs, "-cpuprofile") {
		t.Fatalf("unwritable profile: exit %d, stderr %q", code, errs)
	}
}
