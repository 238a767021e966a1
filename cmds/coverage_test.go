package cmds

import (
	"sort"
	"strings"
	"testing"
)

// TestCoverage counts, for each server's COMMAND LIST, the commands that
// have a builder: at least 95% of the list, counting a container (CLIENT,
// ACL, …) as covered by its subcommands' builders, and at least 95% of
// the commands that are not containers. Every command without a builder
// is a container or is in leftOut with its reason.
func TestCoverage(t *testing.T) {
	for _, server := range []string{"redis-7.0.15", "valkey-8.0.1"} {
		list := serverLists[server]
		if len(list) == 0 {
			t.Fatalf("no COMMAND LIST for %s", server)
		}
		container := map[string]bool{}
		for _, n := range list {
			if i := strings.IndexByte(n, '|'); i > 0 {
				container[n[:i]] = true
			}
		}
		leaves, covered, containers := 0, 0, 0
		var out []string
		for _, n := range list {
			if container[n] {
				containers++
				continue
			}
			leaves++
			if in := Lookup(n); in != nil {
				covered++
				continue
			}
			why, ok := leftOut[n]
			if !ok {
				t.Errorf("%s: %s has no builder and no reason", server, n)
			}
			out = append(out, n+" ("+why+")")
		}
		sort.Strings(out)
		all := float64(covered+containers) / float64(len(list))
		leaf := float64(covered) / float64(leaves)
		t.Logf("%s: %d of %d COMMAND LIST entries (%.1f%%, the %d containers counted through their subcommands); %d of %d commands and subcommands (%.1f%%); left out: %s",
			server, covered+containers, len(list), 100*all, containers, covered, leaves, 100*leaf, strings.Join(out, "; "))
		if all < 0.95 || leaf < 0.95 {
			t.Errorf("%s: coverage %.1f%% of the list, %.1f%% of the commands: under 95%%", server, 100*all, 100*leaf)
		}
	}
}

// TestLookup: every generated command is found by its name.
func TestLookup(t *testing.T) {
	for _, in := range commands {
		if Lookup(in.Name) != in {
			t.Errorf("Lookup(%q)", in.Name)
		}
	}
	if Lookup("nosuch") != nil || Lookup("GET") != nil {
		t.Error("Lookup finds what it should not")
	}
	if in := Lookup("client|kill"); in == nil || strings.Join(in.Words, " ") != "CLIENT KILL" {
		t.Errorf("client|kill: %+v", in)
	}
}
