package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// table is one server's captured command table (see ./capture).
type table struct {
	Server  string                     `json:"server"`
	Version string                     `json:"version"`
	List    []string                   `json:"list"`
	Docs    map[string]json.RawMessage `json:"docs"`
	Info    map[string][]any           `json:"info"`

	file string // base name without .json
}

// doc is a command's COMMAND DOCS entry.
type doc struct {
	Summary     string          `json:"summary"`
	Since       string          `json:"since"`
	Group       string          `json:"group"`
	Complexity  string          `json:"complexity"`
	DocFlags    []string        `json:"doc_flags"`
	Deprecated  string          `json:"deprecated_since"`
	Replaced    string          `json:"replaced_by"`
	Arguments   []*argument     `json:"arguments"`
	Subcommands map[string]*doc `json:"subcommands"`
}

// argument is one COMMAND DOCS argument.
type argument struct {
	Name       string      `json:"name"`
	Type       string      `json:"type"`
	Display    string      `json:"display_text"`
	Token      string      `json:"token"`
	Flags      []string    `json:"flags"`
	KeySpec    *int        `json:"key_spec_index"`
	Since      string      `json:"since"`
	Deprecated string      `json:"deprecated_since"`
	Arguments  []*argument `json:"arguments"`
}

func (a *argument) has(flag string) bool {
	for _, f := range a.Flags {
		if f == flag {
			return true
		}
	}
	return false
}

func (a *argument) optional() bool      { return a.has("optional") }
func (a *argument) multiple() bool      { return a.has("multiple") }
func (a *argument) multipleToken() bool { return a.has("multiple_token") }

// keySpec is one key spec of COMMAND INFO.
type keySpec struct {
	BeginSearch struct {
		Type string         `json:"type"`
		Spec map[string]any `json:"spec"`
	} `json:"begin_search"`
	FindKeys struct {
		Type string         `json:"type"`
		Spec map[string]any `json:"spec"`
	} `json:"find_keys"`
	Flags []string `json:"flags"`
	Notes string   `json:"notes"`
}

// info is a command's COMMAND INFO entry.
type info struct {
	Name     string
	Arity    int
	Flags    []string
	Tips     []string
	KeySpecs []keySpec
}

func (i *info) has(flag string) bool {
	for _, f := range i.Flags {
		if f == flag {
			return true
		}
	}
	return false
}

// command is one command or subcommand of the union of the tables.
type command struct {
	Name      string // "client|kill"
	Words     []string
	Container bool // has subcommands
	Doc       *doc
	Info      *info
	Infos     map[string]*info // each table's COMMAND INFO entry, by table file
	Servers   []string         // table files that have it
	// Other is the command's doc in the other servers' tables, when
	// their arguments differ from Doc's.
	Other map[string]*doc
}

// load reads every table under dir, in name order.
func load(dir string) ([]*table, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var ts []*table
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		t := &table{file: strings.TrimSuffix(filepath.Base(f), ".json")}
		if err := json.Unmarshal(b, t); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		ts = append(ts, t)
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("no tables in %s", dir)
	}
	return ts, nil
}

func parseInfo(a []any) (*info, []*info, error) {
	if len(a) < 10 {
		return nil, nil, fmt.Errorf("info entry of %d fields", len(a))
	}
	in := &info{Name: a[0].(string), Arity: int(a[1].(float64))}
	for _, f := range a[2].([]any) {
		in.Flags = append(in.Flags, f.(string))
	}
	for _, f := range a[7].([]any) {
		in.Tips = append(in.Tips, f.(string))
	}
	b, _ := json.Marshal(a[8])
	if err := json.Unmarshal(b, &in.KeySpecs); err != nil {
		return nil, nil, err
	}
	var subs []*info
	for _, s := range a[9].([]any) {
		si, _, err := parseInfo(s.([]any))
		if err != nil {
			return nil, nil, err
		}
		subs = append(subs, si)
	}
	return in, subs, nil
}

// union merges the tables. A command's doc is taken from the last table
// (the newest server: tables sort as redis-… before valkey-…) that has
// it; the others' docs are kept in Other where they differ.
func union(ts []*table) ([]*command, error) {
	byName := map[string]*command{}
	for _, t := range ts {
		infos := map[string]*info{}
		for _, raw := range t.Info {
			in, subs, err := parseInfo(raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", t.file, err)
			}
			infos[in.Name] = in
			for _, s := range subs {
				infos[s.Name] = s
			}
		}
		add := func(name string, d *doc, container bool) {
			c := byName[name]
			if c == nil {
				c = &command{Name: name, Other: map[string]*doc{}, Infos: map[string]*info{}}
				for _, w := range strings.Split(name, "|") {
					c.Words = append(c.Words, strings.ToUpper(w))
				}
				byName[name] = c
			}
			if c.Doc != nil && !sameArgs(c.Doc.Arguments, d.Arguments) {
				for _, s := range c.Servers {
					if c.Other[s] == nil {
						c.Other[s] = c.Doc
					}
				}
			}
			c.Doc, c.Info, c.Container = d, infos[name], container
			if infos[name] != nil {
				c.Infos[t.file] = infos[name]
			}
			c.Servers = append(c.Servers, t.file)
		}
		for name, raw := range t.Docs {
			var d doc
			if err := json.Unmarshal(raw, &d); err != nil {
				return nil, fmt.Errorf("%s %s: %w", t.file, name, err)
			}
			add(name, &d, len(d.Subcommands) > 0)
			for sn, sd := range d.Subcommands {
				add(sn, sd, false)
			}
		}
		for _, n := range t.List {
			if byName[n] == nil {
				return nil, fmt.Errorf("%s: %s is in COMMAND LIST but not in COMMAND DOCS", t.file, n)
			}
		}
	}
	var cs []*command
	for _, c := range byName {
		if c.Info == nil {
			return nil, fmt.Errorf("%s: no COMMAND INFO", c.Name)
		}
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	return cs, nil
}

func sameArgs(a, b []*argument) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
