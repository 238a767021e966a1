package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/echomq/echomq-go/internal/servertest"
)

// TestCacheWorkload: readers and writers through one cache, under RESP3
// and RESP2, calm and with the cache's connection killed every 5 ms:
// no stale read, a hit ratio, and the keys removed.
func TestCacheWorkload(t *testing.T) {
	servertest.Need(t, srv)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"RESP3", []string{"-n", "20000", "-keys", "500", "-writers", "2", "cache"}},
		{"RESP2", []string{"-n", "20000", "-keys", "500", "cache"}},
		{"RESP3 chaos", []string{"-n", "30000", "-keys", "500", "-chaos", "5ms", "cache"}},
		{"RESP2 chaos", []string{"-n", "30000", "-keys", "500", "-chaos", "5ms", "cache"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := "redis://" + srv.Addr
			if strings.HasPrefix(tc.name, "RESP2") {
				url += "?protocol=2"
			}
			code, out, errs := runArgs(append([]string{"-url", url, "-json"}, tc.args...)...)
			if code != exitOK || errs != "" {
				t.Fatalf("exit %d, stderr %q\n%s", code, errs, out)
			}
			var r report
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			sane(t, r, r.Ops)
			if r.Ops < 20000 {
				t.Errorf("%d reads", r.Ops)
			}
			x := r.Cache
			switch {
			case x == nil:
				t.Fatalf("no cache figures:\n%s", out)
			case x.Stale != 0:
				t.Fatalf("%d stale reads", x.Stale)
			case x.Hits+x.Misses < uint64(r.Ops) || x.HitRatio <= 0 || x.HitRatio >= 1:
				t.Errorf("hit ratio %v of %d reads", x.HitRatio, x.Hits+x.Misses)
			case x.Writes == 0:
				t.Errorf("no writes")
			case strings.Contains(tc.name, "chaos") && (x.Kills == 0 || x.Reconnects == 0 || x.Flushes == 0):
				t.Errorf("chaos: %+v", *x)
			}
			if r.Protocol != map[bool]int{true: 2, false: 3}[strings.HasPrefix(tc.name, "RESP2")] {
				t.Errorf("protocol %d", r.Protocol)
			}
			assertNoKeys(t, "emqbench:*")
		})
	}
	code, out, errs := emqbench(t, "-n", "5000", "-keys", "100", "cache")
	if code != exitOK || errs != "" || !strings.Contains(out, "stale 0;") || !strings.Contains(out, "hit ratio 0.") {
		t.Errorf("text report: exit %d, stderr %q\n%s", code, errs, out)
	}
}

// The cache workload on a cluster reads through a cache.ClusterCache.
func TestCacheWorkloadOnCluster(t *testing.T) {
	c, err := servertest.StartCluster(3, 0, servertest.Options{})
	if err != nil {
		if servertest.InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	defer c.Stop()
	code, out, errs := runArgs("-url", "redis://"+c.Primaries[0].Addr, "-json", "-n", "20000", "-keys", "500", "cache")
	if code != exitOK || errs != "" {
		t.Fatalf("exit %d, stderr %q\n%s", code, errs, out)
	}
	var r report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if x := r.Cache; x == nil || x.Stale != 0 || x.HitRatio <= 0 || x.Writes == 0 || !strings.Contains(r.Method, "ClusterCache") {
		t.Fatalf("%+v %+v", r, r.Cache)
	}
	for _, p := range c.Primaries {
		keys, err := p.Do("KEYS", "emqbench:*")
		if err != nil || keys != "" {
			t.Errorf("%s keeps keys: %q %v", p.Addr, keys, err)
		}
	}
}
