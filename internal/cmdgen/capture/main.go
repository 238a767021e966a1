// Command capture asks a running Valkey or Redis server for its own
// command table (COMMAND LIST, COMMAND DOCS, COMMAND INFO) over RESP3 and
// writes the decoded replies as JSON, the test data cmdgen generates from:
//
//	go run ./internal/cmdgen/capture -addr 127.0.0.1:6379 -o internal/cmdgen/testdata/valkey-8.0.1.json
//
// The JSON is the reply as the server sent it, decoded: a RESP3 map is an
// object (its keys sorted by encoding/json, its pairs otherwise as sent),
// an array or set is an array, integers and doubles are numbers, null is
// null. Only the server's own replies are written; nothing is added but
// the server's name and version (from HELLO).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"sort"
	"time"

	"github.com/echomq/echomq-go/resp"
)

// Table is the file capture writes and cmdgen reads.
type Table struct {
	Server  string `json:"server"`
	Version string `json:"version"`
	// List is COMMAND LIST, sorted.
	List []string `json:"list"`
	// Docs is COMMAND DOCS: command name → its documentation map.
	Docs map[string]any `json:"docs"`
	// Info is COMMAND INFO: command name → its info array.
	Info map[string]any `json:"info"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	out := flag.String("o", "", "output file (default stdout)")
	flag.Parse()
	if err := run(*addr, *out); err != nil {
		fmt.Fprintln(os.Stderr, "capture:", err)
		os.Exit(1)
	}
}

func run(addr, out string) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	w := bufio.NewWriter(c)
	rd := resp.NewReader(c)
	do := func(args ...string) (any, error) {
		if _, err := w.Write(resp.AppendCommand(nil, args...)); err != nil {
			return nil, err
		}
		if err := w.Flush(); err != nil {
			return nil, err
		}
		v, err := rd.Next()
		if err != nil {
			return nil, err
		}
		if err := v.Err(); err != nil {
			return nil, fmt.Errorf("%v: %w", args, err)
		}
		return decode(v), nil
	}
	hello, err := do("HELLO", "3")
	if err != nil {
		return err
	}
	h := hello.(map[string]any)
	t := Table{Docs: map[string]any{}, Info: map[string]any{}}
	t.Server, _ = h["server"].(string)
	t.Version, _ = h["version"].(string)
	list, err := do("COMMAND", "LIST")
	if err != nil {
		return err
	}
	for _, n := range list.([]any) {
		t.List = append(t.List, n.(string))
	}
	sort.Strings(t.List)
	docs, err := do("COMMAND", "DOCS")
	if err != nil {
		return err
	}
	t.Docs = docs.(map[string]any)
	info, err := do("COMMAND", "INFO")
	if err != nil {
		return err
	}
	for _, e := range info.([]any) {
		a, ok := e.([]any)
		if !ok || len(a) == 0 {
			continue
		}
		sortSubcommands(a)
		t.Info[a[0].(string)] = a
	}
	b, err := json.MarshalIndent(t, "", " ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if out == "" {
		_, err = os.Stdout.Write(b)
		return err
	}
	return os.WriteFile(out, b, 0o644)
}

// sortSubcommands orders the subcommands of a COMMAND INFO entry by
// name: the server lists them in the order of its hash table, which
// changes from one process to the next.
func sortSubcommands(a []any) {
	if len(a) < 10 {
		return
	}
	subs, ok := a[9].([]any)
	if !ok {
		return
	}
	for _, s := range subs {
		if sa, ok := s.([]any); ok {
			sortSubcommands(sa)
		}
	}
	sort.SliceStable(subs, func(i, j int) bool {
		return name(subs[i]) < name(subs[j])
	})
}

func name(v any) string {
	if a, ok := v.([]any); ok && len(a) > 0 {
		s, _ := a[0].(string)
		return s
	}
	return ""
}

// decode turns a reply into plain Go values for encoding/json.
func decode(v resp.Value) any {
	switch v.Type {
	case resp.Map, resp.Attribute:
		m := make(map[string]any, v.Len())
		for i := 0; i < v.Len(); i++ {
			m[v.MapKey(i).Text()] = decode(v.MapValue(i))
		}
		return m
	case resp.Array, resp.Set, resp.Push:
		a := make([]any, 0, len(v.Elems))
		for _, e := range v.Elems {
			a = append(a, decode(e))
		}
		return a
	case resp.Integer:
		return v.Int
	case resp.Boolean:
		return v.Bool()
	case resp.Double:
		return v.Float()
	case resp.Null:
		return nil
	case resp.Verbatim:
		return string(v.VerbatimText())
	}
	return v.Text()
}
