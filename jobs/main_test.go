package jobs

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/servertest"
)

// srv is the package's private server.
var srv *servertest.Server

func TestMain(m *testing.M) {
	os.Exit(servertest.Main(m, &srv, servertest.Options{}))
}

// dial connects to srv, closed at the test's end.
func dial(t testing.TB) *conn.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := conn.Dial(ctx, conn.Options{Addr: srv.Addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// fresh flushes srv and returns a connection to it.
func fresh(t testing.TB) *conn.Conn {
	t.Helper()
	servertest.Need(t, srv)
	srv.Flush(t)
	return dial(t)
}

// tctx is a test's context, bounded only against hangs.
func tctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// pubsubOpts are the options of the test server's subscriptions.
func pubsubOpts() conn.Options { return conn.Options{Addr: srv.Addr} }

// newClient returns a Client over c that can Wait.
func newClient(t testing.TB, c conn.Sender) *Client {
	cl := NewClient(c, ClientConfig{PubSub: pubsubOpts()})
	t.Cleanup(func() { cl.Close() })
	return cl
}

// start makes and starts a server, shut down at the test's end.
func start(t testing.TB, c conn.Sender, h Handler, cfg ServerConfig) *Server {
	t.Helper()
	s, err := NewServer(tctx(t), c, h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return s
}

// openQueue opens a plain emq queue on c.
func openQueue(t testing.TB, c conn.Sender, name string, opts ...emq.Option) *emq.Queue {
	t.Helper()
	q, err := emq.Open(tctx(t), c, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// row reads a job row.
func row(t testing.TB, q *emq.Queue, id string) emq.JobRow {
	t.Helper()
	r, _, err := q.Row(tctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// recv waits for one value of ch, failing the test after 20 s.
func recv[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatal("timed out waiting")
		panic("unreachable")
	}
}
