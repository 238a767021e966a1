package cluster_test

import (
	"encoding/hex"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cache"
	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/jobs"
	"github.com/echomq/echomq-go/pubsub"
	"github.com/echomq/echomq-go/sentinel"
)

// The module's import path and its root, from this package's directory.
const (
	modulePath = "github.com/echomq/echomq-go"
	moduleRoot = ".."
)

// secret is the password of every printed value.
const secret = "pw-s3cr3t-0f-the-print-test"

// No exported type of the module that holds a password prints it, in any
// verb, as a value or through a pointer. The types that hold one are
// found in the module's source (a struct with a Password field, or a
// field, by value, of a type that holds one: fmt walks values, and
// pointers below the top only as addresses), so a new such type fails
// this test until it is printed here, and shown to redact.
func TestNoTypePrintsThePassword(t *testing.T) {
	holders := credentialHolders(t)
	require.Contains(t, holders, "conn.Options", "the source scan found nothing: is it broken?")

	srv, err := servertest.StartCluster(1, 0, servertest.Options{Password: secret})
	if err != nil {
		if servertest.InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Cleanup(srv.Stop)
	ctx := testCtx(t)
	addr := srv.Primaries[0].Addr
	copts := conn.Options{Addr: addr, Username: "default", Password: secret, ClientName: "print-test"}
	clopts := copts
	clopts.BlockingConns = 2
	cc, err := conn.NewClient(ctx, clopts)
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close() })
	c, err := conn.Dial(ctx, copts)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	copt := cluster.Options{Seeds: []string{addr}, Node: clopts}
	cl, err := cluster.NewClient(ctx, copt)
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	popts := pubsub.Options{Options: copts, Buffer: 8}
	sub, err := pubsub.New(ctx, popts)
	require.NoError(t, err)
	t.Cleanup(func() { sub.Close() })

	// A cluster node refuses CLIENT TRACKING nothing: a Cache over the
	// seed works (its keys all route there in a one-primary cluster).
	caopts := cache.Options{Options: copts, MaxBytes: 1 << 20}
	ca, err := cache.New(ctx, caopts)
	require.NoError(t, err)
	t.Cleanup(func() { ca.Close() })
	ccopts := cache.ClusterOptions{Options: caopts, Addrs: []string{addr}}
	cca, err := cache.NewCluster(ctx, ccopts)
	require.NoError(t, err)
	t.Cleanup(func() { cca.Close() })

	// The job system's faces hold the subscription's options.
	jcfg := jobs.ClientConfig{PubSub: copts}
	jc := jobs.NewClient(cc, jcfg)
	scfg := jobs.ServerConfig{Queues: map[string]int{"print": 1}, PubSub: copts}
	js, err := jobs.NewServer(ctx, cc, jobs.NewMux(), scfg)
	require.NoError(t, err)

	// A master set over one primary and one sentinel, both with passwords.
	set, err := servertest.StartSentinels(servertest.SentinelOptions{Replicas: 0, Sentinels: 1, Quorum: 1,
		Password: secret, SentinelPassword: secret})
	if err != nil {
		if servertest.InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Cleanup(set.Stop)
	sopts := sentinel.Options{MasterName: set.MasterName, Sentinels: set.SentinelAddrs(),
		SentinelPassword: secret, Options: conn.Options{Password: secret}}
	ms, err := sentinel.New(ctx, sopts)
	require.NoError(t, err)
	t.Cleanup(func() { ms.Close() })

	// Every holder of a password, by its package-qualified name.
	samples := map[string]any{
		"jobs.ClientConfig":    jcfg,
		"jobs.Client":          jc,
		"jobs.ServerConfig":    scfg,
		"jobs.Server":          js,
		"sentinel.Options":     sopts,
		"sentinel.MasterSet":   ms,
		"conn.Options":         copts,
		"conn.Conn":            c,
		"conn.Client":          cc,
		"cluster.Options":      copt,
		"cluster.Client":       cl,
		"pubsub.Options":       popts,
		"pubsub.Subscription":  sub,
		"cache.Options":        caopts,
		"cache.ClusterOptions": ccopts,
		"cache.Cache":          ca,
		"cache.ClusterCache":   cca,
	}
	for _, name := range holders {
		_, ok := samples[name]
		require.True(t, ok, "%s holds a password (found in the source) and is not printed by this test: add a sample of it, and make it redact", name)
	}
	verbs := []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%t", "%10.200v", "%-v"}
	leaks := []string{secret, hex.EncodeToString([]byte(secret)), strings.ToUpper(hex.EncodeToString([]byte(secret)))}
	for name, v := range samples {
		rv := reflect.ValueOf(v)
		typ := rv.Type()
		if typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		require.Equal(t, name, typeName(typ), "the sample of %s", name)
		require.True(t, holdsString(rv, secret, map[uintptr]bool{}, 0), "the sample of %s holds no password: the test would prove nothing", name)
		// The value and a pointer to it (for a pointer sample: the
		// pointer, and the struct it points to, held in a struct).
		forms := map[string]any{name: v}
		if rv.Kind() == reflect.Pointer {
			forms["[]*"+name] = []any{v}
		} else {
			p := reflect.New(rv.Type())
			p.Elem().Set(rv)
			forms["*"+name] = p.Interface()
			forms["[]"+name] = []any{v}
			forms["struct{"+name+"}"] = struct{ V any }{v}
		}
		for form, x := range forms {
			for _, verb := range verbs {
				out := fmt.Sprintf(verb, x)
				for _, leak := range leaks {
					require.NotContains(t, out, leak, "%s printed with %s shows the password: %s", form, verb, out)
				}
			}
		}
	}
}

// typeName is "pkg.Name" for a type of the module.
func typeName(t reflect.Type) string {
	pkg := strings.TrimPrefix(t.PkgPath(), modulePath+"/")
	return pkg[strings.LastIndexByte(pkg, '/')+1:] + "." + t.Name()
}

// holdsString reports whether v holds s anywhere: fields (unexported
// too), elements, map entries, through pointers and interfaces.
func holdsString(v reflect.Value, s string, seen map[uintptr]bool, depth int) bool {
	if !v.IsValid() || depth > 12 {
		return false
	}
	switch v.Kind() {
	case reflect.String:
		return v.String() == s
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return false
		}
		if v.Kind() == reflect.Pointer {
			if seen[v.Pointer()] {
				return false
			}
			seen[v.Pointer()] = true
		}
		return holdsString(v.Elem(), s, seen, depth+1)
	case reflect.Struct:
		for i := range v.NumField() {
			if holdsString(v.Field(i), s, seen, depth+1) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if holdsString(v.Index(i), s, seen, depth+1) {
				return true
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if holdsString(it.Value(), s, seen, depth+1) {
				return true
			}
		}
	}
	return false
}

// credentialHolders parses the module's packages and returns the
// exported types, "pkg.Name", of its importable packages (not internal,
// not main) that hold a password: a struct field named Password, or a
// field holding, by value (in an array, slice or map too, not through a
// pointer, interface, channel or function), a type of the module that
// holds one. Types of internal packages count for the holding, not for
// the list.
func credentialHolders(t *testing.T) []string {
	t.Helper()
	type typeDecl struct {
		expr    ast.Expr
		pkg     string            // import path
		imports map[string]string // file's import names → paths
		main    bool
	}
	decls := map[string]*typeDecl{} // import path + "." + name
	fset := token.NewFileSet()
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != moduleRoot && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			if path != moduleRoot {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
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
		rel, err := filepath.Rel(moduleRoot, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := modulePath
		if rel != "." {
			pkg += "/" + filepath.ToSlash(rel)
		}
		imports := map[string]string{}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			name := p[strings.LastIndexByte(p, '/')+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			imports[name] = p
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, spec := range g.Specs {
				ts := spec.(*ast.TypeSpec)
				decls[pkg+"."+ts.Name.Name] = &typeDecl{expr: ts.Type, pkg: pkg, imports: imports, main: f.Name.Name == "main"}
			}
		}
		return nil
	})
	require.NoError(t, err)

	// holds[k]: the type k holds a password. A fixed point over the
	// declarations: a type holds one when a field of it does.
	holds := map[string]bool{}
	var refers func(d *typeDecl, e ast.Expr) bool
	refers = func(d *typeDecl, e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.Ident:
			return holds[d.pkg+"."+e.Name]
		case *ast.SelectorExpr:
			if x, ok := e.X.(*ast.Ident); ok {
				return holds[d.imports[x.Name]+"."+e.Sel.Name]
			}
		case *ast.ParenExpr:
			return refers(d, e.X)
		case *ast.ArrayType:
			return refers(d, e.Elt)
		case *ast.MapType:
			return refers(d, e.Key) || refers(d, e.Value)
		case *ast.IndexExpr: // a generic type's instance
			return refers(d, e.X) || refers(d, e.Index)
		case *ast.IndexListExpr:
			if refers(d, e.X) {
				return true
			}
			for _, x := range e.Indices {
				if refers(d, x) {
					return true
				}
			}
		case *ast.StructType:
			for _, f := range e.Fields.List {
				for _, n := range f.Names {
					if n.Name == "Password" || n.Name == "password" {
						return true
					}
				}
				if refers(d, f.Type) {
					return true
				}
			}
		}
		return false // pointers, interfaces, channels, functions: fmt does not walk them below the top
	}
	for changed := true; changed; {
		changed = false
		for k, d := range decls {
			if !holds[k] && refers(d, d.expr) {
				holds[k], changed = true, true
			}
		}
	}
	var out []string
	for k, d := range decls {
		name := k[strings.LastIndexByte(k, '.')+1:]
		if !holds[k] || d.main || !ast.IsExported(name) || strings.Contains(d.pkg+"/", "/internal/") {
			continue
		}
		rel := strings.TrimPrefix(d.pkg, modulePath+"/")
		out = append(out, rel[strings.LastIndexByte(rel, '/')+1:]+"."+name)
	}
	sort.Strings(out)
	t.Logf("exported types that hold a password: %v", out)
	return out
}
