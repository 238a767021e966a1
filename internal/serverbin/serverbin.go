// Package serverbin finds a Valkey or Redis server binary and free
// loopback ports: what the test helper (internal/servertest) and emqbench
// both need to start a private server.
package serverbin

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Names and Dirs are where Find looks by default, in order of preference:
// valkey-server before redis-server, PATH first, then the usual system
// directories (Debian puts redis-server in /usr/bin, some images in
// /usr/sbin).
var (
	Names = []string{"valkey-server", "redis-server"}
	Dirs  = []string{"/usr/bin", "/usr/sbin", "/usr/local/bin"}
)

// ErrNotFound is returned by Find when no binary of the names exists.
var ErrNotFound = errors.New("no valkey-server or redis-server found")

// Env names the environment variable that forces the server binary:
// ECHOMQ_SERVER=/path/to/redis-server (or a name found on PATH) makes
// [Default] return it, whatever else is installed. The test script sets
// it to run the suite on Redis and on Valkey in turn.
const Env = "ECHOMQ_SERVER"

// Default returns the binary to start: $ECHOMQ_SERVER when set (an
// error when it names no executable file: a forced binary that is
// missing must not quietly become another), else Find(Names, Dirs).
func Default() (string, error) {
	v := os.Getenv(Env)
	if v == "" {
		return Find(Names, Dirs)
	}
	p, err := exec.LookPath(v)
	if err != nil {
		return "", fmt.Errorf("%s=%q: %w", Env, v, err)
	}
	return p, nil
}

// Find returns the path of the first of names found on PATH or in dirs.
func Find(names, dirs []string) (string, error) {
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
		for _, dir := range dirs {
			p := filepath.Join(dir, name)
			if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
				return p, nil
			}
		}
	}
	return "", ErrNotFound
}

// Kind returns "valkey" or "redis" for a binary's path.
func Kind(bin string) string {
	if strings.HasPrefix(filepath.Base(bin), "valkey") {
		return "valkey"
	}
	return "redis"
}

// Version runs "bin --version" and returns its v= field ("7.0.15").
func Version(bin string) (string, error) {
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v: %s", bin, err, strings.TrimSpace(string(out)))
	}
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("%s --version: no version in %q", bin, strings.TrimSpace(string(out)))
}

// FreePorts returns n distinct loopback ports that were free a moment
// ago. Another process may take one before it is bound: callers retry.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		defer l.Close() // held until all are chosen, so they differ
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
