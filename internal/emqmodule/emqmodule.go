// Package emqmodule builds the EchoMQ native module (the C sources in the
// repository's module/ directory) for tests, and starts servers that load
// it. Its tests hold the module to the scripts: every command's replies
// and writes against the script's (module_test.go), a differential random
// run over two servers (diff_test.go), and a fuzz of every command against
// a sanitizer build (fuzz_test.go).
package emqmodule

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/echomq/echomq-go/internal/servertest"
)

// ErrNoToolchain is returned by Build when make or a C compiler is missing.
var ErrNoToolchain = errors.New("emqmodule: make or cc not installed: the native module cannot be built")

// Dir returns the module's source directory, module/ at the repository's
// root.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "module")
}

var buildMu sync.Mutex

// Build runs "make -C module <target>" ("" is the default, emq.so; "asan"
// builds emq-asan.so) and returns the path of the shared object it made.
func Build(ctx context.Context, target string) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if _, err := exec.LookPath("make"); err != nil {
		return "", ErrNoToolchain
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		return "", ErrNoToolchain
	}
	args := []string{"-C", Dir()}
	so := "emq.so"
	if target != "" {
		args = append(args, target)
		so = "emq-" + target + ".so"
	}
	out, err := exec.CommandContext(ctx, "make", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("emqmodule: make %v: %w\n%s", args, err, out)
	}
	return filepath.Join(Dir(), so), nil
}

// Need builds the module (target as for Build) and returns its path; it
// skips t when no toolchain is installed, except under CI=true, where it
// fails.
func Need(t testing.TB, target string) string {
	t.Helper()
	path, err := Build(context.Background(), target)
	if errors.Is(err, ErrNoToolchain) && !servertest.InCI() {
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// Start starts a private server loading the module at path, with opts'
// other settings, and the module's load arguments args (none, or "fence",
// "key" or "client": module/README.md, "On a cluster").
func Start(path string, opts servertest.Options, args ...string) (*servertest.Server, error) {
	opts.Args = LoadArgs(opts.Args, path, args...)
	return servertest.Start(opts)
}

// LoadArgs returns server arguments: base, then --loadmodule path with
// the module's load arguments args. Give it as servertest.Options.Args to
// servertest.StartCluster to load the module on every node.
func LoadArgs(base []string, path string, args ...string) []string {
	return append(append(append([]string(nil), base...), "--loadmodule", path), args...)
}
