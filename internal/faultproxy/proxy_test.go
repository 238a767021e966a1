package faultproxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/internal/servertest"
)

var srv *servertest.Server

func TestMain(m *testing.M) {
	os.Exit(servertest.Main(m, &srv, servertest.Options{}))
}

const ping = "*1\r\n$4\r\nPING\r\n"

// setup flushes the server and starts a proxy to it, closed at cleanup.
func setup(t *testing.T) *Proxy {
	t.Helper()
	servertest.Need(t, srv)
	srv.Flush(t)
	p, err := New(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// dial opens a client connection through the proxy.
func dial(t *testing.T, p *Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(hangGuard))
	return c, bufio.NewReader(c)
}

// send writes raw bytes to c.
func send(t *testing.T, c net.Conn, s string) {
	t.Helper()
	if _, err := io.WriteString(c, s); err != nil {
		t.Fatal(err)
	}
}

// expect reads exactly len(want) bytes and compares them.
func expect(t *testing.T, r io.Reader, want string) {
	t.Helper()
	got := make([]byte, len(want))
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatalf("reading %q: got %q, %v", want, got, err)
	}
	if string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// expectEOF asserts the proxy closed the connection with nothing more.
func expectEOF(t *testing.T, r io.Reader) {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		t.Fatalf("want EOF, got %v", err)
	}
	if len(b) != 0 {
		t.Fatalf("want EOF, got %q more", b)
	}
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// hangGuard bounds a test's waits: only a hang should reach it, however
// loaded the machine.
const hangGuard = 30 * time.Second

// eventually polls cond until it holds; only a hang makes it fail.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	servertest.Eventually(t, what, cond)
}

func TestPassThrough(t *testing.T) {
	p := setup(t)
	c, r := dial(t, p)
	send(t, c, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n")
	expect(t, r, "+OK\r\n")
	send(t, c, "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
	expect(t, r, "$5\r\nhello\r\n")
	if p.Conns() != 1 {
		t.Fatalf("Conns = %d", p.Conns())
	}
	// The counters move just after each write, so the client may be first.
	eventually(t, "BytesDown 16, BytesUp 51", func() bool {
		return p.BytesDown() == 5+11 && p.BytesUp() == 31+20
	})
}

func TestCutDownAfter(t *testing.T) {
	p := setup(t)
	if _, err := srv.Do("SET", "k", strings.Repeat("v", 100)); err != nil {
		t.Fatal(err)
	}
	p.Set(Mode{CutDownAfter: 10})
	c, r := dial(t, p)
	send(t, c, "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
	expect(t, r, "$100\r\nvvvv") // 10 bytes, then the cut
	expectEOF(t, r)
	eventually(t, "the pair to go", func() bool { return p.Conns() == 0 })
	if p.BytesDown() != 10 {
		t.Fatalf("BytesDown = %d, want 10", p.BytesDown())
	}
}

func TestCutDownLive(t *testing.T) {
	p := setup(t)
	c, r := dial(t, p)
	send(t, c, ping)
	expect(t, r, "+PONG\r\n")
	p.Set(Mode{CutDownAfter: 9}) // counts from the connection's start: 7 sent
	send(t, c, ping)
	expect(t, r, "+P")
	expectEOF(t, r)
}

func TestCutUpAfter(t *testing.T) {
	p := setup(t)
	srv.ResetStats(t)
	p.Set(Mode{CutUpAfter: 5})
	c, r := dial(t, p)
	send(t, c, ping)
	expectEOF(t, r)
	if p.BytesUp() != 5 {
		t.Fatalf("BytesUp = %d, want 5", p.BytesUp())
	}
	if n := srv.CommandCalls(t, "ping"); n != 0 {
		t.Fatalf("server ran PING %d times from a cut command", n)
	}
}

func TestByteAtATime(t *testing.T) {
	p := setup(t)
	val := strings.Repeat("x", 1000)
	if _, err := srv.Do("SET", "k", val); err != nil {
		t.Fatal(err)
	}
	p.Set(Mode{ByteAtATime: true})
	c, r := dial(t, p)
	send(t, c, "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
	want := "$1000\r\n" + val + "\r\n"
	expect(t, r, want)
	eventually(t, "one write per byte", func() bool {
		return p.downWrites.Load() == int64(len(want))
	})
}

// The stall comes after StallDownAfter bytes, lasts at least Stall, and
// happens once per connection. What must not be stalled is checked under a
// stall of an hour: were it stalled, the read would hit the connection's
// deadline and fail, so no bound on the machine's speed is involved.
func TestStall(t *testing.T) {
	p := setup(t)
	// The bytes before the stall point are not held back.
	p.Set(Mode{StallDownAfter: 3, Stall: time.Hour})
	c, r := dial(t, p)
	send(t, c, ping)
	expect(t, r, "+PO")
	c.Close() // ends the hour's stall

	// The rest comes only after the stall.
	p.Set(Mode{StallDownAfter: 3, Stall: 300 * time.Millisecond})
	c, r = dial(t, p)
	start := time.Now()
	send(t, c, ping)
	expect(t, r, "+PO")
	expect(t, r, "NG\r\n")
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("rest came after %v, want the 300ms stall", d)
	}
	// Once per connection: this connection's stall is spent, so a stall
	// of an hour from the first byte leaves it alone.
	p.Set(Mode{Stall: time.Hour})
	send(t, c, ping)
	expect(t, r, "+PONG\r\n")
}

func TestStallInterruptedByCut(t *testing.T) {
	p := setup(t)
	p.Set(Mode{Stall: time.Hour})
	c, r := dial(t, p)
	send(t, c, ping)
	eventually(t, "the reply's stall", func() bool { return p.Stalls() == 1 })
	p.CutAll()
	expectEOF(t, r)
}

func TestLatency(t *testing.T) {
	p := setup(t)
	p.Set(Mode{Latency: 100 * time.Millisecond})
	c, r := dial(t, p)
	start := time.Now()
	send(t, c, ping)
	expect(t, r, "+PONG\r\n")
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("round trip %v, want ≥ 200ms (100ms each way)", d)
	}
}

func TestCutAll(t *testing.T) {
	p := setup(t)
	var readers []*bufio.Reader
	for range 3 {
		c, r := dial(t, p)
		send(t, c, ping)
		expect(t, r, "+PONG\r\n")
		readers = append(readers, r)
	}
	if p.Conns() != 3 {
		t.Fatalf("Conns = %d", p.Conns())
	}
	p.CutAll()
	for _, r := range readers {
		expectEOF(t, r)
	}
	eventually(t, "Conns = 0", func() bool { return p.Conns() == 0 })
	c, r := dial(t, p) // the proxy still accepts
	send(t, c, ping)
	expect(t, r, "+PONG\r\n")
}

func TestWrites(t *testing.T) {
	p := setup(t)
	c, r := dial(t, p)
	send(t, c, strings.Repeat(ping, 10)) // one batch
	expect(t, r, strings.Repeat("+PONG\r\n", 10))
	if w := p.Writes(); w != 1 {
		t.Fatalf("Writes = %d after one batched write", w)
	}
	for range 10 { // ten round trips
		send(t, c, ping)
		expect(t, r, "+PONG\r\n")
	}
	if w := p.Writes(); w != 11 {
		t.Fatalf("Writes = %d, want 11", w)
	}
}

func TestClose(t *testing.T) {
	p := setup(t)
	c, r := dial(t, p)
	send(t, c, ping)
	expect(t, r, "+PONG\r\n")
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	expectEOF(t, r)
	if p.Conns() != 0 {
		t.Fatalf("Conns = %d after Close", p.Conns())
	}
	if c2, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		c2.Close()
		t.Fatal("dial succeeded after Close")
	}
}

func TestTargetDown(t *testing.T) {
	servertest.Need(t, srv)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	p, err := New(dead)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, r := dial(t, p)
	expectEOF(t, r)
}

// Sever closes the server side only: the server forgets the connection,
// while the client sees neither an end nor a reply, and what it sends is
// dropped; CutAll still ends it, and new connections are forwarded.
func TestSever(t *testing.T) {
	p := setup(t)
	c, r := dial(t, p)
	send(t, c, "*2\r\n$6\r\nCLIENT\r\n$2\r\nID\r\n")
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, ":") {
		t.Fatalf("CLIENT ID: %q, %v", line, err)
	}
	id := strings.TrimSpace(line[1:])
	p.Sever()
	eventually(t, "the server to drop the connection", func() bool {
		list, err := srv.Do("CLIENT", "LIST", "ID", id)
		return err == nil && list == ""
	})
	send(t, c, ping) // accepted and dropped: no error, no reply
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if b, err := r.ReadByte(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("after Sever the client read %q, %v; want nothing (a deadline)", b, err)
	}
	if p.Conns() != 1 {
		t.Fatalf("Conns = %d; the severed connection is still the client's", p.Conns())
	}
	c2, r2 := dial(t, p)
	send(t, c2, ping)
	expect(t, r2, "+PONG\r\n")
	_ = c.SetReadDeadline(time.Now().Add(hangGuard))
	p.CutAll()
	expectEOF(t, r)
	eventually(t, "Conns = 0", func() bool { return p.Conns() == 0 })
}
