package pubsub_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pubsub"
)

// srv is the package's server.
var srv *servertest.Server

func TestMain(m *testing.M) {
	os.Exit(servertest.Main(m, &srv, servertest.Options{}))
}

// waitLong bounds anything a test waits for that should end on its own.
const waitLong = 30 * time.Second

// testCtx returns a context that ends after waitLong or at cleanup.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	t.Cleanup(cancel)
	return ctx
}

// newSub connects a Subscription to addr (the package server when
// empty), closed at cleanup.
func newSub(t testing.TB, opts pubsub.Options) *pubsub.Subscription {
	t.Helper()
	servertest.Need(t, srv)
	if opts.Addr == "" {
		opts.Addr = srv.Addr
	}
	s, err := pubsub.New(testCtx(t), opts)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// newClient connects a conn.Client to addr for publishing, closed at
// cleanup.
func newClient(t testing.TB, addr string) *conn.Client {
	t.Helper()
	cl, err := conn.NewClient(testCtx(t), conn.Options{
		Addr:       addr,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 100 * time.Millisecond,
	})
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	return cl
}

// startServer starts a private server for one test, stopped at cleanup.
func startServer(t testing.TB, opts servertest.Options) *servertest.Server {
	t.Helper()
	servertest.Need(t, srv)
	s, err := servertest.Start(opts)
	require.NoError(t, err)
	t.Cleanup(func() { s.Stop() })
	return s
}

// receive takes the next message, failing the test on an error.
func receive(t testing.TB, s *pubsub.Subscription) pubsub.Message {
	t.Helper()
	m, err := s.Receive(testCtx(t))
	require.NoError(t, err)
	return m
}

// seq reads a payload written by strconv.Itoa.
func seq(t testing.TB, m pubsub.Message) int {
	t.Helper()
	n, err := strconv.Atoi(string(m.Payload))
	require.NoError(t, err, "payload %q", m.Payload)
	return n
}

// eventually polls cond every few milliseconds until it holds
// (servertest.Eventually: only a hang makes it fail).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	servertest.Eventually(t, what, cond)
}

// numsub returns how many subscribers the server counts for a channel
// (kind "" for channels, "SHARD" for sharded ones).
func numsub(t testing.TB, s *servertest.Server, kind, channel string) string {
	t.Helper()
	out, err := s.Do("PUBSUB", kind+"NUMSUB", channel)
	require.NoError(t, err)
	return out // "channel\ncount"
}

// goroutines returns the number of goroutines.
func goroutines() int { return runtime.NumGoroutine() }

// checkNoLeak waits until no more than before goroutines run.
func checkNoLeak(t testing.TB, before int) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	eventually(t, "no goroutine leaked", func() bool {
		if n := runtime.NumGoroutine(); n > before && time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutine leak: %d before, %d after\n%s", before, n, buf[:runtime.Stack(buf, true)])
		}
		return runtime.NumGoroutine() <= before
	})
}

// servertestOptions are the options of a private server.
func servertestOptions() servertest.Options { return servertest.Options{} }
