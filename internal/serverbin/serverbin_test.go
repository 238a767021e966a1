package serverbin

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestFindPrefersEarlierName(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b-server", "a-server"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\necho v=1.2.3\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p, err := Find([]string{"no-such-server", "a-server", "b-server"}, []string{dir})
	if err != nil || filepath.Base(p) != "a-server" {
		t.Fatalf("Find = %q, %v", p, err)
	}
	if v, err := Version(p); err != nil || v != "1.2.3" {
		t.Fatalf("Version = %q, %v", v, err)
	}
	if _, err := Find([]string{"no-such-server"}, []string{dir}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Find of nothing = %v", err)
	}
}

// ECHOMQ_SERVER forces the binary, over PATH's order; one that is not
// an executable is an error, never another binary.
func TestDefaultEnv(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"valkey-server", "redis-server", "plain-file"} {
		mode := os.FileMode(0o755)
		if n == "plain-file" {
			mode = 0o644
		}
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\necho v=1.2.3\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
	t.Setenv(Env, "")
	if p, err := Default(); err != nil || p != filepath.Join(dir, "valkey-server") {
		t.Fatalf("Default without %s = %q, %v: want valkey-server first", Env, p, err)
	}
	t.Setenv(Env, filepath.Join(dir, "redis-server"))
	if p, err := Default(); err != nil || p != filepath.Join(dir, "redis-server") {
		t.Fatalf("Default with %s=redis-server = %q, %v", Env, p, err)
	}
	t.Setenv(Env, "redis-server") // a name, looked up on PATH
	if p, err := Default(); err != nil || p != filepath.Join(dir, "redis-server") {
		t.Fatalf("Default with %s=a name = %q, %v", Env, p, err)
	}
	for _, bad := range []string{filepath.Join(dir, "no-such-server"), filepath.Join(dir, "plain-file"), dir} {
		t.Setenv(Env, bad)
		if p, err := Default(); err == nil {
			t.Fatalf("Default with %s=%s = %q, want an error", Env, bad, p)
		}
	}
}

func TestKind(t *testing.T) {
	if Kind("/usr/bin/valkey-server") != "valkey" || Kind("/usr/bin/redis-server") != "redis" {
		t.Fatal("Kind")
	}
}

func TestFreePortsDistinct(t *testing.T) {
	ports, err := FreePorts(3)
	if err != nil || len(ports) != 3 || ports[0] == ports[1] || ports[1] == ports[2] || ports[0] == ports[2] {
		t.Fatalf("FreePorts = %v, %v", ports, err)
	}
}
