package submit_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoPublicNameOfAnInternalType: no exported type of the module's
// public packages is an alias of a type of an internal package, and no
// exported function's or method's signature names one (conn.Cmds = wire.Cmds, conn.Handler = wire.Handler and
// cluster.Client.Send(…, wire.Cmds, wire.Handler) once did).
func TestNoPublicNameOfAnInternalType(t *testing.T) {
	root := ".."
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch top := strings.Split(rel, string(filepath.Separator))[0]; top {
			case "internal", "cmd", "bench", "examples", "contrib", "fuzz", "scripts", "module", "testdata":
				return filepath.SkipDir
			}
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		internal := map[string]bool{}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if strings.Contains(p, "/internal/") {
				name := p[strings.LastIndex(p, "/")+1:]
				if im.Name != nil {
					name = im.Name.Name
				}
				internal[name] = true
			}
		}
		names := func(n ast.Node) (bad []string) {
			ast.Inspect(n, func(n ast.Node) bool {
				if s, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := s.X.(*ast.Ident); ok && internal[id.Name] {
						bad = append(bad, id.Name+"."+s.Sel.Name)
					}
				}
				return true
			})
			return bad
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() && s.Assign.IsValid() {
							if bad := names(s.Type); len(bad) > 0 {
								t.Errorf("%s: type %s = %v", fset.Position(s.Pos()), s.Name.Name, bad)
							}
						}
					}
				}
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv != nil && len(d.Recv.List) > 0 {
					r := d.Recv.List[0].Type
					if s, ok := r.(*ast.StarExpr); ok {
						r = s.X
					}
					if id, ok := r.(*ast.Ident); !ok || !id.IsExported() {
						continue
					}
				}
				if bad := names(d.Type); len(bad) > 0 {
					t.Errorf("%s: func %s names %v", fset.Position(d.Pos()), d.Name.Name, bad)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
