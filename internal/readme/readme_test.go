package readme_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository, from this package's directory.
const root = "../.."

// block is one fenced code block of a markdown file.
type block struct {
	lang  string
	line  int // of the opening fence
	lines []string
}

// blocks returns the fenced code blocks of the markdown file at path.
func blocks(t *testing.T, path string) []block {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []block
	var cur *block
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &block{lang: strings.TrimPrefix(line, "```"), line: n}
		case cur != nil && line == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: a code block never closed", path, cur.line)
	}
	return out
}

// trimmed returns lines without their indentation, blank ones dropped.
func trimmed(lines []string) []string {
	var out []string
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// goFiles returns the trimmed lines of every Go file of the repository,
// nested modules included, by path.
func goFiles(t *testing.T) map[string][]string {
	t.Helper()
	files := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files[path] = trimmed(strings.Split(string(src), "\n"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// contains reports whether want is a contiguous run of have.
func contains(have, want []string) bool {
	for i := 0; i+len(want) <= len(have); i++ {
		j := 0
		for j < len(want) && have[i+j] == want[j] {
			j++
		}
		if j == len(want) {
			return true
		}
	}
	return false
}

// Every Go block of the README is cut, line for line (indentation aside),
// from a Go file of the repository: a program, an example or a test,
// each of which the test suite builds (and runs), so no snippet shows
// code that does not compile.
func TestGoSnippetsAreCutFromBuiltFiles(t *testing.T) {
	files := goFiles(t)
	n := 0
	for _, b := range blocks(t, root+"/README.md") {
		if b.lang != "go" {
			continue
		}
		n++
		want := trimmed(b.lines)
		found := ""
		for path, have := range files {
			if contains(have, want) {
				found = path
				break
			}
		}
		if found == "" {
			t.Errorf("README.md:%d: this Go block is in no Go file of the repository:\n%s", b.line, strings.Join(b.lines, "\n"))
		}
	}
	if n < 5 {
		t.Fatalf("%d Go blocks in README.md: the extraction is broken", n)
	}
}

// The two set-up commands stay in the README exactly (CI's .ci/run calls
// the test command; a newcomer copies both), in the first 60 lines, and
// name scripts that exist.
func TestSetupCommands(t *testing.T) {
	src, err := os.ReadFile(root + "/README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	for _, cmd := range []string{"bash scripts/emqbench.sh", "bash scripts/test.sh"} {
		at := -1
		for i, l := range lines {
			if l == cmd || strings.HasPrefix(l, cmd+" ") {
				at = i
				break
			}
		}
		if at < 0 || at >= 60 {
			t.Errorf("README.md: %q at line %d: want it on a line of its own within the first 60", cmd, at+1)
		}
		script := strings.Fields(cmd)[1]
		if _, err := os.Stat(root + "/" + script); err != nil {
			t.Errorf("%s: %v", script, err)
		}
	}
	ci, err := os.ReadFile(root + "/.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ci), "bash scripts/test.sh") {
		t.Errorf(".ci/run no longer calls bash scripts/test.sh, the README's test command")
	}
}

// link is a markdown link to a relative path.
var link = regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`)

// Every relative link of the README and of docs/ names a file or a
// directory of the repository, and every `go run ./cmd/X` in a shell
// block names a command that exists.
func TestLinksAndCommands(t *testing.T) {
	docs, _ := filepath.Glob(root + "/docs/*.md")
	for _, md := range append([]string{root + "/README.md"}, docs...) {
		src, err := os.ReadFile(md)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(src), -1) {
			if _, err := os.Stat(filepath.Join(filepath.Dir(md), m[1])); err != nil {
				t.Errorf("%s: link to %s: %v", md, m[1], err)
			}
		}
		for _, b := range blocks(t, md) {
			if b.lang != "sh" {
				continue
			}
			for _, l := range b.lines {
				for _, f := range regexp.MustCompile(`go run (\./cmd/[a-z]+)`).FindAllStringSubmatch(l, -1) {
					if _, err := os.Stat(root + "/" + f[1] + "/main.go"); err != nil {
						t.Errorf("%s:%d: %s: %v", md, b.line, f[1], err)
					}
				}
			}
		}
	}
}
