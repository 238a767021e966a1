package conn_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/faultproxy"
	"github.com/echomq/echomq-go/internal/scriptpeer"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
)

// srv is the package's server: plain TCP, a unix socket, a TLS port and
// the DEBUG command.
var srv *servertest.Server

func TestMain(m *testing.M) {
	os.Exit(servertest.Main(m, &srv, servertest.Options{Unix: true, TLS: true, Debug: true}))
}

// waitLong bounds anything a test waits for that should end on its own:
// only a hang should reach it, however loaded the machine.
const waitLong = 30 * time.Second

// testCtx returns a context that ends after waitLong or at test cleanup.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	t.Cleanup(cancel)
	return ctx
}

// dial connects to addr (the package server when empty) with opts; the
// connection is closed at cleanup.
func dial(t testing.TB, opts conn.Options) *conn.Conn {
	t.Helper()
	servertest.Need(t, srv)
	if opts.Addr == "" && opts.Network == "" {
		opts.Addr = srv.Addr
	}
	c, err := conn.Dial(testCtx(t), opts)
	if err != nil {
		t.Fatalf("Dial %s: %v", opts, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// setup flushes the package server and dials it.
func setup(t testing.TB, opts conn.Options) *conn.Conn {
	t.Helper()
	servertest.Need(t, srv)
	srv.Flush(t)
	return dial(t, opts)
}

// startServer starts a private server for one test, stopped at cleanup.
func startServer(t testing.TB, opts servertest.Options) *servertest.Server {
	t.Helper()
	servertest.Need(t, srv)
	s, err := servertest.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	return s
}

// newProxy starts a fault proxy to target, closed at cleanup.
func newProxy(t testing.TB, target string) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// echo sends ECHO val and returns the reply's text.
func echo(ctx context.Context, s conn.Sender, val string) (string, error) {
	var buf [128]byte
	var got string
	err := s.DoFunc(ctx, resp.Command(buf[:0], "ECHO", val), func(v resp.Value) error {
		if v.Type != resp.BulkString {
			return fmt.Errorf("ECHO reply of type %v", v.Type)
		}
		got = string(v.Str)
		return nil
	})
	return got, err
}

// mustDo runs a command given as strings and fails the test on any error.
func mustDo(t testing.TB, c *conn.Conn, args ...string) resp.Value {
	t.Helper()
	v, err := c.Do(testCtx(t), anys(args)...)
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return v
}

// goroutines returns the current goroutine count, for leak checks.
func goroutines() int { return runtime.NumGoroutine() }

// checkNoLeak waits until no more than before+slack goroutines run, and
// fails with every stack when that does not happen within waitLong.
func checkNoLeak(t testing.TB, before, slack int) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		n := goroutines()
		if n <= before+slack {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("goroutine leak: %d before, %d after\n%s", before, n, buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// helloMap is a minimal RESP3 HELLO reply for fake peers.
const helloMap = "%1\r\n$5\r\nproto\r\n:3\r\n"

// peer starts a scripted fake server: it answers HELLO with helloMap and
// hands every later command to handle, which returns the raw bytes to
// write back (possibly none). It returns the address to dial.
func peer(t testing.TB, handle func(args []string, w io.Writer) error) string {
	return scriptpeer.Listen(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			args, err := scriptpeer.ReadCommand(r)
			if err != nil {
				return
			}
			if len(args) > 0 && strings.EqualFold(args[0], "HELLO") {
				if _, err := io.WriteString(c, helloMap); err != nil {
					return
				}
				continue
			}
			if handle(args, c) != nil {
				return
			}
		}
	})
}

// bulk encodes s as a RESP bulk string reply.
func bulk(s string) string { return string(resp.AppendBulkString(nil, s)) }

// waitDone waits for c.Done or fails the test.
func waitDone(t testing.TB, c *conn.Conn) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(waitLong):
		t.Fatal("connection's Done did not close")
	}
}

// needServer is servertest.Need for the package server.
func needServer(t testing.TB) {
	t.Helper()
	servertest.Need(t, srv)
}
