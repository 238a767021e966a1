package servertest

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

var srv *Server

func TestMain(m *testing.M) {
	os.Exit(Main(m, &srv, Options{Debug: true}))
}

// start starts a private server for one test and stops it at cleanup.
func start(t *testing.T, opts Options) *Server {
	t.Helper()
	Need(t, srv) // skips like everything else when no binary exists
	s, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// alive reports whether a process with pid exists.
func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

func TestServerFields(t *testing.T) {
	Need(t, srv)
	if !strings.HasPrefix(srv.Addr, "127.0.0.1:") || srv.Port == 0 {
		t.Fatalf("Addr %q Port %d", srv.Addr, srv.Port)
	}
	if srv.Name != "redis" && srv.Name != "valkey" {
		t.Fatalf("Name %q", srv.Name)
	}
	if srv.major() < 6 {
		t.Fatalf("Version %q", srv.Version)
	}
	info, err := srv.Do("INFO", "server")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, "process_id:") || !strings.Contains(info, srv.Version) {
		t.Fatalf("INFO server does not mention version %s:\n%s", srv.Version, info)
	}
	t.Logf("%s %s at %s (pid %d, %s)", srv.Name, srv.Version, srv.Addr, srv.Pid(), srv.Bin)
}

func TestDoReplies(t *testing.T) {
	Need(t, srv)
	srv.Flush(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, "PONG"},
		{[]string{"SET", "k", "v\r\nwith crlf"}, "OK"},
		{[]string{"GET", "k"}, "v\r\nwith crlf"},
		{[]string{"GET", "missing"}, ""},
		{[]string{"INCRBY", "n", "-42"}, "-42"},
		{[]string{"RPUSH", "l", "a", "b", ""}, "3"},
		{[]string{"LRANGE", "l", "0", "-1"}, "a\nb\n"},
		{[]string{"LRANGE", "missing", "0", "-1"}, ""},
		{[]string{"EVAL", "return {1, 'x', {2, 3}}", "0"}, "1\nx\n2\n3"},
		{[]string{"SET", "big", strings.Repeat("z", 100_000)}, "OK"},
		{[]string{"STRLEN", "big"}, "100000"},
	}
	for _, c := range cases {
		got, err := srv.Do(c.args...)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if got != c.want {
			t.Fatalf("%v = %q, want %q", c.args[:1], got, c.want)
		}
	}
}

func TestDoServerError(t *testing.T) {
	Need(t, srv)
	_, err := srv.Do("NOSUCHCOMMAND", "x")
	var re Error
	if !errors.As(err, &re) || !strings.HasPrefix(re.Error(), "ERR unknown command") {
		t.Fatalf("err = %v (%T)", err, err)
	}
	_, err = srv.Do("EVAL", "return redis.error_reply('EMQKIND detail')", "0")
	if err == nil || err.Error() != "EMQKIND detail" {
		t.Fatalf("err = %v, want the server's text byte for byte", err)
	}
}

func TestCommandCalls(t *testing.T) {
	Need(t, srv)
	srv.ResetStats(t)
	if n := srv.CommandCalls(t, "script|load"); n != 0 {
		t.Fatalf("after reset: %d calls", n)
	}
	for range 3 {
		if _, err := srv.Do("SCRIPT", "LOAD", "return 1"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := srv.Do("SET", "a", "1"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"script|load", "SCRIPT LOAD", "Script|Load"} {
		if n := srv.CommandCalls(t, name); n != 3 {
			t.Fatalf("CommandCalls(%q) = %d, want 3", name, n)
		}
	}
	if n := srv.CommandCalls(t, "set"); n != 1 {
		t.Fatalf("CommandCalls(set) = %d, want 1", n)
	}
	if n := srv.CommandCalls(t, "hgetall"); n != 0 {
		t.Fatalf("CommandCalls(hgetall) = %d, want 0", n)
	}
}

func TestParseCalls(t *testing.T) {
	info := "# Commandstats\r\n" +
		"cmdstat_script:calls=7,usec=3,usec_per_call=0.43\r\n" +
		"cmdstat_script|load:calls=5,usec=20,usec_per_call=4.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_set:calls=12,usec=9\r\n"
	for name, want := range map[string]int64{"script|load": 5, "script": 7, "set": 12, "get": 0} {
		got, err := parseCalls(info, name)
		if err != nil || got != want {
			t.Fatalf("parseCalls(%q) = %d, %v; want %d", name, got, err, want)
		}
	}
}

func TestFlush(t *testing.T) {
	Need(t, srv)
	sha, err := srv.Do("SCRIPT", "LOAD", "return 2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do("SET", "x", "1"); err != nil {
		t.Fatal(err)
	}
	srv.Flush(t)
	if n, _ := srv.Do("DBSIZE"); n != "0" {
		t.Fatalf("DBSIZE = %s after Flush", n)
	}
	if ex, _ := srv.Do("SCRIPT", "EXISTS", sha); ex != "0" {
		t.Fatalf("script still cached after Flush")
	}
}

func TestDebugEnabled(t *testing.T) {
	Need(t, srv)
	if _, err := srv.Do("DEBUG", "SLEEP", "0"); err != nil {
		t.Fatalf("DEBUG with Options.Debug: %v", err)
	}
}

func TestStopKillRestart(t *testing.T) {
	s := start(t, Options{})
	pid := s.Pid()
	if pid == 0 || !alive(pid) || !s.Running() {
		t.Fatalf("pid %d not running", pid)
	}
	if _, err := s.Do("SET", "k", "v"); err != nil {
		t.Fatal(err)
	}

	s.Kill()
	if s.Running() || alive(pid) {
		t.Fatalf("pid %d survived Kill", pid)
	}
	if _, err := s.Do("PING"); err == nil {
		t.Fatal("PING answered after Kill")
	}

	addr := s.Addr
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if s.Addr != addr || s.Pid() == pid {
		t.Fatalf("Restart: addr %s→%s pid %d→%d", addr, s.Addr, pid, s.Pid())
	}
	if v, err := s.Do("GET", "k"); err != nil || v != "" {
		t.Fatalf("GET after restart = %q, %v; want empty (no persistence)", v, err)
	}

	// Restart of a running server stops it first.
	pid = s.Pid()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) || s.Pid() == pid {
		t.Fatalf("old pid %d still alive after Restart", pid)
	}

	dir := s.Dir
	pid = s.Pid()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Fatalf("pid %d survived Stop", pid)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("temp dir %s left behind: %v", dir, err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := s.Restart(); err == nil {
		t.Fatal("Restart after Stop succeeded")
	}
}

func TestPassword(t *testing.T) {
	s := start(t, Options{Password: "s3cret"})
	if v, err := s.Do("PING"); err != nil || v != "PONG" {
		t.Fatalf("PING with password = %q, %v", v, err)
	}
	c, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = roundTrip(c, bufio.NewReader(c), "PING")
	if err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Fatalf("unauthenticated PING: %v, want NOAUTH", err)
	}
}

func TestArgs(t *testing.T) {
	s := start(t, Options{Args: []string{"--rename-command", "HELLO", "", "--maxmemory", "12mb"}})
	if _, err := s.Do("HELLO", "3"); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("HELLO after rename: %v", err)
	}
	if v, err := s.Do("CONFIG", "GET", "maxmemory"); err != nil || v != "maxmemory\n12582912" {
		t.Fatalf("CONFIG GET maxmemory = %q, %v", v, err)
	}
}

func TestUnix(t *testing.T) {
	s := start(t, Options{Unix: true})
	c, err := net.Dial("unix", s.UnixPath)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if v, err := roundTrip(c, bufio.NewReader(c), "PING"); err != nil || v != "PONG" {
		t.Fatalf("PING over %s = %q, %v", s.UnixPath, v, err)
	}
}

func TestTLS(t *testing.T) {
	s := start(t, Options{TLS: true, Password: "pw"})
	if s.TLSAddr == "" || s.TLSAddr == s.Addr || s.CACertPool == nil {
		t.Fatalf("TLSAddr %q Addr %q pool %v", s.TLSAddr, s.Addr, s.CACertPool)
	}
	for _, name := range []string{"127.0.0.1", "localhost"} {
		c, err := tls.Dial("tcp", s.TLSAddr, &tls.Config{RootCAs: s.CACertPool, ServerName: name})
		if err != nil {
			t.Fatalf("TLS dial as %s: %v", name, err)
		}
		r := bufio.NewReader(c)
		if v, err := roundTrip(c, r, "AUTH", "pw"); err != nil || v != "OK" {
			t.Fatalf("AUTH over TLS = %q, %v", v, err)
		}
		if v, err := roundTrip(c, r, "PING"); err != nil || v != "PONG" {
			t.Fatalf("PING over TLS = %q, %v", v, err)
		}
		c.Close()
	}
	// An untrusting client is refused.
	c, err := tls.Dial("tcp", s.TLSAddr, &tls.Config{ServerName: "localhost"})
	if err == nil {
		c.Close()
		t.Fatal("TLS dial without the CA succeeded")
	}
	// Restart keeps both ports.
	addr, tlsAddr := s.Addr, s.TLSAddr
	s.Kill()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if s.Addr != addr || s.TLSAddr != tlsAddr {
		t.Fatalf("ports moved on Restart")
	}
	c, err = tls.Dial("tcp", s.TLSAddr, &tls.Config{RootCAs: s.CACertPool, ServerName: "localhost"})
	if err != nil {
		t.Fatalf("TLS after Restart: %v", err)
	}
	c.Close()
}

func TestBadArgsReportsLog(t *testing.T) {
	Need(t, srv)
	s, err := Start(Options{Args: []string{"--no-such-option", "1"}})
	if err == nil {
		_ = s.Stop()
		t.Fatal("Start with a bad option succeeded")
	}
	if !strings.Contains(err.Error(), "no-such-option") {
		t.Fatalf("error does not carry the server's log: %v", err)
	}
}

func TestRestartRetriesBusyPort(t *testing.T) {
	s := start(t, Options{})
	s.Kill()
	// Squat the port briefly; Restart must wait it out.
	l, err := net.Listen("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(700 * time.Millisecond)
		l.Close()
	}()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Do("PING"); err != nil || v != "PONG" {
		t.Fatalf("PING = %q, %v", v, err)
	}
}

// fakeTB records how Need ended a test.
type fakeTB struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (f *fakeTB) Helper()               {}
func (f *fakeTB) Skip(args ...any)      { f.skipped, f.msg = true, fmt.Sprint(args...); runtime.Goexit() }
func (f *fakeTB) Fatal(args ...any)     { f.failed, f.msg = true, fmt.Sprint(args...); runtime.Goexit() }
func (f *fakeTB) Fatalf(string, ...any) { f.failed = true; runtime.Goexit() }

// runNeed calls Need on its own goroutine, as Goexit requires.
func runNeed(s *Server) *fakeTB {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Need(f, s)
	}()
	<-done
	return f
}

func TestNeed(t *testing.T) {
	t.Setenv("CI", "")
	if f := runNeed(nil); !f.skipped || f.msg != SkipMessage {
		t.Fatalf("Need(nil) outside CI: %+v", f)
	}
	t.Setenv("CI", "true")
	if f := runNeed(nil); !f.failed || f.skipped {
		t.Fatalf("Need(nil) under CI: %+v", f)
	}
	if f := runNeed(&Server{}); f.failed || f.skipped {
		t.Fatalf("Need(server): %+v", f)
	}
}

func TestNoBinary(t *testing.T) {
	names, dirs := binaryNames, binaryDirs
	t.Cleanup(func() { binaryNames, binaryDirs = names, dirs })
	binaryNames, binaryDirs = []string{"no-such-server-binary"}, []string{t.TempDir()}
	if _, err := Start(Options{}); !errors.Is(err, ErrNoServer) {
		t.Fatalf("Start without a binary: %v, want ErrNoServer", err)
	}
}

func TestPortTakenByAnotherServer(t *testing.T) {
	other := start(t, Options{})
	// Pretend the free-port pick returned the port of a running server: the
	// new process fails to bind, and the PING that other answers must not
	// count as ours.
	s := &Server{Bin: other.Bin, Name: other.Name, Version: other.Version, Dir: t.TempDir(),
		Port: other.Port, Addr: other.Addr}
	s.logPath = s.Dir + "/server.log"
	err := s.launch()
	if !errors.Is(err, errAddrInUse) {
		t.Fatalf("launch on a taken port: %v, want errAddrInUse", err)
	}
	if s.Running() {
		t.Fatal("process left running")
	}
}
