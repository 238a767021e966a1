package emq

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
)

// srv is the package's private server; tests that need it call
// servertest.Need first.
var srv *servertest.Server

func TestMain(m *testing.M) {
	code := servertest.Main(m, &srv, servertest.Options{})
	stopModuleServer()
	os.Exit(code)
}

// dial connects to srv, closed at the test's end.
func dial(t testing.TB) *conn.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // only against a hang
	defer cancel()
	c, err := conn.Dial(ctx, conn.Options{Addr: srv.Addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// fresh flushes srv and opens queue name on a new connection.
func fresh(t testing.TB, name string, opts ...Option) *Queue {
	t.Helper()
	servertest.Need(t, srv)
	srv.Flush(t)
	q, err := Open(context.Background(), dial(t), name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// tctx is a context for one test, bounded only against hangs.
func tctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// do runs a plain command on srv's own raw client.
func do(t testing.TB, args ...string) string {
	t.Helper()
	r, err := srv.Do(args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return r
}

// row reads a job row with HGETALL.
func row(t testing.TB, q *Queue, id string) map[string]string {
	t.Helper()
	flat := do(t, "HGETALL", q.keys.Job(id))
	m := map[string]string{}
	if flat == "" {
		return m
	}
	parts := strings.Split(flat, "\n")
	for i := 0; i+1 < len(parts); i += 2 {
		m[parts[i]] = parts[i+1]
	}
	return m
}

// score returns ZSCORE key id, "" when absent.
func score(t testing.TB, key, id string) string {
	t.Helper()
	return do(t, "ZSCORE", key, id)
}

// serverMillis reads the server's clock (TIME) in Unix ms.
func serverMillis(t testing.TB) int64 {
	t.Helper()
	parts := strings.Split(do(t, "TIME"), "\n")
	sec, _ := strconv.ParseInt(parts[0], 10, 64)
	usec, _ := strconv.ParseInt(parts[1], 10, 64)
	return sec*1000 + usec/1000
}

// scoreInt parses a ZSCORE.
func scoreInt(t testing.TB, key, id string) int64 {
	t.Helper()
	s := score(t, key, id)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("ZSCORE %s %s = %q", key, id, s)
	}
	return int64(f)
}

// sentCommands sums the calls of every command in INFO commandstats except
// the INFO and CONFIG the test itself sends.
func sentCommands(t testing.TB) int64 {
	t.Helper()
	var n int64
	for line := range strings.Lines(do(t, "INFO", "commandstats")) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_")
		if !ok || strings.HasPrefix(rest, "info:") || strings.HasPrefix(rest, "config") {
			continue
		}
		_, fields, _ := strings.Cut(rest, ":")
		for f := range strings.SplitSeq(fields, ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				c, _ := strconv.ParseInt(v, 10, 64)
				n += c
			}
		}
	}
	return n
}
