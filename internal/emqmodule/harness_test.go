package emqmodule

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
)

// The package's two servers: scr runs only the scripts, nat loads the
// module. Started on first use by pair, stopped by TestMain.
var (
	pairOnce sync.Once
	pairErr  error
	scrSrv   *servertest.Server
	natSrv   *servertest.Server
	stops    []func()
	stopsMu  sync.Mutex
)

func TestMain(m *testing.M) {
	code := m.Run()
	stopsMu.Lock()
	for _, f := range stops {
		f()
	}
	stopsMu.Unlock()
	os.Exit(code)
}

func atExit(f func()) {
	stopsMu.Lock()
	stops = append(stops, f)
	stopsMu.Unlock()
}

// startServerArgs starts a server (with the module at so, loaded with args, when so is set),
// stopped when the package's tests end.
func startServerArgs(t testing.TB, so string, opts servertest.Options, args []string) *servertest.Server {
	t.Helper()
	var s *servertest.Server
	var err error
	if so != "" {
		s, err = Start(so, opts, args...)
	} else {
		s, err = servertest.Start(opts)
	}
	if errors.Is(err, servertest.ErrNoServer) && !servertest.InCI() {
		t.Skip(servertest.SkipMessage)
	}
	if err != nil {
		t.Fatal(err)
	}
	atExit(func() { s.Stop() })
	return s
}

// pair returns the script server and the module server.
func pair(t testing.TB) (scr, nat *servertest.Server) {
	t.Helper()
	so := Need(t, "")
	pairOnce.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				pairErr = fmt.Errorf("%v", r)
			}
		}()
		var err error
		if scrSrv, err = servertest.Start(servertest.Options{}); err != nil {
			pairErr = err
			return
		}
		atExit(func() { scrSrv.Stop() })
		if natSrv, err = Start(so, servertest.Options{}); err != nil {
			pairErr = err
			return
		}
		atExit(func() { natSrv.Stop() })
	})
	if errors.Is(pairErr, servertest.ErrNoServer) && !servertest.InCI() {
		t.Skip(servertest.SkipMessage)
	}
	if pairErr != nil {
		t.Fatal(pairErr)
	}
	return scrSrv, natSrv
}

// side is one server of a comparison and how it runs a transition.
type side struct {
	name   string
	c      *conn.Conn
	native bool // EMQ.* commands, else EVALSHA
	shas   map[string]string
}

func tctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // only against a hang
	t.Cleanup(cancel)
	return ctx
}

// newSide connects to addr, flushes it, sets the fence and loads the
// scripts.
func newSide(t testing.TB, name, addr string, native bool) *side {
	return newSideProto(t, name, addr, native, envInt("EMQ_RESP", 3))
}

// newSideProto is newSide speaking RESP proto (2 or 3).
func newSideProto(t testing.TB, name, addr string, native bool, proto int) *side {
	t.Helper()
	ctx := tctx(t)
	c, err := conn.Dial(ctx, conn.Options{Addr: addr, Protocol: proto})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := &side{name: name, c: c, native: native, shas: map[string]string{}}
	s.must(t, "FLUSHALL")
	s.must(t, "SET", emq.VersionKey, emq.Version)
	for _, sc := range emq.Scripts() {
		v, err := c.Do(ctx, "SCRIPT", "LOAD", sc.Source)
		if err != nil {
			t.Fatal(err)
		}
		s.shas[sc.Name] = v.Text()
	}
	return s
}

// newSideNoFlush connects to addr and changes nothing (a replica).
func newSideNoFlush(t testing.TB, name, addr string) *side {
	t.Helper()
	c, err := conn.Dial(tctx(t), conn.Options{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &side{name: name, c: c, shas: map[string]string{}}
}

func (s *side) must(t testing.TB, args ...string) resp.Value {
	t.Helper()
	v, err := s.c.Do(context.Background(), anys(args)...)
	if err != nil {
		t.Fatalf("%s: %q: %v", s.name, args, err)
	}
	return v
}

// raw sends a command; an error reply is returned as its Value.
func (s *side) raw(t testing.TB, args ...string) resp.Value {
	t.Helper()
	v, err := s.c.Do(context.Background(), anys(args)...)
	if err != nil {
		var se *resp.ServerError
		if !errors.As(err, &se) {
			t.Fatalf("%s: %q: %v", s.name, args, err)
		}
	}
	return v
}

// run sends transition name with keys and args, natively when native is
// set, else by EVALSHA; an error reply is returned as its Value.
func (s *side) run(t testing.TB, native bool, name string, keys, args []string) resp.Value {
	t.Helper()
	cmd := make([]string, 0, 2+len(keys)+len(args))
	if native {
		cmd = append(cmd, "EMQ."+strings.ToUpper(name))
	} else {
		cmd = append(cmd, "EVALSHA", s.shas[name])
	}
	cmd = append(cmd, strconv.Itoa(len(keys)))
	cmd = append(cmd, keys...)
	cmd = append(cmd, args...)
	v, err := s.c.Do(context.Background(), anys(cmd)...)
	if err != nil {
		var se *resp.ServerError
		if !errors.As(err, &se) {
			t.Fatalf("%s: %s: %v", s.name, name, err)
		}
	}
	return v
}

// render writes v with its type, so that nil, "" and 0 differ.
func render(v resp.Value) string {
	var b strings.Builder
	renderTo(&b, v)
	return b.String()
}

func renderTo(b *strings.Builder, v resp.Value) {
	switch v.Type {
	case resp.Integer:
		fmt.Fprintf(b, "%d", v.Int)
	case resp.Null:
		b.WriteString("nil")
	case resp.Error, resp.BulkError:
		fmt.Fprintf(b, "ERR(%q)", v.Str)
	case resp.Array, resp.Set, resp.Push:
		b.WriteByte('[')
		for i, e := range v.Elems {
			if i > 0 {
				b.WriteByte(' ')
			}
			renderTo(b, e)
		}
		b.WriteByte(']')
	default:
		fmt.Fprintf(b, "%q", v.Str)
	}
}

// dump renders every key of s's dataset: its type, its fields, members and
// scores, and whether it expires. Scores other than 0 are rendered relative
// to the server's clock, in units of unit ms.
func (s *side) dump(t testing.TB) map[string]string {
	t.Helper()
	now := s.now(t)
	out := map[string]string{}
	cursor := "0"
	for {
		v := s.must(t, "SCAN", cursor, "COUNT", "1000")
		cursor = v.Elems[0].Text()
		for _, k := range v.Elems[1].Elems {
			key := k.Text()
			out[key] = s.dumpKey(t, key, now)
		}
		if cursor == "0" {
			break
		}
	}
	return out
}

func (s *side) now(t testing.TB) int64 {
	v := s.must(t, "TIME")
	sec, _ := strconv.ParseInt(v.Elems[0].Text(), 10, 64)
	us, _ := strconv.ParseInt(v.Elems[1].Text(), 10, 64)
	return sec*1000 + us/1000
}

func (s *side) dumpKey(t testing.TB, key string, now int64) string {
	typ := s.must(t, "TYPE", key).Text()
	var b strings.Builder
	b.WriteString(typ)
	switch typ {
	case "string":
		fmt.Fprintf(&b, " %q", s.must(t, "GET", key).Str)
	case "hash":
		v := s.must(t, "HGETALL", key)
		var kv []string
		for i := 0; i+1 < len(v.Elems); i += 2 {
			kv = append(kv, fmt.Sprintf("%q=%q", v.Elems[i].Str, v.Elems[i+1].Str))
		}
		sort.Strings(kv)
		b.WriteString(" " + strings.Join(kv, " "))
	case "zset":
		v := s.must(t, "ZRANGE", key, "0", "-1", "WITHSCORES")
		for i := 0; i+1 < len(v.Elems); i += 2 {
			fmt.Fprintf(&b, " %q@%s", v.Elems[i].Str, scoreClass(v.Elems[i+1].Text(), now))
		}
	}
	if ttl := s.must(t, "PTTL", key).Int; ttl >= 0 {
		fmt.Fprintf(&b, " ttl~%s", timeClass(float64(ttl)))
	}
	return b.String()
}

// scoreClass renders a score: 0 as itself, a time as its distance from
// now, coarsely (the two servers run the same call a little apart).
func scoreClass(text string, now int64) string {
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return "bad:" + text
	}
	if f == 0 {
		return "0"
	}
	return "now" + timeClass(f-float64(now))
}

// timeClass buckets a duration in ms: within 10 minutes of zero is "~0";
// further off, its order of magnitude and leading digit.
func timeClass(d float64) string {
	if d > -600_000 && d < 600_000 {
		return "~0"
	}
	sign := "+"
	if d < 0 {
		sign, d = "-", -d
	}
	e := 0
	for d >= 10 {
		d /= 10
		e++
	}
	return fmt.Sprintf("%s%de%d", sign, int(d+0.05), e)
}

// diffDumps reports the keys whose renderings differ.
func diffDumps(a, b map[string]string) []string {
	var out []string
	for k, va := range a {
		if vb, ok := b[k]; !ok {
			out = append(out, fmt.Sprintf("%q only on the first: %s", k, va))
		} else if va != vb {
			out = append(out, fmt.Sprintf("%q: %s", k, tokenDiff(va, vb)))
		}
	}
	for k, vb := range b {
		if _, ok := a[k]; !ok {
			out = append(out, fmt.Sprintf("%q only on the second: %s", k, vb))
		}
	}
	sort.Strings(out)
	return out
}

// tokenDiff shows what two renderings do not share, token by token.
func tokenDiff(a, b string) string {
	if len(a)+len(b) < 400 {
		return fmt.Sprintf("\n  %s\n  %s", a, b)
	}
	count := map[string]int{}
	for _, f := range strings.Fields(a) {
		count[f]++
	}
	for _, f := range strings.Fields(b) {
		count[f]--
	}
	var only []string
	for f, n := range count {
		if n > 0 {
			only = append(only, "first:"+f)
		} else if n < 0 {
			only = append(only, "second:"+f)
		}
	}
	sort.Strings(only)
	return strings.Join(only, " ")
}

// anys is args as Do takes them.
func anys(args []string) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out
}
