package pipeline_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
)

var srv *servertest.Server

func TestMain(m *testing.M) {
	os.Exit(servertest.Main(m, &srv, servertest.Options{}))
}

// testCtx returns a context that ends after 30 s (only a hang gets there)
// or at test cleanup.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// setup flushes the server and dials it with opts; the connection is
// closed at cleanup.
func setup(t testing.TB, opts conn.Options) *conn.Conn {
	t.Helper()
	servertest.Need(t, srv)
	srv.Flush(t)
	if opts.Addr == "" {
		opts.Addr = srv.Addr
	}
	c, err := conn.Dial(testCtx(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
