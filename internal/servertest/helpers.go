package servertest

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// SkipMessage is printed by Main and given to t.Skip by Need when no server
// binary is installed.
const SkipMessage = "servertest: no redis-server/valkey-server on PATH: integration tests skipped (install redis-server)"

// InCI reports whether the environment says CI=true (or CI=1), where a
// missing server fails the tests instead of skipping them.
func InCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v == "true" || v == "1"
}

// Main is the body of a package's TestMain: it starts one server with opts,
// stores it in *srv, runs the tests, stops the server and returns the exit
// code for os.Exit. While the tests run, REDIS_URL names the server, so
// runnable examples connect as a program would.
//
// Without a server binary it prints SkipMessage, leaves *srv nil and runs
// the tests anyway (Need skips those that need the server); under CI=true it
// prints the reason and returns 1 instead. A binary that is present but
// fails to start always returns 1.
//
// With Options.TLS and a binary built without TLS, Main starts the server
// without TLS, sets its NoTLS to the reason and runs the tests: NeedTLS
// skips those that use TLS, also under CI=true (a property of the binary,
// not a missing server).
func Main(m *testing.M, srv **Server, opts Options) int {
	s, err := startMain(opts)
	switch {
	case err == nil:
	case errors.Is(err, ErrNoServer) && !InCI():
		fmt.Fprintln(os.Stderr, SkipMessage)
		*srv = nil
		return m.Run()
	default:
		fmt.Fprintf(os.Stderr, "servertest: cannot start a server (CI=%q): %v\n", os.Getenv("CI"), err)
		return 1
	}
	*srv = s
	// Runnable examples connect the way a program is told its server:
	// from REDIS_URL.
	os.Setenv("REDIS_URL", "redis://"+s.Addr)
	code := m.Run()
	if err := s.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "servertest: stop: %v\n", err)
	}
	return code
}

// startMain is Start for Main: on ErrNoTLS it starts the server again
// without TLS and records why in NoTLS.
func startMain(opts Options) (*Server, error) {
	s, err := Start(opts)
	if !errors.Is(err, ErrNoTLS) {
		return s, err
	}
	plain := opts
	plain.TLS = false
	s, err2 := Start(plain)
	if err2 != nil {
		return nil, err2
	}
	s.NoTLS = err.Error()
	fmt.Fprintf(os.Stderr, "%s: tests that need TLS are skipped\n", s.NoTLS)
	return s, nil
}

// NeedTLS is Need for a test that uses the server's TLS port. It also skips
// the test, saying why, when Main found the binary built without TLS, and
// does so under CI=true too. A server started without Options.TLS fails
// the test: the test asks for a port its package never set up.
func NeedTLS(t testing.TB, s *Server) {
	t.Helper()
	Need(t, s)
	switch {
	case s.TLSAddr != "":
	case s.NoTLS != "":
		t.Skip(s.NoTLS)
	default:
		t.Fatal("servertest: NeedTLS: the server was started without Options.TLS")
	}
}

// Need skips the test when s is nil, that is when Main found no server;
// under CI=true it fails the test instead.
func Need(t testing.TB, s *Server) {
	t.Helper()
	if s != nil {
		return
	}
	if InCI() {
		t.Fatal("servertest: no server under CI=true: " + SkipMessage)
	}
	t.Skip(SkipMessage)
}

// Flush empties every database and the script cache; it fails the test on
// error.
func (s *Server) Flush(t testing.TB) {
	t.Helper()
	s.must(t, "FLUSHALL")
	s.must(t, "SCRIPT", "FLUSH")
}

// ResetStats resets INFO statistics (CONFIG RESETSTAT); it fails the test on
// error.
func (s *Server) ResetStats(t testing.TB) {
	t.Helper()
	s.must(t, "CONFIG", "RESETSTAT")
}

// CommandCalls returns how many times the server ran the command name since
// the last ResetStats, from INFO commandstats. Subcommands are written
// "script|load" (or "script load"); on servers older than 7, which count
// only whole commands, the parent's count is returned. A command never
// called counts 0.
func (s *Server) CommandCalls(t testing.TB, name string) int64 {
	t.Helper()
	info := s.must(t, "INFO", "commandstats")
	name = strings.ToLower(strings.ReplaceAll(strings.TrimSpace(name), " ", "|"))
	if parent, _, ok := strings.Cut(name, "|"); ok && s.major() < 7 {
		name = parent
	}
	n, err := parseCalls(info, name)
	if err != nil {
		t.Fatalf("servertest: CommandCalls(%q): %v", name, err)
	}
	return n
}

// parseCalls finds "cmdstat_<name>:calls=N,..." in INFO output.
func parseCalls(info, name string) (int64, error) {
	prefix := "cmdstat_" + name + ":"
	for line := range strings.Lines(info) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix)
		if !ok {
			continue
		}
		for field := range strings.SplitSeq(rest, ",") {
			if v, ok := strings.CutPrefix(field, "calls="); ok {
				return strconv.ParseInt(v, 10, 64)
			}
		}
		return 0, fmt.Errorf("no calls= in %q", line)
	}
	return 0, nil
}

// major is the server's major version number, 0 when unknown.
func (s *Server) major() int {
	head, _, _ := strings.Cut(s.Version, ".")
	n, _ := strconv.Atoi(head)
	return n
}

// must runs Do and fails the test on error.
func (s *Server) must(t testing.TB, args ...string) string {
	t.Helper()
	reply, err := s.Do(args...)
	if err != nil {
		t.Fatalf("servertest: %s: %v", strings.Join(args, " "), err)
	}
	return reply
}
