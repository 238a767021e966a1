package cmds

import (
	"slices"
	"strings"
	"testing"

	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
)

// rawArgs returns the arguments of an encoded command as findKeys takes
// them.
func rawArgs(t testing.TB, cmd resp.Cmd) [][]byte {
	t.Helper()
	var out [][]byte
	for _, a := range args(t, cmd) {
		out = append(out, []byte(a))
	}
	return out
}

// builderKeyPos returns the builder's own key positions of cmd.
func builderKeyPos(cmd Command) []int32 {
	var out []int32
	for i := 0; i < cmd.Keys(); i++ {
		out = append(out, int32(cmd.KeyPos(i)))
	}
	return out
}

// TestFindKeysAsBuilder: for every build of every sample, the key specs
// find in the raw arguments the keys the builder put there, no more and
// no fewer, and the shard channels with them for routing.
func TestFindKeysAsBuilder(t *testing.T) {
	all := func(...string) bool { return true }
	var b Builder
	compared, withKeys := 0, map[string]bool{}
	for _, s := range samples {
		builds := []func(*Builder) Command{s.min, func(b *Builder) Command { return s.max(b, all) }}
		for _, m := range s.more {
			builds = append(builds, func(b *Builder) Command { return m(b, all) })
		}
		for i, build := range builds {
			cmd := build(&b)
			if cmd.Err() != nil {
				continue
			}
			a := rawArgs(t, cmd.Cmd())
			want := builderKeyPos(cmd)
			got := cmd.Info().findKeys(a, nil)
			if s.name == "migrate" && (len(want) == 0 && slices.Equal(got, []int32{3}) && len(a[3]) == 0 ||
				len(a[3]) > 0 && slices.ContainsFunc(a, func(x []byte) bool { return string(x) == "KEYS" })) {
				// MIGRATE's "" key stands for "the keys after KEYS": the
				// builder names no key, the servers' GETKEYS reports the
				// "" (TestFindKeysAsServer). A key and KEYS (the sample
				// with every option) is the servers' syntax error: no keys.
				if len(a[3]) > 0 && len(got) != 0 {
					t.Errorf("%s: findKeys %v, want none", cmd, got)
				}
				continue
			}
			compared++
			if len(want) > 0 {
				withKeys[s.name] = true
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s (sample %d): findKeys %v, the builder's keys are at %v", cmd, i, got, want)
			}
			// Routing: the keys, and the shard channels.
			var chans []int32
			for c := 0; c < cmd.ShardChannels(); c++ {
				ch := cmd.ShardChannel(c)
				for p := 1; p < len(a); p++ {
					if string(a[p]) == string(ch) && !slices.Contains(chans, int32(p)) {
						chans = append(chans, int32(p))
						break
					}
				}
			}
			route := cmd.Info().AppendRouteKeys(a, nil)
			if wantRoute := append(slices.Clone(want), chans...); !sameSet(route, wantRoute) {
				t.Errorf("%s (sample %d): AppendRouteKeys %v, want %v", cmd, i, route, wantRoute)
			}
		}
	}
	// Every generated command with key specs was compared with keys.
	for _, in := range commands {
		if len(in.keys) > 0 && !in.Kind.Has(NoKeys) && !withKeys[in.Name] && in.Name != "migrate" && !onlyChannels(in) {
			t.Errorf("%s: has key specs but no sample with keys", in.Name)
		}
	}
	t.Logf("%d builds compared, %d commands with keys", compared, len(withKeys))
}

func onlyChannels(in *Info) bool {
	for _, s := range in.keys {
		if !s.notKey {
			return false
		}
	}
	return true
}

func sameSet(a, b []int32) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// getKeys asks the server where the keys of a command are: their
// positions, by matching COMMAND GETKEYS's names in order (nil when the
// server finds none, ok false when it refuses the command).
func getKeys(t *testing.T, r *raw, a [][]byte) (pos []int32, ok bool) {
	t.Helper()
	get := [][]byte{[]byte("COMMAND"), []byte("GETKEYS")}
	get = append(get, a...)
	strs := make([]string, len(get))
	for i, x := range get {
		strs[i] = string(x)
	}
	v, err := r.do(resp.AppendCommand(nil, strs...))
	if err != nil {
		t.Fatal(err)
	}
	if v.IsError() {
		if strings.Contains(v.Text(), "key arguments") {
			return nil, true // "no key arguments" / "Invalid arguments specified"
		}
		if !strings.Contains(v.Text(), "wrong number of arguments") {
			t.Logf("%q: GETKEYS: %s", a, v.Text())
		}
		return nil, false
	}
	// The server names the keys in order; find each at or after the
	// last one found, or anywhere (SORT's store may come before).
	from := 1
	for _, e := range v.Elems {
		found := int32(-1)
		for p := from; p < len(a); p++ {
			if string(a[p]) == e.Text() {
				found = int32(p)
				break
			}
		}
		if found < 0 {
			t.Fatalf("%q: GETKEYS names %q, not an argument", a, e.Text())
		}
		pos = append(pos, found)
		from = int(found) + 1
	}
	return pos, true
}

// TestFindKeysAsServer: for every build of every sample the running
// server has, findKeys on the raw arguments finds what the server's
// COMMAND GETKEYS finds (the keys' names are the samples' own, distinct
// within a command, so names give positions).
func TestFindKeysAsServer(t *testing.T) {
	servertest.Need(t, srv)
	has := serverCommands(t)
	r := dialRaw(t, 2)
	var b Builder
	compared, keyed := 0, 0
	for _, s := range samples {
		if _, ok := has[s.name]; !ok {
			continue
		}
		for i, build := range builds(s) {
			cmd := build(&b)
			if cmd.Err() != nil {
				continue
			}
			a := rawArgs(t, cmd.Cmd())
			theirs, ok := getKeys(t, r, a)
			if !ok {
				continue
			}
			ours := cmd.Info().findKeys(a, nil)
			compared++
			if len(ours) > 0 {
				keyed++
			}
			if !slices.Equal(ours, theirs) {
				t.Errorf("%s (sample %d): findKeys %v, the server finds %v", cmd, i, ours, theirs)
			}
		}
	}
	if compared < 300 {
		t.Errorf("only %d commands compared", compared)
	}
	t.Logf("%d builds compared with GETKEYS, %d with keys", compared, keyed)
}

// rawCases are commands given as raw arguments, in shapes the builders do
// not write (keywords in lower case, options where the syntax allows,
// patterns spelled like keywords): findKeys must find what the servers
// find.
var rawCases = []string{
	"GET k",
	"mset a 1 b 2 c 3",
	"EVAL s 0",
	"EVAL s 2 a b x y",
	"evalsha 0123 3 a b c",
	"FCALL f 1 a x",
	"XREAD COUNT 1 STREAMS s1 s2 0 0",
	"xread count 1 block 5 streams s1 0",
	"XREADGROUP GROUP g c COUNT 1 STREAMS s1 s2 s3 > > >",
	"ZUNIONSTORE d 2 a b WEIGHTS 1 2",
	"ZINTER 3 a b c WITHSCORES",
	"LMPOP 2 a b LEFT",
	"BLMPOP 0 2 a b RIGHT COUNT 2",
	"SINTERCARD 2 a b LIMIT 1",
	"GEORADIUS g 0 0 1 km STORE d",
	"GEORADIUS g 0 0 1 km STOREDIST d2",
	"georadius g 0 0 1 km store d storedist d2",
	"GEORADIUSBYMEMBER g m 1 km STORE d",
	"SORT src",
	"SORT src BY store STORE dst",
	"SORT src LIMIT 0 1 GET store STORE d1 STORE d2",
	"sort src store dst alpha",
	"SORT_RO src BY w GET g",
	"MIGRATE h 1 k 0 10",
	"MIGRATE h 1 \"\" 0 10 COPY KEYS a b c",
	"MIGRATE h 1 \"\" 0 10 AUTH keys KEYS a b",
	"MIGRATE h 1 \"\" 0 10 AUTH2 u keys KEYS a",
	"LCS a b",
	"BLPOP a b c 0",
	"BRPOPLPUSH a b 0",
	"OBJECT ENCODING k",
	"MEMORY USAGE k SAMPLES 1",
	"XINFO STREAM s FULL",
	"BITOP AND d a b c",
	"SPUBLISH ch m",
	"PFCOUNT a b c",
	"RENAME a b",
	"WATCH a b",
}

// splitRaw splits a raw case at spaces; "" is an empty argument.
func splitRaw(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		if f == `""` {
			f = ""
		}
		out = append(out, []byte(f))
	}
	return out
}

// lookupRaw finds a raw command's Info as the cluster router does: by
// its lower-case name, or its subcommand's.
func lookupRaw(a [][]byte) *Info {
	name := strings.ToLower(string(a[0]))
	if in := Lookup(name); in != nil {
		return in
	}
	if len(a) > 1 {
		return Lookup(name + "|" + strings.ToLower(string(a[1])))
	}
	return nil
}

func TestFindKeysRawAsServer(t *testing.T) {
	servertest.Need(t, srv)
	r := dialRaw(t, 2)
	for _, c := range rawCases {
		a := splitRaw(c)
		in := lookupRaw(a)
		if in == nil {
			t.Fatalf("%s: no Info", c)
		}
		theirs, ok := getKeys(t, r, a)
		if !ok {
			t.Errorf("%s: the server refuses it", c)
			continue
		}
		if ours := in.findKeys(a, nil); !slices.Equal(ours, theirs) {
			t.Errorf("%s: findKeys %v, the server finds %v", c, ours, theirs)
		}
	}
}

// TestFindKeysShapes pins findKeys on key specs no generated command has
// in a form the servers would accept here (a keyword searched backwards
// without a finder of its own, a step inside a keynum), and on arguments
// cut short, which find nothing rather than read past the arguments.
func TestFindKeysShapes(t *testing.T) {
	back := &Info{keys: []keySpec{{keyword: "KEYS", from: -2, lastKey: -1}}}
	pairs := &Info{keys: []keySpec{{index: 1, keynum: true, firstKey: 1, step: 2}}}
	for _, c := range []struct {
		in   *Info
		args string
		want []int32
	}{
		{back, "X a KEYS b c", []int32{3, 4}},      // from the 2nd last: KEYS at 2
		{back, "X KEYS a KEYS b c", []int32{4, 5}}, // backwards: the last KEYS
		{back, "X a b c", nil},                     // no keyword
		{back, "X a KEYS", nil},                    // the keyword last: not searched
		{pairs, "X 2 a 1 b 2", []int32{2}},         // as the servers: the count spans arguments, not steps
		{pairs, "X 3 a 1", nil},                    // fewer than counted: none
		{pairs, "X x a", nil},                      // not a count
		{pairs, "X -1 a", nil},                     // negative
		{&infoEval, "EVAL", nil},                   // cut short
		{&infoXread, "XREAD STREAMS", nil},
		// As the servers find them in commands that then fail their
		// arity or syntax check (the servers' GETKEYS refuses these).
		{&infoXread, "XREAD STREAMS a b c", []int32{2}},
		{&infoMset, "MSET a", []int32{1}},
		{&infoMset, "MSET a 1 b", []int32{1, 3}},
		{&infoSpublish, "SPUBLISH ch m", nil},
	} {
		if got := c.in.findKeys(splitRaw(c.args), nil); !slices.Equal(got, c.want) {
			t.Errorf("%s: findKeys %v, want %v", c.args, got, c.want)
		}
	}
	if got := infoSpublish.AppendRouteKeys(splitRaw("SPUBLISH ch m"), nil); !slices.Equal(got, []int32{1}) {
		t.Errorf("SPUBLISH: AppendRouteKeys %v, want [1]", got)
	}
	// Appends, keeping what dst had.
	if got := infoGet.findKeys(splitRaw("GET k"), []int32{9}); !slices.Equal(got, []int32{9, 1}) {
		t.Errorf("findKeys does not append: %v", got)
	}
}

// TestPolicies: the request and response policies the cluster router
// reads, from the servers' tips and cmdgen's everyShard list.
func TestPolicies(t *testing.T) {
	for name, want := range map[string][2]uint8{
		"get":              {uint8(ByKeys), uint8(AggFirst)},
		"dbsize":           {uint8(AllShards), uint8(AggSum)},
		"keys":             {uint8(AllShards), uint8(AggConcat)},
		"script|exists":    {uint8(AllShards), uint8(AggLogicalAnd)},
		"script|load":      {uint8(AllShards), uint8(AggFirst)},
		"script|flush":     {uint8(AllShards), uint8(AggFirst)},
		"flushall":         {uint8(AllShards), uint8(AggFirst)},
		"config|resetstat": {uint8(AllShards), uint8(AggFirst)}, // untagged on Redis 7.0: everyShard
		"config|set":       {uint8(AllShards), uint8(AggFirst)},
		"latency|reset":    {uint8(AllShards), uint8(AggSum)},   // Valkey's agg_sum over Redis's all_succeeded
		"acl|setuser":      {uint8(AllShards), uint8(AggFirst)}, // Valkey's all_nodes
		"msetnx":           {uint8(ByKeys), uint8(AggFirst)},    // Redis's multi_shard: by its keys
		"randomkey":        {uint8(AllShards), uint8(AggFirst)}, // Valkey's response_policy:special
		"ping":             {uint8(AllShards), uint8(AggFirst)},
	} {
		in := Lookup(name)
		if in == nil {
			t.Fatalf("%s: no Info", name)
		}
		if got := [2]uint8{uint8(in.Policy()), uint8(in.Aggregate())}; got != want {
			t.Errorf("%s: policy %v, want %v", name, got, want)
		}
	}
}

// TestInspectShardChannels: a raw command's Fact has its shard channels
// after its keys, as a builder's has (Fact.Keys), so that a cluster
// routes a raw SPUBLISH by its channel.
func TestInspectShardChannels(t *testing.T) {
	for _, c := range []struct {
		args string
		want []string
	}{
		{"SPUBLISH ch m", []string{"ch"}},
		{"ssubscribe a b", []string{"a", "b"}},
		{"PUBLISH ch m", nil},
		{"GET k", []string{"k"}},
	} {
		args := splitRaw(c.args)
		f, _ := Inspect(args, nil)
		enc := resp.AppendCommand(nil, strings.Fields(c.args)...)
		var got []string
		for i := range f.Keys {
			got = append(got, string(f.Key(enc, i)))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: Fact keys %q, want %q", c.args, got, c.want)
		}
	}
	var b Builder
	cmd := b.Spublish("ch", "m").Build()
	if f := cmd.Fact(); len(f.Keys) != 1 || string(f.Key(cmd.Cmd().Bytes(), 0)) != "ch" {
		t.Errorf("builder's SPUBLISH fact: %+v", f)
	}
}

// OneKey: one key, the argument after the name's words, and no other;
// Nondeterministic follows the nondeterministic_output tip (not the
// order-only one).
func TestOneKeyAndNondeterministic(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int
		want bool
	}{
		{"get", 2, true}, {"hget", 3, true}, {"hmget", 4, true}, {"exists", 2, true}, {"exists", 3, false},
		{"mget", 2, true}, {"mget", 3, false}, {"xinfo|stream", 3, true}, {"lcs", 3, false},
		{"sort_ro", 2, false}, {"xread", 4, false}, {"eval", 4, false}, {"ping", 1, false}, {"get", 1, false},
		{"spublish", 3, false},
	} {
		if got := Lookup(c.name).OneKey(c.n); got != c.want {
			t.Errorf("%s of %d arguments: OneKey %t, want %t", c.name, c.n, got, c.want)
		}
	}
	if (*Info)(nil).OneKey(2) {
		t.Errorf("a nil Info names a key")
	}
	for name, want := range map[string]bool{"ttl": true, "srandmember": true, "time": true, "randomkey": true,
		"hgetall": false, "smembers": false, "get": false} {
		if got := Lookup(name).Kind.Has(Nondeterministic); got != want {
			t.Errorf("%s: Nondeterministic %t, want %t", name, got, want)
		}
	}
}
