// Command cmdgen writes package cmds, the typed command builders, from the
// servers' own command tables: COMMAND DOCS and COMMAND INFO captured
// from Redis 7.0.15 and Valkey 8.0.1 (testdata/, written by ./capture).
// It runs from package cmds:
//
//	//go:generate go run ../internal/cmdgen -in ../internal/cmdgen/testdata -out .
//
// The builders cover the union of the tables: every command and
// subcommand, each with typed arguments, its kind (COMMAND INFO flags and
// our own list of commands that change the reply model) and its key
// positions (the arguments the docs mark as keys, which are the key specs'
// keys; the tests check them against COMMAND GETKEYS). Each Info also
// carries the key specs themselves, as data (keyspecs.go), for commands
// given as raw arguments, and the request/response policy from the tips
// (the two servers' tips merged, and a list of our own for the admin
// commands Redis 7.0 leaves untagged: tables.go). The reply shapes
// are our own table (replies.go), read from the reply schemas of the
// Valkey source.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	in := flag.String("in", "testdata", "directory of captured tables")
	out := flag.String("out", ".", "directory of package cmds")
	check := flag.Bool("check", false, "report files that differ from a fresh generation, write nothing")
	flag.Parse()
	if err := run(*in, *out, *check); err != nil {
		fmt.Fprintln(os.Stderr, "cmdgen:", err)
		os.Exit(1)
	}
}

// files generates package cmds from the tables in dir.
func files(dir string) (map[string][]byte, []*cmdOut, []excluded, []*table, error) {
	ts, err := load(dir)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	cs, err := union(ts)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	g, outs, ex := generate(cs)
	fs, err := render(g, outs, ex, ts)
	return fs, outs, ex, ts, err
}

func run(in, out string, check bool) error {
	fs, _, ex, ts, err := files(in)
	if err != nil {
		return err
	}
	var names []string
	for n := range fs {
		names = append(names, n)
	}
	sort.Strings(names)
	var stale []string
	for _, n := range names {
		p := filepath.Join(out, n)
		old, _ := os.ReadFile(p)
		if bytes.Equal(old, fs[n]) {
			continue
		}
		stale = append(stale, n)
		if !check {
			if err := os.WriteFile(p, fs[n], 0o644); err != nil {
				return err
			}
		}
	}
	// Generated files no longer generated.
	old, _ := filepath.Glob(filepath.Join(out, "gen_*.go"))
	for _, p := range old {
		if _, ok := fs[filepath.Base(p)]; !ok {
			stale = append(stale, filepath.Base(p))
			if !check {
				os.Remove(p)
			}
		}
	}
	if check && len(stale) > 0 {
		return fmt.Errorf("stale generated files: %s", strings.Join(stale, ", "))
	}
	for _, t := range ts {
		fmt.Fprintf(os.Stderr, "cmdgen: %s: %d commands listed\n", t.file, len(t.List))
	}
	for _, e := range ex {
		fmt.Fprintf(os.Stderr, "cmdgen: left out %s: %s\n", e.Name, e.Why)
	}
	return nil
}
