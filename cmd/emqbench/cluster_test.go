package main

import (
	"strings"
	"testing"

	"github.com/echomq/echomq-go/internal/servertest"
)

// emqbench pointed at one node of a 3-primary cluster finds it is a
// cluster by itself, routes by slot, and the gate passes: check 2 shows
// the refusal on the live fence key (a cluster has no scratch database),
// checks 3 and 7 count the loads per node. A workload runs too, and the
// cleanup leaves no key on any primary.
func TestGateOnCluster(t *testing.T) {
	c, err := servertest.StartCluster(3, 0, servertest.Options{})
	if err != nil {
		if servertest.InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	defer c.Stop()
	url := "redis://" + c.Primaries[1].Addr
	code, out, errs := runArgs("-url", url, "gate")
	t.Log("\n" + out)
	if code != exitOK || errs != "" {
		t.Fatalf("gate on a cluster: exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"(cluster: commands routed by slot)", "in the live fence", "cluster client per node 1,", "PASS 8/8\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("gate output lacks %q", want)
		}
	}
	code, out, errs = runArgs("-url", url, "-n", "20000", "-depth", "100", "-goroutines", "4", "enqueue")
	if code != exitOK || errs != "" {
		t.Fatalf("enqueue on a cluster: exit %d, stderr %q\n%s", code, errs, out)
	}
	for _, p := range c.Primaries {
		keys, err := p.Do("KEYS", "*")
		if err != nil {
			t.Fatal(err)
		}
		if rest := strings.TrimSpace(strings.ReplaceAll(keys, "{emq}:version", "")); rest != "" {
			t.Errorf("%s keeps keys after the runs (only the fence may stay): %q", p.Addr, rest)
		}
	}
}

// -shards spreads the queue over member queues: every job enqueued on
// some member completes once, and the cleanup removes every member.
func TestE2ESharded(t *testing.T) {
	r := jsonRun(t, "-n", "6000", "-shards", "3", "-goroutines", "12", "e2e")
	sane(t, r, 6000)
	if x := r.E2E; x == nil || x.Lost != 0 || x.Duplicates != 0 || x.Completed != 6000 {
		t.Fatalf("sharded e2e: %+v", r.E2E)
	}
	if !strings.Contains(r.Method, "sharded over 3 member queues") {
		t.Errorf("method %q does not say it is sharded", r.Method)
	}
	assertNoKeys(t, "emq:{emqbench-*")
}
