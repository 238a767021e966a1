package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/echomq/echomq-go/internal/emqmodule"
	"github.com/echomq/echomq-go/internal/servertest"
)

// TestGateNative runs the gate on the native executor against a private
// server emqbench starts itself with -module: 8/8, with the records a
// native executor gives (no script loaded, none reloaded, EMQ.ENQUEUE's
// throughput).
func TestGateNative(t *testing.T) {
	servertest.Need(t, srv) // a server binary is installed
	so := needModule(t)
	code, out, errs := runArgs("-module", so, "-executor", "native", "gate")
	t.Log("\n" + out)
	if code != exitOK || errs != "" {
		t.Fatalf("native gate: exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{
		"native executor\n", "PASS 8/8\n",
		"script_loads = 0 (native executor; server cmdstat_script|load 0, cmdstat_evalsha 0",
		"enqueues by EMQ.ENQUEUE", "reloads 0 (native executor",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("native gate output lacks %q", want)
		}
	}
	// auto picks the module's commands on a server that has them.
	code, out, _ = runArgs("-module", so, "-json", "gate")
	var rep gateReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("gate -json: %v in %q", err, out)
	}
	if code != exitOK || rep.Passed != 8 || rep.Executor != "native" {
		t.Errorf("auto gate on a module server: exit %d, %d/8, executor %q", code, rep.Passed, rep.Executor)
	}
}

// TestGateNativeWithoutModule: -executor native against a server without
// the module is a usage error naming the fix, not eight failed checks.
func TestGateNativeWithoutModule(t *testing.T) {
	code, _, errs := emqbench(t, "-executor", "native", "gate")
	if code != exitUsage || !strings.Contains(errs, "load the module") {
		t.Errorf("exit %d, stderr %q; want exit %d naming the module", code, errs, exitUsage)
	}
	code, out, _ := emqbench(t, "-json", "gate")
	var rep gateReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Executor != "script" {
		t.Errorf("auto gate without the module: executor %q (%v), want script", rep.Executor, err)
	}
	if code != 0 {
		t.Errorf("auto gate without the module: exit %d, want 0 (the scripts pass it)", code)
	}
}

// TestModuleFlag: -module is checked before anything starts.
func TestModuleFlag(t *testing.T) {
	for _, args := range [][]string{
		{"-module", "/nonexistent/emq.so", "gate"},
		{"-module", "/", "gate"},
		{"-url", "redis://127.0.0.1:1", "-module", "emq.so", "gate"},
	} {
		code, _, errs := runArgs(args...)
		if code != exitUsage || !strings.Contains(errs, "-module") {
			t.Errorf("%q: exit %d, stderr %q; want a usage error about -module", args, code, errs)
		}
	}
}

// needModule builds the native module (skipping without a C
// toolchain, failing under CI=true) and returns its path.
func needModule(t *testing.T) string {
	t.Helper()
	return emqmodule.Need(t, "")
}
