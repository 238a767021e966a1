package servertest

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
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
	if errors.Is(err, ErrNoTLS) {
		t.Skip(err) // a property of the binary, also under CI=true
	}
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
	if !strings.Contains(err.Error(), "no-such-option") || errors.Is(err, ErrNoTLS) {
		t.Fatalf("error does not carry the server's log, or blames TLS: %v", err)
	}
}

func TestRestartRetriesBusyPort(t *testing.T) {
	s := start(t, Options{})
	s.Kill()
	// Squat the port until a start has failed on it (the server logs
	// why); Restart must try again.
	l, err := net.Listen("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	restarted := make(chan error, 1)
	go func() { restarted <- s.Restart() }()
	Eventually(t, "a start to fail on the squatted port", func() bool {
		b, _ := os.ReadFile(s.logPath)
		return strings.Contains(string(b), "ddress already in use")
	})
	l.Close()
	if err := <-restarted; err != nil {
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

// fakeNoTLS puts on PATH, in a temp dir, a stand-in named name for the
// server binary that behaves as a build without TLS: given --tls-port it
// prints refusal, as such a server does, and exits 1; without it, it runs
// the real binary. Start then finds only the stand-in.
func fakeNoTLS(t *testing.T, name, refusal string) {
	t.Helper()
	Need(t, srv) // the stand-in runs the real binary
	dir := t.TempDir()
	script := "#!/bin/sh\n" +
		"for a in \"$@\"; do\n" +
		"\tif [ \"$a\" = --tls-port ]; then\n" +
		"\t\tcat <<'EOF'\n" + refusal + "\nEOF\n" +
		"\t\texit 1\n" +
		"\tfi\n" +
		"done\n" +
		"exec '" + srv.Bin + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	names, dirs := binaryNames, binaryDirs
	t.Cleanup(func() { binaryNames, binaryDirs = names, dirs })
	binaryNames, binaryDirs = []string{name}, nil
}

// What servers built without TLS print when started with --tls-port.
var noTLSRefusals = []struct {
	name, bin, refusal, evidence string
}{
	{"redis 7.0", "redis-server", "\n*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\n" +
		"Reading the configuration file, at line 7\n" +
		">>> 'tls-port \"40001\"'\n" +
		"Bad directive or wrong number of arguments",
		`>>> 'tls-port "40001"' Bad directive or wrong number of arguments`},
	{"valkey 8", "valkey-server", "4242:M 01 Jan 2026 00:00:00.000 # Missing implement of connection type tls\n" +
		"4242:M 01 Jan 2026 00:00:00.000 # Failed finding TLS support.",
		"Missing implement of connection type tls"},
}

// A binary built without TLS: Start with TLS says so (ErrNoTLS, with the
// server's words); Main's start falls back to a server without TLS whose
// NoTLS names the reason; NeedTLS skips on it, also under CI=true.
func TestNoTLSBinary(t *testing.T) {
	for _, c := range noTLSRefusals {
		t.Run(c.name, func(t *testing.T) {
			fakeNoTLS(t, c.bin, c.refusal)

			_, err := Start(Options{TLS: true})
			if !errors.Is(err, ErrNoTLS) || !strings.Contains(err.Error(), "server binary built without TLS: ") ||
				!strings.Contains(err.Error(), c.evidence) {
				t.Fatalf("Start with TLS on a binary without it: %v", err)
			}

			s, err := startMain(Options{TLS: true, Unix: true})
			if err != nil {
				t.Fatalf("Main's start: %v", err)
			}
			t.Cleanup(func() { _ = s.Stop() })
			if s.TLSAddr != "" || s.CACertPool != nil || s.UnixPath == "" {
				t.Fatalf("fallback server: TLSAddr %q, pool %v, unix %q", s.TLSAddr, s.CACertPool, s.UnixPath)
			}
			if !strings.HasPrefix(s.NoTLS, "servertest: server binary built without TLS: ") || !strings.Contains(s.NoTLS, c.evidence) {
				t.Fatalf("NoTLS = %q", s.NoTLS)
			}
			if v, err := s.Do("PING"); err != nil || v != "PONG" {
				t.Fatalf("PING the fallback server = %q, %v", v, err)
			}
			if err := s.Restart(); err != nil || s.TLSAddr != "" {
				t.Fatalf("Restart of the fallback server: %v, TLSAddr %q", err, s.TLSAddr)
			}

			for _, ci := range []string{"", "true"} {
				t.Setenv("CI", ci)
				if f := runNeedTLS(s); !f.skipped || f.failed || f.msg != s.NoTLS {
					t.Fatalf("NeedTLS with CI=%q: %+v, want a skip with NoTLS", ci, f)
				}
			}
		})
	}
}

func TestNeedTLS(t *testing.T) {
	t.Setenv("CI", "")
	if f := runNeedTLS(nil); !f.skipped || f.msg != SkipMessage {
		t.Fatalf("NeedTLS(nil): %+v", f)
	}
	if f := runNeedTLS(&Server{TLSAddr: "127.0.0.1:1"}); f.skipped || f.failed {
		t.Fatalf("NeedTLS(TLS server): %+v", f)
	}
	if f := runNeedTLS(&Server{}); !f.failed {
		t.Fatalf("NeedTLS(server started without Options.TLS): %+v, want a failure", f)
	}
}

// runNeedTLS calls NeedTLS on its own goroutine, as Goexit requires.
func runNeedTLS(s *Server) *fakeTB {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		NeedTLS(f, s)
	}()
	<-done
	return f
}

func TestNoTLSEvidence(t *testing.T) {
	for _, c := range noTLSRefusals {
		if got, ok := noTLSEvidence(c.refusal); !ok || !strings.Contains(got, c.evidence) {
			t.Errorf("%s: noTLSEvidence = %q, %v", c.name, got, ok)
		}
	}
	for _, log := range []string{
		// Another bad directive, after the TLS ones were taken.
		"*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\nReading the configuration file, at line 9\n>>> 'no-such-option \"1\"'\nBad directive or wrong number of arguments",
		// A TLS build with a certificate it cannot read.
		"1:M # Failed to load certificate: /x/server.crt: error:80000002:system library::No such file or directory\n1:M # Failed to configure TLS. Check logs for more info.",
		"1:M # Warning: Could not create server TCP listening socket 127.0.0.1:40001: bind: Address already in use",
		"",
	} {
		if got, ok := noTLSEvidence(log); ok {
			t.Errorf("noTLSEvidence(%q) = %q: not a build without TLS", log, got)
		}
	}
}

// With Options.Debug the DEBUG command works: on Redis 7.0+ and Valkey
// through --enable-debug-command, which older servers must not be given.
func TestDebugArgByVersion(t *testing.T) {
	for v, want := range map[string]bool{"6.2.14": false, "7.0.15": true, "7.2.4": true, "8.0.1": true, "": false} {
		s := &Server{Version: v, opts: Options{Debug: true}}
		if got := slices.Contains(s.args(), "--enable-debug-command"); got != want {
			t.Errorf("version %q: --enable-debug-command passed = %v, want %v", v, got, want)
		}
	}
	s := &Server{Version: "8.0.1"}
	if slices.Contains(s.args(), "--enable-debug-command") {
		t.Error("--enable-debug-command without Options.Debug")
	}
}
