package cache_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq-go/cache"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
)

// srv is the package's server, with DEBUG for the expiry tests.
var srv *servertest.Server

func TestMain(m *testing.M) {
	os.Exit(servertest.Main(m, &srv, servertest.Options{Debug: true}))
}

// waitLong bounds what should end on its own: only a hang reaches it.
const waitLong = 30 * time.Second

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	t.Cleanup(cancel)
	return ctx
}

// protocols runs f under RESP3 (invalidations on the reading connection)
// and RESP2 (a redirect connection).
func protocols(t *testing.T, f func(t *testing.T, proto int)) {
	for _, p := range []int{3, 2} {
		t.Run("RESP"+strconv.Itoa(p), func(t *testing.T) { f(t, p) })
	}
}

// newCache flushes the package server and opens a Cache on addr (the
// package server when empty), closed at cleanup.
func newCache(t testing.TB, o cache.Options) *cache.Cache {
	t.Helper()
	servertest.Need(t, srv)
	if o.Addr == "" {
		srv.Flush(t)
		o.Addr = srv.Addr
	}
	if o.MinBackoff == 0 {
		o.MinBackoff = time.Millisecond
		o.MaxBackoff = 50 * time.Millisecond
	}
	c, err := cache.New(testCtx(t), o)
	if err != nil {
		t.Fatalf("cache.New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// must runs a command on s with the test helper's own client.
func must(t testing.TB, s *servertest.Server, args ...string) string {
	t.Helper()
	r, err := s.Do(args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return r
}

// get reads key through c and fails the test on error.
func get(t testing.TB, c *cache.Cache, key string) (string, bool) {
	t.Helper()
	v, ok, err := c.Get(testCtx(t), key, time.Hour)
	if err != nil {
		t.Fatalf("Get %s: %v", key, err)
	}
	return string(v), ok
}

// wantGet checks what a read of key through c returns.
func wantGet(t testing.TB, c *cache.Cache, key, want string) {
	t.Helper()
	v, ok := get(t, c, key)
	if want == "" && ok {
		t.Fatalf("Get %s = %q, want no key", key, v)
	}
	if want != "" && (!ok || v != want) {
		t.Fatalf("Get %s = %q (found %v), want %q", key, v, ok, want)
	}
}

// waitFor polls cond until it holds (servertest.Eventually: only a hang
// makes it fail).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	servertest.Eventually(t, what, cond)
}

// relay forwards one client connection to target and can hold what the
// server sends (hold, release), so that a test decides when a reply
// reaches the client: the in-flight race made deterministic.
type relay struct {
	target string
	ln     net.Listener

	mu      sync.Mutex
	held    bool
	pending []byte // server bytes held back
	client  net.Conn
	server  net.Conn
	wg      sync.WaitGroup
}

func newRelay(t testing.TB, target string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{target: target, ln: ln}
	r.wg.Add(1)
	go r.accept()
	t.Cleanup(r.close)
	return r
}

func (r *relay) addr() string { return r.ln.Addr().String() }

func (r *relay) accept() {
	defer r.wg.Done()
	for {
		cl, err := r.ln.Accept()
		if err != nil {
			return
		}
		sv, err := net.Dial("tcp", r.target)
		if err != nil {
			cl.Close()
			continue
		}
		r.mu.Lock()
		r.client, r.server = cl, sv
		r.mu.Unlock()
		r.wg.Add(2)
		go func() { defer r.wg.Done(); io.Copy(sv, cl); sv.Close() }()
		go func() { defer r.wg.Done(); r.down(cl, sv) }()
	}
}

func (r *relay) down(cl, sv net.Conn) {
	defer cl.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := sv.Read(buf)
		if n > 0 {
			r.mu.Lock()
			if r.held {
				r.pending = append(r.pending, buf[:n]...)
				r.mu.Unlock()
			} else {
				r.mu.Unlock()
				if _, werr := cl.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// hold keeps every server byte from now on until release.
func (r *relay) hold() {
	r.mu.Lock()
	r.held = true
	r.mu.Unlock()
}

// heldBytes returns the bytes held so far.
func (r *relay) heldBytes() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.pending)
}

// release forwards what was held and stops holding.
func (r *relay) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending) > 0 && r.client != nil {
		r.client.Write(r.pending)
	}
	r.pending, r.held = nil, false
}

func (r *relay) close() {
	r.ln.Close()
	r.mu.Lock()
	if r.client != nil {
		r.client.Close()
		r.server.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// firstThrough returns a Dialer that sends the first connection (the
// Cache's reading connection) to addr and every later one (the RESP2
// invalidation connection, redials) straight to the server.
func firstThrough(addr string) func(ctx context.Context, network, a string) (net.Conn, error) {
	return nthThrough(addr, 1)
}

// nthThrough returns a Dialer that sends the nth connection (from 1) to
// addr and every other one straight to the server.
func nthThrough(addr string, nth int) func(ctx context.Context, network, a string) (net.Conn, error) {
	var mu sync.Mutex
	n := 0
	return func(ctx context.Context, network, a string) (net.Conn, error) {
		mu.Lock()
		if n++; n == nth {
			a = addr
		}
		mu.Unlock()
		var d net.Dialer
		return d.DialContext(ctx, network, a)
	}
}

// clientID returns the id of the Cache's reading connection.
func clientID(t testing.TB, c *cache.Cache) string {
	t.Helper()
	v, err := c.Do(testCtx(t), "CLIENT", "ID")
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(v.Int)
}

// startServer starts a private server for one test.
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

var _ = conn.Options{}

// serverMillis returns the server's clock (TIME) in unix milliseconds:
// the clock a key's expiry (PEXPIRETIME) is kept on.
func serverMillis(t testing.TB, s *servertest.Server) int64 {
	t.Helper()
	sec, usec, _ := strings.Cut(must(t, s, "TIME"), "\n")
	n, err1 := strconv.ParseInt(sec, 10, 64)
	u, err2 := strconv.ParseInt(usec, 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("TIME = %q, %q", sec, usec)
	}
	return n*1000 + u/1000
}

// healthChecks returns a function that counts the INFO calls the server
// received since healthChecks was called, less its own: the health
// checks of the Cache under test (INFO commandstats on its reading
// connection), when nothing else sends INFO meanwhile.
func healthChecks(t testing.TB, s *servertest.Server) func() int {
	t.Helper()
	calls := func() int {
		out := must(t, s, "INFO", "commandstats")
		_, rest, ok := strings.Cut(out, "cmdstat_info:calls=")
		if !ok {
			return 0
		}
		n, _ := strconv.Atoi(rest[:strings.IndexAny(rest+",", ",")])
		return n
	}
	before, polls := calls(), 0
	return func() int {
		polls++ // the INFO calls of ours counted: before's and each earlier poll's
		return calls() - before - polls
	}
}
