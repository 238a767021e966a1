package main

import (
	"fmt"
	"slices"
	"testing"
)

// keyArg is an argument the docs mark as a key, with where it sits.
type keyArg struct {
	arg    *argument
	parent *argument // the block it is in, or nil
	top    int       // the index of its top-level argument
}

func keyArgs(args []*argument, spec int) []keyArg {
	var out []keyArg
	var walk func(args []*argument, parent *argument, top int)
	walk = func(args []*argument, parent *argument, top int) {
		for i, a := range args {
			t := top
			if parent == nil {
				t = i
			}
			if a.Type == "key" && a.KeySpec != nil && *a.KeySpec == spec {
				out = append(out, keyArg{a, parent, t})
			}
			walk(a.Arguments, a, t)
		}
	}
	walk(args, nil, 0)
	return out
}

// TestKeySpecsAgree checks that the arguments the builders write as keys
// (those the docs mark with a key_spec_index) are where the servers' key
// specs say the keys are: begin_search by index at that fixed position
// (when what comes before is fixed) or after that keyword, find_keys by
// range one key or (lastkey -1) many, by keynum after a count the
// builder writes. So the key positions a builder carries at build time
// are the key specs', which TestKeysAsServerFinds (package cmds) checks
// against COMMAND GETKEYS on the real servers.
func TestKeySpecsAgree(t *testing.T) {
	ts, err := load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range ts {
		cs, err := union([]*table{tb}) // each server's docs with its own key specs
		if err != nil {
			t.Fatal(err)
		}
		checked, fixedIdx, notKey, unknown := 0, 0, 0, 0
		for _, c := range cs {
			if c.Container || leaveOut[c.Name] != "" {
				continue
			}
			for i, ks := range c.Info.KeySpecs {
				kas := keyArgs(c.Doc.Arguments, i)
				if slices.Contains(ks.Flags, "not_key") {
					// SPUBLISH's shard channel: routed like a key, not a
					// key (COMMAND GETKEYS leaves it out, and so do the
					// builders).
					if len(kas) != 0 {
						t.Errorf("%s %s: key spec %d is not_key but names a key argument", tb.file, c.Name, i)
					}
					notKey++
					continue
				}
				if ks.BeginSearch.Type == "unknown" {
					// SORT's: the BY and GET patterns, which the docs
					// type "pattern" and the builders write as no key
					// (COMMAND GETKEYS finds none), and STORE's
					// destination, a key the server finds with code of
					// its own: TestKeysAsServerFinds checks it.
					unknown++
					continue
				}
				if len(kas) == 0 {
					t.Errorf("%s %s: key spec %d names no argument", tb.file, c.Name, i)
					continue
				}
				for _, ka := range kas {
					checked++
					if err := agree(c, ks, ka); err != nil {
						t.Errorf("%s %s: key spec %d: %v", tb.file, c.Name, i, err)
					} else if ks.BeginSearch.Type == "index" {
						fixedIdx++
					}
				}
			}
			// And no key argument without a key spec.
			var walk func([]*argument)
			walk = func(args []*argument) {
				for _, a := range args {
					if a.Type == "key" && (a.KeySpec == nil || *a.KeySpec >= len(c.Info.KeySpecs)) {
						t.Errorf("%s %s: key argument %q without a key spec", tb.file, c.Name, a.Name)
					}
					walk(a.Arguments)
				}
			}
			walk(c.Doc.Arguments)
		}
		t.Logf("%s: %d key arguments agree with their key specs (%d found by index); %d not_key specs name no key, %d unknown ones are left to COMMAND GETKEYS", tb.file, checked, fixedIdx, notKey, unknown)
	}
}

func agree(c *command, ks keySpec, ka keyArg) error {
	num := func(m map[string]any, k string) int {
		f, _ := m[k].(float64)
		return int(f)
	}
	multiple := ka.arg.multiple() || ka.parent != nil && ka.parent.multiple()
	switch ks.BeginSearch.Type {
	case "index":
		want := num(ks.BeginSearch.Spec, "index")
		pos := len(c.Words)
		fixed := ka.parent == nil
		for _, a := range c.Doc.Arguments[:ka.top] {
			if a.optional() || a.multiple() || !(isScalar(a) || a.Type == "pure-token") || a.Token != "" {
				fixed = false
				break
			}
			pos++
		}
		if ks.FindKeys.Type == "keynum" {
			want += num(ks.FindKeys.Spec, "firstkey") // the index is the count's
		}
		span := 0
		if ks.FindKeys.Type == "range" && num(ks.FindKeys.Spec, "lastkey") > 0 {
			span = num(ks.FindKeys.Spec, "lastkey") // LCS key1 key2
		}
		if fixed && (pos < want || pos > want+span) {
			return fmt.Errorf("%q is at %d, the spec begins at %d", ka.arg.Name, pos, want)
		}
	case "keyword":
		kw, _ := ks.BeginSearch.Spec["keyword"].(string)
		if ka.arg.Token != kw && (ka.parent == nil || ka.parent.Token != kw) {
			return fmt.Errorf("%q does not follow %s", ka.arg.Name, kw)
		}
	default:
		return fmt.Errorf("begin_search %q", ks.BeginSearch.Type)
	}
	switch ks.FindKeys.Type {
	case "range":
		last := num(ks.FindKeys.Spec, "lastkey")
		if last == 0 && multiple {
			return fmt.Errorf("%q repeats, the spec has one key", ka.arg.Name)
		}
		if last < 0 && !multiple {
			return fmt.Errorf("%q is one key, the spec has them to the end", ka.arg.Name)
		}
		if step := num(ks.FindKeys.Spec, "keystep"); step > 1 && (ka.parent == nil || len(ka.parent.Arguments) != step) {
			return fmt.Errorf("%q: a key every %d arguments", ka.arg.Name, step)
		}
	case "keynum":
		if !multiple {
			return fmt.Errorf("%q is one key, the spec counts them", ka.arg.Name)
		}
		args := c.Doc.Arguments
		if ka.parent != nil || ka.top == 0 || !isNumkeys(args, ka.top-1) {
			return fmt.Errorf("%q does not follow a count the builder writes", ka.arg.Name)
		}
	default:
		return fmt.Errorf("find_keys %q", ks.FindKeys.Type)
	}
	return nil
}

// TestEveryShardKnown: every command of everyShard is in the tables, so
// the list does not rot silently.
func TestEveryShardKnown(t *testing.T) {
	ts, err := load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := union(ts)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, c := range cs {
		known[c.Name] = true
	}
	for _, n := range everyShard {
		if !known[n] {
			t.Errorf("everyShard: %s is in no table", n)
		}
	}
	for n := range keysProcs {
		if !known[n] {
			t.Errorf("keysProcs: %s is in no table", n)
		}
	}
}

// TestKeySpecsDisagree: servers whose key specs for a command differ stop
// the generator; their tips are merged (union of the request policies,
// the newest server's response policy).
func TestKeySpecsDisagree(t *testing.T) {
	spec := func(index float64) keySpec {
		var ks keySpec
		ks.BeginSearch.Type, ks.BeginSearch.Spec = "index", map[string]any{"index": index}
		ks.FindKeys.Type, ks.FindKeys.Spec = "range", map[string]any{"lastkey": 0.0, "keystep": 1.0, "limit": 0.0}
		return ks
	}
	a := &info{KeySpecs: []keySpec{spec(1)}, Tips: []string{"request_policy:all_nodes", "response_policy:all_succeeded"}}
	b := &info{KeySpecs: []keySpec{spec(2)}, Tips: []string{"response_policy:agg_sum"}}
	c := &command{Name: "x", Info: b, Servers: []string{"a", "b"}, Infos: map[string]*info{"a": a, "b": b}}
	if _, _, err := keySpecsOf(c); err == nil {
		t.Error("key specs at 1 and 2: no error")
	}
	if p, agg := policyOf(c); p != "AllShards" || agg != "AggSum" {
		t.Errorf("policy %s %s, want AllShards AggSum", p, agg)
	}
	b.KeySpecs = []keySpec{spec(1)}
	if lit, _, err := keySpecsOf(c); err != nil || lit != "[]keySpec{{index: 1}}" {
		t.Errorf("key specs %q %v", lit, err)
	}
}
