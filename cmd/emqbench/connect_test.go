package main

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/internal/servertest"
)

// exit2 runs the command with args and requires exit 2, nothing on
// stdout and one line on stderr holding every one of want and none of
// notWant.
func exit2(t *testing.T, args []string, want []string, notWant ...string) {
	t.Helper()
	code, out, errs := runArgs(args...)
	if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "emqbench: ") {
		t.Fatalf("%q: exit %d, stdout %q, stderr %q; want 2 and one line", args, code, out, errs)
	}
	for _, w := range want {
		if !strings.Contains(errs, w) {
			t.Errorf("%q: stderr %q lacks %q", args, errs, w)
		}
	}
	for _, w := range notWant {
		if strings.Contains(errs, w) {
			t.Errorf("%q: stderr %q holds %q", args, errs, w)
		}
	}
}

// A wrong or missing password says that authentication failed, not that
// the node cannot be reached, and never shows the password.
func TestAuthFailed(t *testing.T) {
	servertest.Need(t, srv)
	s, err := servertest.Start(servertest.Options{Password: "right-pw-123"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	exit2(t, []string{"-url", "redis://:wrong-pw-456@" + s.Addr, "-n", "10", "ping"},
		[]string{"authentication failed at " + s.Addr, "wrong user name or password"}, "cannot reach", "wrong-pw-456")
	exit2(t, []string{"-url", "redis://" + s.Addr, "-n", "10", "ping"},
		[]string{"authentication failed at " + s.Addr, "wants a password and none was given"}, "cannot reach")
	if code, _, errs := runArgs("-url", "redis://:right-pw-123@"+s.Addr, "-n", "10", "ping"); code != exitOK {
		t.Fatalf("the right password: exit %d, stderr %q", code, errs)
	}
}

// A database the server does not have is named as such.
func TestNoSuchDatabase(t *testing.T) {
	servertest.Need(t, srv)
	exit2(t, []string{"-url", "redis://" + srv.Addr + "/99", "-n", "10", "ping"},
		[]string{"no such database at " + srv.Addr, "database 99"}, "cannot reach")
}

// A listener that is not Redis/Valkey (an HTTP server on the wrong
// port) is called that, not a frame offset.
func TestNotRedis(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { l.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			c.Read(make([]byte, 512))
			c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			c.Close()
		}
	}()
	addr := l.Addr().String()
	exit2(t, []string{"-url", "redis://" + addr, "ping"}, []string{"not a Redis/Valkey server? " + addr}, "frame offset", "cannot reach")
}

// A URL without a scheme gets the redis:// form to use; one that may
// hold a password is not echoed.
func TestURLWithoutScheme(t *testing.T) {
	exit2(t, []string{"-url", "127.0.0.1:6379", "ping"}, []string{"-url: ", "did you mean redis://127.0.0.1:6379?"})
	exit2(t, []string{"-url", "localhost:6379", "gate"}, []string{"did you mean redis://localhost:6379?"}, "want \"//\"")
	exit2(t, []string{"-url", ":pw-9876@localhost:6379", "ping"}, []string{"begin it with redis://"}, "pw-9876")
}
