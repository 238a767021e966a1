package conn_test

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pubsub"
)

// TestBadOptionsIsConns: ErrBadOptions is conn's own error (it used to be
// internal/dial's, re-exported), and every error of Options no
// connection can be made with still matches it: Dial's, NewClient's and
// pubsub's, naming the field at fault.
func TestBadOptionsIsConns(t *testing.T) {
	if got := conn.ErrBadOptions.Error(); got != "conn: bad options" {
		t.Errorf("ErrBadOptions = %q, want conn's own %q", got, "conn: bad options")
	}
	opts := conn.Options{Addr: "127.0.0.1:1", Protocol: 4}
	_, err := conn.Dial(context.Background(), opts)
	if !errors.Is(err, conn.ErrBadOptions) || !strings.Contains(err.Error(), "Protocol 4") {
		t.Errorf("Dial: %v, want ErrBadOptions naming Protocol 4", err)
	}
	_, err = conn.NewClient(context.Background(), opts)
	if !errors.Is(err, conn.ErrBadOptions) {
		t.Errorf("NewClient: %v, want ErrBadOptions", err)
	}
	s, err := pubsub.Subscribe(context.Background(), opts, "ch")
	if s != nil {
		s.Close()
	}
	if !errors.Is(err, conn.ErrBadOptions) || !strings.Contains(err.Error(), "Protocol 4") {
		t.Errorf("pubsub.Subscribe: %v, want conn.ErrBadOptions naming Protocol 4", err)
	}
}

// TestNoPublicVarFromInternal: no exported variable of conn is assigned
// from an internal package (its identity would be the internal
// package's: ErrBadOptions was dial.ErrBadOptions).
func TestNoPublicVarFromInternal(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		internal := map[string]bool{}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			if !strings.Contains(path, "/internal/") {
				continue
			}
			name := path[strings.LastIndex(path, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			internal[name] = true
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, sp := range g.Specs {
				vs := sp.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !n.IsExported() || i >= len(vs.Values) {
						continue
					}
					if sel, ok := vs.Values[i].(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok && internal[x.Name] {
							t.Errorf("%s: exported %s = %s.%s, an internal package's", fset.Position(n.Pos()), n.Name, x.Name, sel.Sel.Name)
						}
					}
				}
			}
		}
	}
}
