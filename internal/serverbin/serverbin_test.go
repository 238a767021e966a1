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
