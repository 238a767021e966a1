package dispatch_test

import (
	"context"
	_ "embed"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/internal/servertest"
)

var srv *servertest.Server

func TestMain(m *testing.M) {
	os.Exit(servertest.Main(m, &srv, servertest.Options{}))
}

// enqueueLua is the core enqueue transition of PROTOCOL.md (a copy of
// emq/scripts/enqueue.lua, so these tests do not depend on package emq).
//
//go:embed testdata/enqueue.lua
var enqueueLua string

var (
	enqueue = dispatch.NewScript("enqueue", enqueueLua)
	echo    = dispatch.NewScript("echo", "return ARGV[1]")
	echo2   = dispatch.NewScript("echo2", "return {ARGV[1], 'two'}")
)

// ready flushes the server, resets its statistics and returns a fresh
// connection, closed at cleanup.
func ready(t testing.TB) *conn.Conn {
	t.Helper()
	servertest.Need(t, srv)
	srv.Flush(t)
	srv.ResetStats(t)
	return dial(t, srv.Addr)
}

func dial(t testing.TB, addr string) *conn.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // only against a hang
	defer cancel()
	c, err := conn.Dial(ctx, conn.Options{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// loads returns how many SCRIPT LOADs the server ran since ResetStats.
func loads(t testing.TB) int64 {
	t.Helper()
	return srv.CommandCalls(t, "script|load")
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// jobID returns a JOB-namespaced 14-byte id for n (not a real snowflake,
// but the right shape and unique per n).
func jobID(n int) string {
	s := strconv.FormatInt(int64(n), 36)
	for len(s) < 11 {
		s = "0" + s
	}
	return "JOB" + s
}

func timeAfterMilli() <-chan time.Time { return time.After(time.Millisecond) }

func itoa(n int) string { return strconv.Itoa(n) }

func gomaxprocs() int { return runtime.GOMAXPROCS(0) }
