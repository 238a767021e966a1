package resp_test

import (
	"go/build"
	"strings"
	"testing"
)

// TestNoCommandMeanings: the codec knows no command's meaning. Neither
// package resp nor anything it imports is a command table (cmds, the old
// internal/cmdinfo) or any other package of this module.
func TestNoCommandMeanings(t *testing.T) {
	const module = "github.com/echomq/echomq-go/"
	seen := map[string]bool{}
	var walk func(path, dir string)
	walk = func(path, dir string) {
		if seen[path] {
			return
		}
		seen[path] = true
		pkg, err := build.Import(path, dir, 0)
		if err != nil {
			if path == module+"resp" {
				t.Fatal(err)
			}
			return // the standard library, found or not
		}
		for _, imp := range pkg.Imports {
			// internal/rawcmd is a hook with no imports and no meaning:
			// resp sets its constructor there for cmds's encoder.
			if strings.HasPrefix(imp, module) && imp != module+"internal/rawcmd" {
				t.Errorf("%s imports %s: the codec must not know command meanings", path, imp)
			}
			if !strings.Contains(imp, ".") || strings.HasPrefix(imp, module) {
				walk(imp, pkg.Dir)
			}
		}
	}
	walk(module+"resp", ".")
}
