package emq

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestScriptFiles checks each embedded script's shape: not empty, a header
// that names every KEYS[n] it declares and its replies, a body that uses
// no KEYS beyond the declared count nor concatenates ARGV (keys are
// never built from ARGV), and a one-to-one match between
// scripts/*.lua and Scripts(). The scripts' behaviour is tested against a
// real server with the verbs.
func TestScriptFiles(t *testing.T) {
	entries, err := os.ReadDir("scripts")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".lua"); ok {
			files = append(files, name)
		}
	}
	var listed []string
	core := 0
	keyRef := regexp.MustCompile(`KEYS\[(\d+)\]`)
	argvConcat := regexp.MustCompile(`\.\.\s*ARGV|ARGV\[[^\]]*\]\s*\.\.`)
	for _, s := range Scripts() {
		listed = append(listed, s.Name)
		if s.Core {
			core++
		}
		disk, err := os.ReadFile("scripts/" + s.Name + ".lua")
		if err != nil {
			t.Fatal(err)
		}
		if s.Source == "" || s.Source != string(disk) {
			t.Errorf("%s: embedded source is empty or differs from the file", s.Name)
			continue
		}
		header, body := splitHeader(s.Source)
		for n := 1; n <= s.NumKeys; n++ {
			if !strings.Contains(header, "-- KEYS["+strconv.Itoa(n)+"]") {
				t.Errorf("%s: header does not name KEYS[%d]", s.Name, n)
			}
		}
		if !strings.Contains(header, "Replies:") {
			t.Errorf("%s: header does not name its replies", s.Name)
		}
		for _, m := range keyRef.FindAllStringSubmatch(header+body, -1) {
			if n, _ := strconv.Atoi(m[1]); n < 1 || n > s.NumKeys {
				t.Errorf("%s: uses KEYS[%d], declares %d", s.Name, n, s.NumKeys)
			}
		}
		if argvConcat.MatchString(body) {
			t.Errorf("%s: concatenates ARGV, perhaps into a key", s.Name)
		}
	}
	if core != 6 {
		t.Errorf("%d core scripts, want 6", core)
	}
	slices.Sort(files)
	slices.Sort(listed)
	if !slices.Equal(files, listed) {
		t.Errorf("scripts/ holds %v, Scripts() lists %v", files, listed)
	}
}

// splitHeader splits a script into its leading comment block and the rest.
func splitHeader(src string) (header, body string) {
	lines := strings.SplitAfter(src, "\n")
	i := 0
	for i < len(lines) && strings.HasPrefix(lines[i], "--") {
		i++
	}
	return strings.Join(lines[:i], ""), strings.Join(lines[i:], "")
}

// TestDispatchScriptsMatch: DispatchScripts lists every embedded script,
// in the order of Scripts, each with its own source.
func TestDispatchScriptsMatch(t *testing.T) {
	ds, ss := DispatchScripts(), Scripts()
	if len(ds) != len(ss) {
		t.Fatalf("DispatchScripts has %d scripts, Scripts %d", len(ds), len(ss))
	}
	for i, s := range ss {
		if ds[i].Name() != s.Name || ds[i].Source() != s.Source {
			t.Errorf("script %d: DispatchScripts has %s, Scripts %s", i, ds[i].Name(), s.Name)
		}
	}
}
