package cmds

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
)

// notRun are the commands the server tests do not send, and why.
var notRun = map[string]string{
	"shutdown": "stops the shared test server",
}

// conflicting are the commands whose sample with every option holds
// options the server refuses together (the docs list them all as
// options), and why; their sample of required arguments still runs.
var conflicting = map[string]string{
	"failover":       "TO and ABORT do not go together",
	"restore":        "IDLETIME and FREQ do not go together",
	"restore-asking": "IDLETIME and FREQ do not go together",
	"client|list":    "TYPE and ID do not go together on Redis 7.0",
}

// refusals are the error texts that mean the server did not accept a
// command's shape: what a builder must never produce.
var refusals = []string{"syntax error", "wrong number of arguments", "unknown subcommand", "unknown command"}

// serverCommands returns the arity of every command the running server
// has (COMMAND INFO), by name.
func serverCommands(t *testing.T) map[string]int { t.Helper(); return serverCommandsAt(t, srv.Addr) }

func serverCommandsAt(t *testing.T, addr string) map[string]int {
	t.Helper()
	r := dialRawAt(t, addr, 2)
	v, err := r.do(resp.AppendCommand(nil, "COMMAND", "INFO"))
	if err != nil {
		t.Fatal(err)
	}
	has := map[string]int{}
	var add func(v resp.Value)
	add = func(v resp.Value) {
		n, _ := v.Elems[1].AsInt()
		has[v.Elems[0].Text()] = int(n)
		if len(v.Elems) > 9 {
			for _, s := range v.Elems[9].Elems {
				add(s)
			}
		}
	}
	for _, e := range v.Elems {
		add(e)
	}
	return has
}

// tooFew reports whether a command has fewer arguments than the server's
// arity asks: Redis 7.0 wants one argument more than its docs and
// Valkey's require after COMMAND GETKEYS's command (arity -4, Valkey -3).
func tooFew(arity int, cmd Command) bool {
	n := len(cmd.Info().Words) + cmd.Args()
	return arity < 0 && n < -arity
}

// TestAcceptedByServer sends every generated command, built with sample
// arguments (required ones only, and every option), to the real server
// under RESP2 and RESP3: none may be refused for its shape. Errors about
// the sample values (WRONGTYPE, no such key, cluster support disabled)
// are fine: the server parsed the command.
func TestAcceptedByServer(t *testing.T) {
	servertest.Need(t, srv)
	accepted(t, srv, func(string) bool { return true })
}

// clusterOnly are the commands that a server outside cluster mode refuses
// before it parses them ("cluster support disabled").
func clusterOnly(name string) bool {
	return strings.HasPrefix(name, "cluster|") || name == "asking" || name == "readonly" || name == "readwrite"
}

// TestAcceptedByClusterNode sends the cluster commands to a server of
// their own in cluster mode, where they are parsed.
func TestAcceptedByClusterNode(t *testing.T) {
	servertest.Need(t, srv)
	node, err := servertest.Start(servertest.Options{Cluster: true})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Stop()
	accepted(t, node, clusterOnly)
}

// accepted sends the samples that pick chooses to s.
func accepted(t *testing.T, s *servertest.Server, pick func(string) bool) {
	arities := serverCommandsAt(t, s.Addr)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			s.Flush(t)
			var b Builder
			sent := 0
			for _, sm := range samples {
				if !pick(sm.name) {
					continue
				}
				if why, ok := notRun[sm.name]; ok {
					t.Logf("%s: not run: %s", sm.name, why)
					continue
				}
				arity, ok := arities[sm.name]
				if !ok {
					t.Logf("%s: not run: %s %s has no such command", sm.name, s.Name, s.Version)
					continue
				}
				for i, build := range builds(sm) {
					if i == 1 && conflicting[sm.name] != "" {
						t.Logf("%s: every option: not run: %s", sm.name, conflicting[sm.name])
						continue
					}
					cmd := build(&b)
					if err := cmd.Err(); err != nil {
						if i >= 2 && errors.Is(err, ErrMissing) && !has() {
							// The choice this sample is for is not in this
							// server's docs, and was left out.
							t.Logf("%s sample %d: not run: %v", sm.name, i, err)
							continue
						}
						t.Errorf("%s sample %d: %v", sm.name, i, err)
						continue
					}
					text := cmd.String()
					if tooFew(arity, cmd) {
						t.Logf("%s: not run: %s %s wants at least %d arguments", text, s.Name, s.Version, -arity)
						continue
					}
					r := dialRawAt(t, s.Addr, proto)
					v, err := r.do(cmd.Cmd().Bytes())
					if err != nil {
						t.Errorf("%s: %v", text, err)
						continue
					}
					sent++
					if v.IsError() {
						msg := strings.ToLower(v.Text())
						for _, bad := range refusals {
							if strings.Contains(msg, bad) {
								t.Errorf("%s: refused: %s", text, v.Text())
							}
						}
						t.Logf("%s: %s", text, v.Text())
					}
					if sm.name == "replicaof" || sm.name == "slaveof" {
						if _, err := s.Do("REPLICAOF", "NO", "ONE"); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			t.Logf("%d commands sent", sent)
		})
	}
}

// TestKeysAsServerFinds compares the keys every generated command names
// (from its builder) with what the server's COMMAND GETKEYS finds in the
// same command.
func TestKeysAsServerFinds(t *testing.T) {
	servertest.Need(t, srv)
	has := serverCommands(t)
	r := dialRaw(t, 2)
	var b Builder
	compared := 0
	for _, s := range samples {
		if _, ok := has[s.name]; !ok {
			continue
		}
		for i, build := range builds(s) {
			cmd := build(&b)
			if cmd.Err() != nil {
				continue
			}
			var ours []string
			for k := 0; k < cmd.Keys(); k++ {
				ours = append(ours, string(cmd.Key(k)))
				a := args(t, cmd.Cmd())
				if p := cmd.KeyPos(k); p >= len(a) || a[p] != ours[k] {
					t.Errorf("%s: key %d at %d is not %q", cmd, k, p, ours[k])
				}
			}
			get := append([]string{"COMMAND", "GETKEYS"}, args(t, cmd.Cmd())...)
			v, err := r.do(resp.AppendCommand(nil, get...))
			if err != nil {
				t.Fatal(err)
			}
			if v.IsError() {
				msg := v.Text()
				if strings.Contains(msg, "no key arguments") || strings.Contains(msg, "key arguments") && len(ours) == 0 {
					if len(ours) != 0 {
						t.Errorf("%s (sample %d): ours %q, the server finds none", cmd, i, ours)
					}
					continue
				}
				t.Logf("%s (sample %d): GETKEYS: %s (ours %q)", cmd, i, msg, ours)
				continue
			}
			var theirs []string
			for _, e := range v.Elems {
				theirs = append(theirs, e.Text())
			}
			compared++
			if len(ours) == 0 && slices.Equal(theirs, []string{""}) && s.name == "migrate" {
				// MIGRATE's "" stands for "the keys after KEYS"; without
				// KEYS the server's GETKEYS reports the placeholder.
				t.Logf("%s: the server finds the placeholder \"\"", cmd)
				continue
			}
			if !slices.Equal(ours, theirs) {
				t.Errorf("%s (sample %d): keys %q, the server finds %q", cmd, i, ours, theirs)
			}
		}
	}
	t.Logf("%d commands compared", compared)
}

// running is the name of the running server's table, "valkey-8.0.1".
func running() string { return srv.Name + "-" + srv.Version }

// has reports whether the running server is one of the tables named; a
// server of another version than the tables' is taken to have every
// option.
func has(servers ...string) bool {
	if _, known := serverLists[running()]; !known {
		return true
	}
	return slices.Contains(servers, running())
}

// builds returns a sample's builds: required arguments only, every
// option, each other choice.
func builds(s sample) []func(*Builder) Command {
	out := []func(*Builder) Command{s.min, func(b *Builder) Command { return s.max(b, has) }}
	for _, m := range s.more {
		out = append(out, func(b *Builder) Command { return m(b, has) })
	}
	return out
}

// TestSlotAsServer compares the slot of every sample command that names
// keys with CLUSTER KEYSLOT of each of its keys, on a cluster-mode node.
func TestSlotAsServer(t *testing.T) {
	servertest.Need(t, srv)
	node, err := servertest.Start(servertest.Options{Cluster: true})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Stop()
	r := dialRawAt(t, node.Addr, 2)
	var b Builder
	compared := 0
	// The samples' keys share a hash tag; these do not.
	builds := []func(*Builder) Command{
		func(b *Builder) Command { return b.Set("foo", "v").Build() },
		func(b *Builder) Command { return b.Mget("a", "b", "c").Build() },
		func(b *Builder) Command { return b.Mget("{u}a", "{u}b").Build() },
		func(b *Builder) Command { return b.Lmove("x", "y", Left, Right).Build() },
		func(b *Builder) Command { return b.Xread([]string{"s1", "s2"}, "0", "0").Count(1).Build() },
		func(b *Builder) Command { return b.Spublish("news", "m").Build() },
		func(b *Builder) Command { return b.Sort("src").Store("dst").Build() },
		func(b *Builder) Command { return b.Eval("return 1", "k1", "k1").Build() },
	}
	for _, s := range samples {
		builds = append(builds, func(b *Builder) Command { return s.max(b, func(...string) bool { return true }) })
	}
	for _, build := range builds {
		cmd := build(&b)
		if cmd.Err() != nil {
			continue
		}
		slot, has, cross := cmd.Slot()
		if has != (cmd.Keys()+cmd.ShardChannels() > 0) {
			t.Errorf("%s: has %v with %d keys", cmd, has, cmd.Keys())
		}
		var names [][]byte
		for i := 0; i < cmd.Keys(); i++ {
			names = append(names, cmd.Key(i))
		}
		for i := 0; i < cmd.ShardChannels(); i++ {
			names = append(names, cmd.ShardChannel(i))
		}
		differ := false
		for i, k := range names {
			v, err := r.do(resp.AppendCommand(nil, "CLUSTER", "KEYSLOT", string(k)))
			if err != nil || v.IsError() {
				t.Fatalf("CLUSTER KEYSLOT %q: %v %v", k, v, err)
			}
			compared++
			if i == 0 && uint16(v.Int) != slot {
				t.Errorf("%s: slot %d, the server says %d for %q", cmd, slot, v.Int, k)
			}
			differ = differ || uint16(v.Int) != slot
		}
		if differ != cross {
			t.Errorf("%s: cross %v, the server's slots differ: %v", cmd, cross, differ)
		}
	}
	t.Logf("%d keys compared", compared)
}
