package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Key specs and policies as data for the generated Info: the cluster
// router and the raw-command path read them instead of a table loaded
// from the server.

// keySpecsOf returns the Go literal of a command's key specs
// ("[]keySpec{…}", "" for none) and its keys finder ("" for the specs
// alone). The servers' key specs must agree where both have the command
// (they do for Redis 7.0.15 and Valkey 8.0.1); a disagreement stops the
// generator rather than being settled silently.
func keySpecsOf(c *command) (lit, proc string, err error) {
	var ref []byte
	for _, s := range c.Servers {
		in := c.Infos[s]
		if in == nil {
			continue
		}
		b, _ := json.Marshal(routing(in.KeySpecs))
		if ref != nil && string(b) != string(ref) {
			return "", "", fmt.Errorf("%s: the servers' key specs differ: %s and %s", c.Name, ref, b)
		}
		ref = b
	}
	var specs []string
	for i, ks := range c.Info.KeySpecs {
		if ks.BeginSearch.Type == "unknown" || ks.FindKeys.Type == "unknown" {
			if !unknownSpecs[c.Name] {
				return "", "", fmt.Errorf("%s: key spec %d of unknown type (add it to unknownSpecs, with a finder in keysProcs if the server has one)", c.Name, i)
			}
			continue
		}
		var f []string
		num := func(m map[string]any, k string) (int, error) {
			v, _ := m[k].(float64)
			if v < -128 || v > 127 || v != float64(int(v)) {
				return 0, fmt.Errorf("%s: key spec %d: %s %v does not fit an int8", c.Name, i, k, v)
			}
			return int(v), nil
		}
		set := func(name string, m map[string]any, k string, skip int) error {
			v, err := num(m, k)
			if err != nil {
				return err
			}
			if v != skip {
				f = append(f, fmt.Sprintf("%s: %d", name, v))
			}
			return nil
		}
		bs, fk := ks.BeginSearch.Spec, ks.FindKeys.Spec
		switch ks.BeginSearch.Type {
		case "index":
			if err := set("index", bs, "index", 0); err != nil {
				return "", "", err
			}
		case "keyword":
			kw, _ := bs["keyword"].(string)
			if kw == "" {
				return "", "", fmt.Errorf("%s: key spec %d: empty keyword", c.Name, i)
			}
			f = append(f, fmt.Sprintf("keyword: %q", strings.ToUpper(kw)))
			if err := set("from", bs, "startfrom", 0); err != nil {
				return "", "", err
			}
		default:
			return "", "", fmt.Errorf("%s: begin_search %q", c.Name, ks.BeginSearch.Type)
		}
		switch ks.FindKeys.Type {
		case "range":
			for _, p := range [][2]string{{"lastKey", "lastkey"}, {"limit", "limit"}} {
				if err := set(p[0], fk, p[1], 0); err != nil {
					return "", "", err
				}
			}
		case "keynum":
			f = append(f, "keynum: true")
			for _, p := range [][2]string{{"numIdx", "keynumidx"}, {"firstKey", "firstkey"}} {
				if err := set(p[0], fk, p[1], 0); err != nil {
					return "", "", err
				}
			}
		default:
			return "", "", fmt.Errorf("%s: find_keys %q", c.Name, ks.FindKeys.Type)
		}
		if err := set("step", fk, "keystep", 1); err != nil {
			return "", "", err
		}
		if slices.Contains(ks.Flags, "not_key") {
			f = append(f, "notKey: true")
		}
		specs = append(specs, "{"+strings.Join(f, ", ")+"}")
	}
	if len(specs) > 0 {
		lit = "[]keySpec{" + strings.Join(specs, ", ") + "}"
	}
	return lit, keysProcs[c.Name], nil
}

// routing is what of the key specs finds keys: their searches and the
// not_key flag (the access flags RW, OW, … do not route).
func routing(kss []keySpec) []any {
	var out []any
	for _, ks := range kss {
		out = append(out, []any{ks.BeginSearch, ks.FindKeys, slices.Contains(ks.Flags, "not_key")})
	}
	return out
}

// policyOf returns a command's Policy and Aggregate constants, from the
// tips of every server's table: where they disagree, the union of the
// request policies (a command any server sends to every shard goes to
// every primary: Valkey 8.0 tags ACL SETUSER, CLIENT SETNAME and CONFIG
// REWRITE all_nodes where Redis 7.0 tags nothing, and their effect is
// per node), and the response policy of the newest server that gives one
// (LATENCY RESET: Valkey's agg_sum over Redis's all_succeeded). A
// request policy other than all_shards or all_nodes (MSETNX's
// multi_shard on Redis) leaves the command routed by its keys: the
// router refuses keys of several slots rather than split a command.
// The everyShard commands get AllShards with the first reply when no
// table tags them.
func policyOf(c *command) (policy, agg string) {
	all := false
	resp := ""
	for _, s := range c.Servers { // oldest first: the newest's response policy wins
		in := c.Infos[s]
		if in == nil {
			continue
		}
		for _, tip := range in.Tips {
			switch {
			case tip == "request_policy:all_shards" || tip == "request_policy:all_nodes":
				all = true
			case strings.HasPrefix(tip, "response_policy:"):
				resp = strings.TrimPrefix(tip, "response_policy:")
			}
		}
	}
	if !all {
		if slices.Contains(everyShard, c.Name) {
			return "AllShards", "AggFirst"
		}
		return "ByKeys", "AggFirst"
	}
	switch resp {
	case "agg_sum":
		return "AllShards", "AggSum"
	case "agg_logical_and":
		return "AllShards", "AggLogicalAnd"
	case "agg_logical_or":
		return "AllShards", "AggLogicalOr"
	case "agg_min":
		return "AllShards", "AggMin"
	case "agg_max":
		return "AllShards", "AggMax"
	case "":
		return "AllShards", "AggConcat"
	}
	return "AllShards", "AggFirst" // all_succeeded, one_succeeded, special
}
