package cluster

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// The command table: where each command's keys are, read from the
// server's own COMMAND reply (key specs, Redis 7.0+ and Valkey), so that
// EVAL/EVALSHA/FCALL numkeys, XREAD … STREAMS, MSET and every command a
// later server adds are routed without a hand-kept list.

// beginSearch finds where a key spec's keys start.
type beginSearch struct {
	index     int    // type index: the argument
	keyword   string // type keyword: after this argument (lower case)
	startFrom int    // where the keyword search starts; negative: from the end, backwards
}

// findKeys finds a key spec's keys from where they start.
type findKeys struct {
	keynum                      bool
	lastKey, keyStep, limit     int // type range
	keyNumIdx, firstKey, kStep2 int // type keynum (kStep2 is its keystep)
}

// keySpec is one key spec of a command.
type keySpec struct {
	begin beginSearch
	find  findKeys
	ok    bool // both parts understood
}

// policy is a command's request policy, from its tips.
type policy uint8

const (
	policyDefault   policy = iota // by key, or any node when keyless
	policyAllShards               // every primary (request_policy:all_shards or all_nodes)
)

// aggregate says how the replies of a command sent to every primary
// become one (response_policy).
type aggregate uint8

const (
	aggFirst  aggregate = iota // the first primary's reply (all_succeeded, one_succeeded, default)
	aggSum                     // the sum of integer replies (agg_sum)
	aggAnd                     // logical and of integer (or arrays of) replies
	aggOr                      // logical or
	aggMin                     // the smallest integer
	aggMax                     // the largest integer
	aggConcat                  // arrays concatenated (no response policy: KEYS)
)

// cmdInfo is one command's entry.
type cmdInfo struct {
	specs  []keySpec
	policy policy
	agg    aggregate
	subs   map[string]*cmdInfo // subcommands, by lower-case name
}

// commandTable maps lower-case command names to their entries.
type commandTable map[string]*cmdInfo

// loadCommands reads the command table from a node.
func loadCommands(ctx context.Context, s conn.Sender) (commandTable, error) {
	v, err := s.Do(ctx, "COMMAND")
	if err != nil {
		return nil, fmt.Errorf("cluster: COMMAND: %w", err)
	}
	t := commandTable{}
	for _, e := range v.Elems {
		name, info := parseCommand(e)
		if name != "" {
			t[name] = info
		}
	}
	if len(t) == 0 {
		return nil, fmt.Errorf("cluster: COMMAND returned no commands")
	}
	t.defaultPolicies()
	return t, nil
}

// everyNode are the node-wide admin commands that go to every primary
// when the server's table gives them no request policy (Redis 7.0 tags
// SCRIPT FLUSH but not CONFIG RESETSTAT, for one).
var everyNode = []string{
	"config|resetstat", "config|set", "config|rewrite", "script|flush",
	"flushall", "flushdb", "function|load", "function|delete", "function|flush", "function|restore",
}

// defaultPolicies gives the everyNode commands the all-shards policy
// where the table has none.
func (t commandTable) defaultPolicies() {
	for _, name := range everyNode {
		parent, sub, isSub := strings.Cut(name, "|")
		c := t[parent]
		if c != nil && isSub {
			c = c.subs[sub]
		}
		if c != nil && c.policy == policyDefault {
			c.policy, c.agg = policyAllShards, aggFirst
		}
	}
}

// parseCommand reads one entry of COMMAND's reply: name, arity, flags,
// first key, last key, step, ACL categories, tips, key specs,
// subcommands.
func parseCommand(e resp.Value) (string, *cmdInfo) {
	if e.Len() < 6 {
		return "", nil
	}
	name := strings.ToLower(e.Elems[0].Text())
	info := &cmdInfo{}
	if e.Len() > 7 {
		for _, tip := range e.Elems[7].Elems {
			info.tip(tip.Text())
		}
	}
	if e.Len() > 8 {
		for _, ks := range e.Elems[8].Elems {
			info.specs = append(info.specs, parseKeySpec(ks))
		}
	} else if first := int(e.Elems[3].Int); first > 0 {
		// A server without key specs: the legacy first/last/step.
		last, step := int(e.Elems[4].Int), int(e.Elems[5].Int)
		spec := keySpec{ok: true, begin: beginSearch{index: first}}
		spec.find.keyStep = max(step, 1)
		if last < 0 {
			spec.find.lastKey = last
		} else {
			spec.find.lastKey = last - first
		}
		info.specs = []keySpec{spec}
	}
	if e.Len() > 9 {
		for _, sub := range e.Elems[9].Elems {
			subName, subInfo := parseCommand(sub)
			if _, after, ok := strings.Cut(subName, "|"); ok {
				if info.subs == nil {
					info.subs = map[string]*cmdInfo{}
				}
				info.subs[after] = subInfo
			}
		}
	}
	return name, info
}

func (c *cmdInfo) tip(tip string) {
	switch tip {
	case "request_policy:all_shards", "request_policy:all_nodes":
		c.policy = policyAllShards
		if c.agg == aggFirst {
			c.agg = aggConcat
		}
	case "response_policy:agg_sum":
		c.agg = aggSum
	case "response_policy:agg_logical_and":
		c.agg = aggAnd
	case "response_policy:agg_logical_or":
		c.agg = aggOr
	case "response_policy:agg_min":
		c.agg = aggMin
	case "response_policy:agg_max":
		c.agg = aggMax
	case "response_policy:all_succeeded", "response_policy:one_succeeded", "response_policy:special":
		c.agg = aggFirst
	}
}

// field returns a map's value by key: a RESP3 map, or the flat array a
// RESP2 server sends instead.
func field(v resp.Value, key string) resp.Value {
	for i := 0; i+1 < len(v.Elems); i += 2 {
		if bytes.EqualFold(v.Elems[i].Str, []byte(key)) {
			return v.Elems[i+1]
		}
	}
	return resp.Value{}
}

func fieldInt(v resp.Value, key string) int {
	f := field(v, key)
	if f.Type == resp.Integer {
		return int(f.Int)
	}
	n, _ := f.AsInt()
	return int(n)
}

// parseKeySpec reads {begin_search: {type, spec}, find_keys: {type, spec}}.
func parseKeySpec(ks resp.Value) keySpec {
	var s keySpec
	bs, fk := field(ks, "begin_search"), field(ks, "find_keys")
	bspec, fspec := field(bs, "spec"), field(fk, "spec")
	okBegin, okFind := true, true
	switch field(bs, "type").Text() {
	case "index":
		s.begin.index = fieldInt(bspec, "index")
	case "keyword":
		s.begin.keyword = strings.ToLower(field(bspec, "keyword").Text())
		s.begin.startFrom = fieldInt(bspec, "startfrom")
	default:
		okBegin = false
	}
	switch field(fk, "type").Text() {
	case "range":
		s.find.lastKey = fieldInt(fspec, "lastkey")
		s.find.keyStep = max(fieldInt(fspec, "keystep"), 1)
		s.find.limit = fieldInt(fspec, "limit")
	case "keynum":
		s.find.keynum = true
		s.find.keyNumIdx = fieldInt(fspec, "keynumidx")
		s.find.firstKey = fieldInt(fspec, "firstkey")
		s.find.kStep2 = max(fieldInt(fspec, "keystep"), 1)
	default:
		okFind = false
	}
	s.ok = okBegin && okFind
	return s
}

// lookup returns the entry of the command in a, its subcommand's when it
// has one.
func (t commandTable) lookup(a *argv) *cmdInfo {
	var buf [32]byte
	c := t[string(lower(buf[:], a.arg(0)))]
	if c == nil || c.subs == nil || a.len() < 2 {
		return c
	}
	if sub := c.subs[string(lower(buf[:], a.arg(1)))]; sub != nil {
		return sub
	}
	return c
}

// keys appends to dst the index of every key of the command in a, as
// the command's key specs find them.
func (c *cmdInfo) keys(a *argv, dst []int32) []int32 {
	argc := a.len()
	for _, s := range c.specs {
		if !s.ok {
			continue
		}
		first, found := s.begin.index, true
		if s.begin.keyword != "" {
			first, found = findKeyword(a, s.begin.keyword, s.begin.startFrom)
		}
		if !found || first <= 0 || first >= argc {
			continue
		}
		last, step := 0, 1
		if s.find.keynum {
			idx := first + s.find.keyNumIdx
			if idx >= argc {
				continue
			}
			n := atoi(a.arg(idx))
			if n < 0 {
				continue
			}
			first += s.find.firstKey
			last, step = first+n-1, s.find.kStep2
		} else {
			step = s.find.keyStep
			switch {
			case s.find.lastKey >= 0:
				last = first + s.find.lastKey
			case s.find.limit <= 1:
				last = argc + s.find.lastKey
			default:
				last = first + (argc-first)/s.find.limit + s.find.lastKey
			}
		}
		for i := first; i <= last && i < argc; i += step {
			dst = append(dst, int32(i))
		}
	}
	return dst
}

// findKeyword returns the index after the keyword, searching from
// startFrom (from the end, backwards, when negative).
func findKeyword(a *argv, kw string, startFrom int) (int, bool) {
	argc := a.len()
	start, end, step := startFrom, argc-1, 1
	if startFrom < 0 {
		start, end, step = argc+startFrom, 1, -1
	}
	for i := start; i != end+step && i >= 1 && i < argc; i += step {
		if bytes.EqualFold(a.arg(i), []byte(kw)) {
			return i + 1, true
		}
	}
	return 0, false
}
