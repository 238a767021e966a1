package emqmodule

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
	"github.com/stretchr/testify/require"
)

// commands are the module's commands and their key suffixes.
var commands = []struct {
	name string
	keys []string // "job:" is the row of ARGV[1]
}{
	{"enqueue", []string{"job:", "pending"}},
	{"enqueue_at", []string{"job:", "delayed"}},
	{"enqueue_batch", []string{"pending", ""}},
	{"claim", []string{"pending", "active", ""}},
	{"claim_batch", []string{"pending", "active", ""}},
	{"complete", []string{"active", "job:"}},
	{"complete_batch", []string{"active", ""}},
	{"retry", []string{"active", "job:", "pending", "delayed", "dead"}},
	{"extend", []string{"active", "job:"}},
	{"promote", []string{"delayed", "pending", ""}},
	{"settle_claim", []string{"pending", "active", "delayed", "dead", ""}},
}

// sanitizerLib returns the path of a sanitizer runtime (libasan.so,
// libubsan.so) as the compiler knows it, or "".
func sanitizerLib(name string) string {
	out, err := exec.Command("cc", "-print-file-name="+name).Output()
	p := strings.TrimSpace(string(out))
	if err != nil || !filepath.IsAbs(p) {
		return ""
	}
	return p
}

// startASan starts a server loading the ASan/UBSan build, the sanitizer
// runtimes preloaded; reports go to files under the returned directory.
func startASan(t *testing.T) (*servertest.Server, string) {
	var srv *servertest.Server
	dir := withSanitizers(t, func(so string) { srv = startServer(t, so, servertest.Options{}) })
	return srv, dir
}

// startASanCluster starts a one-node cluster (every slot on it) loading
// the ASan/UBSan build as startASan does: the server asks the module
// where each call's keys are (getkeys-api) before it runs it.
func startASanCluster(t *testing.T) (*servertest.Server, string) {
	var c *servertest.Cluster
	dir := withSanitizers(t, func(so string) {
		var err error
		c, err = servertest.StartCluster(1, 0, servertest.Options{Args: LoadArgs(nil, so)})
		if errors.Is(err, servertest.ErrNoServer) && !servertest.InCI() {
			t.Skip(servertest.SkipMessage)
		}
		require.NoError(t, err)
		atExit(c.Stop)
	})
	return c.Primaries[0], dir
}

// withSanitizers builds the sanitizer module and runs start(its path)
// with the sanitizer runtimes preloaded; it returns where the reports go.
func withSanitizers(t *testing.T, start func(so string)) string {
	so := Need(t, "asan")
	asan, ubsan := sanitizerLib("libasan.so"), sanitizerLib("libubsan.so")
	if asan == "" || ubsan == "" {
		if servertest.InCI() {
			t.Fatal("no libasan/libubsan for the sanitizer build")
		}
		t.Skip("no libasan/libubsan: sanitizer fuzz skipped")
	}
	dir := t.TempDir()
	env := map[string]string{
		"LD_PRELOAD":    asan + " " + ubsan,
		"ASAN_OPTIONS":  "detect_leaks=0:halt_on_error=1:abort_on_error=0:log_path=" + filepath.Join(dir, "asan"),
		"UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1:log_path=" + filepath.Join(dir, "ubsan"),
	}
	// The server inherits the environment; nothing else starts meanwhile
	// (the package's tests are sequential).
	for k, v := range env {
		old, had := os.LookupEnv(k)
		os.Setenv(k, v)
		defer func() {
			if had {
				os.Setenv(k, old)
			} else {
				os.Unsetenv(k)
			}
		}()
	}
	start(so)
	return dir
}

// sanitizerReports returns what the sanitizers wrote.
func sanitizerReports(t *testing.T, dir string) string {
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	var b strings.Builder
	for _, f := range files {
		data, _ := os.ReadFile(f)
		fmt.Fprintf(&b, "%s:\n%s\n", f, data)
	}
	return b.String()
}

// TestFuzzASan sends random calls of every command (random numkeys and
// arity, random bytes, huge and empty values, numbers at every edge, keys of
// other queues and of no queue, wrong types on every key, a missing or
// foreign fence; a share as an ACL-restricted user, stretches at
// maxmemory) to a server running the sanitizer build: the server must
// answer every call and the sanitizers report nothing. EMQ_FUZZ_ITERS sets
// the count (default 20,000).
func TestFuzzASan(t *testing.T) {
	srv, dir := startASan(t)
	iters := envInt("EMQ_FUZZ_ITERS", 20000)
	if testing.Short() {
		iters = 2000
	}
	fuzzRun(t, srv, dir, iters)
}

// TestFuzzASanCluster is TestFuzzASan on a cluster-enabled server (fence
// client, and the key position requests before every call: a bad numkeys,
// too few keys, keys of two slots), fewer calls.
func TestFuzzASanCluster(t *testing.T) {
	srv, dir := startASanCluster(t)
	iters := envInt("EMQ_FUZZ_ITERS", 20000) / 4
	if testing.Short() {
		iters = 1000
	}
	fuzzRun(t, srv, dir, iters)
}

// fuzzRun sends iters random calls to srv (the sanitizer build) and
// fails on a dropped connection, a server gone or any sanitizer report.
func fuzzRun(t *testing.T, srv *servertest.Server, dir string, iters int) {
	seed := uint64(envInt("EMQ_FUZZ_SEED", int(time.Now().UnixNano()%1_000_000_007)))
	t.Logf("seed %d, %d calls, %s %s", seed, iters, srv.Name, srv.Version)
	f := &fuzzer{rng: rand.New(rand.NewPCG(seed, 7)), t: t}
	f.s = newSide(t, "asan", srv.Addr, true)
	// A user with some rows of one queue only, for a share of the calls;
	// and stretches at maxmemory.
	f.s.must(t, "ACL", "SETUSER", "fz", "reset", "on", ">pw", "+@all", "%R~{emq}:version", "~emq:{fz}:pending",
		"~emq:{fz}:active", "~emq:{fz}:delayed", "~emq:{fz}:dead", "~emq:{fz}:", "%R~emq:{fz}:meta", "~emq:{fz}:job:*1",
		"%R~emq:{fz}:job:*2", "%W~emq:{fz}:job:*3", "~emq:{fz2}:*")
	lim := userSide(t, f.s, srv.Addr, "fz")
	f.s.must(t, "CONFIG", "SET", "maxmemory-policy", "noeviction")
	replies := map[string]int{}
	for i := 0; i < iters; i++ {
		if f.rng.IntN(20) == 0 {
			f.damage()
		}
		if i%40 == 0 {
			f.s.raw(t, "SET", "{emq}:version", "echomq:6.0.0") // the fence back, most of the time
		}
		switch i % 1000 {
		case 500:
			f.s.must(t, "CONFIG", "SET", "maxmemory", "1")
		case 700:
			f.s.must(t, "CONFIG", "SET", "maxmemory", "0")
		}
		args := f.call()
		c := f.s.c
		if f.rng.IntN(4) == 0 {
			c = lim.c
		}
		v, err := c.Do(context.Background(), anys(args)...)
		var se *resp.ServerError
		if err != nil && !errors.As(err, &se) {
			t.Fatalf("call %d %.200q: %v\nsanitizers:\n%s", i, args, err, sanitizerReports(t, dir))
		}
		kind := v.Type.String()
		if se != nil {
			kind = se.Code()
		}
		replies[kind]++
	}
	f.s.must(t, "CONFIG", "SET", "maxmemory", "0")
	require.Equal(t, "PONG", f.s.must(t, "PING").Text())
	require.True(t, srv.Running())
	t.Logf("replies by kind: %v", replies)
	require.Empty(t, sanitizerReports(t, dir))
	require.Greater(t, replies["integer"]+replies["array"], iters/10, "the fuzz reached the transitions")
}

type fuzzer struct {
	rng *rand.Rand
	t   *testing.T
	s   *side
}

var queueNames = []string{"fz", "fz2", "", "a}b", "{", strings.Repeat("q", 300)}

func (f *fuzzer) pick(xs []string) string { return xs[f.rng.IntN(len(xs))] }

func (f *fuzzer) bytes(max int) string {
	b := make([]byte, f.rng.IntN(max+1))
	for i := range b {
		b[i] = byte(f.rng.IntN(256))
	}
	return string(b)
}

// value is an argument: a number at an edge, an id, random bytes, or huge.
func (f *fuzzer) value() string {
	switch f.rng.IntN(12) {
	case 0:
		return ""
	case 1:
		return f.bytes(30)
	case 2:
		return strings.Repeat("9", f.rng.IntN(400))
	case 3:
		if f.rng.IntN(30) == 0 {
			return strings.Repeat("x", 1<<20)
		}
		return strings.Repeat("y", f.rng.IntN(5000))
	case 4:
		return f.pick([]string{"-1", "0", "1", "2", "1.5", "1e308", "-1e308", "nan", "inf", "-inf", "0x", "0xffffffffffffffffff",
			"9007199254740991", "9007199254740992", "-9223372036854775808", "18446744073709551616", " ", "1\x00", "\x001"})
	case 5, 6:
		return "JOB" + f.bytes(11)
	case 7:
		return "JOB000000000" + strconv.Itoa(f.rng.IntN(100))
	default:
		return strconv.Itoa(f.rng.IntN(12) - 1)
	}
}

func (f *fuzzer) key(q, suffix, id string) string {
	switch f.rng.IntN(50) {
	case 0:
		return f.bytes(20)
	case 1:
		return "emq:{" + f.pick(queueNames) + "}:" + suffix
	case 2:
		return "emq:{fz}:" + f.pick([]string{"pending", "active", "delayed", "dead", "meta", "", "job:", "job:x"})
	}
	if suffix == "job:" {
		return "emq:{" + q + "}:job:" + id
	}
	return "emq:{" + q + "}:" + suffix
}

// call builds one random call.
func (f *fuzzer) call() []string {
	c := commands[f.rng.IntN(len(commands))]
	q := f.pick([]string{"fz", "fz", "fz", "fz2"})
	var args []string
	for n := f.rng.IntN(12); n > 0; n-- {
		args = append(args, f.value())
	}
	if f.rng.IntN(3) == 0 && c.name == "settle_claim" {
		// A well-formed settle_claim header with random settlements.
		nc, nr, nx := f.rng.IntN(4), f.rng.IntN(3), f.rng.IntN(3)
		args = []string{f.pick([]string{"1", "1000", "0"}), strconv.Itoa(f.rng.IntN(6)), f.pick([]string{"0", "5", "x"}),
			strconv.Itoa(nc), strconv.Itoa(nr), strconv.Itoa(nx)}
		for i := 0; i < 2*nc+5*nr+2*nx; i++ {
			args = append(args, f.value())
		}
	}
	if f.rng.IntN(5) < 2 {
		args = f.plausible(c.name)
	}
	id := "JOB00000000001"
	if len(args) > 0 {
		id = args[0]
	}
	nk := strconv.Itoa(len(c.keys))
	switch f.rng.IntN(30) {
	case 0:
		nk = f.pick([]string{"-1", "0", "1", "100", "x", "", "99999999999999999999"})
	case 1:
		nk = strconv.Itoa(len(c.keys) + 1)
	}
	out := []string{"EMQ." + strings.ToUpper(c.name), nk}
	for _, s := range c.keys {
		out = append(out, f.key(q, s, id))
	}
	if f.rng.IntN(20) == 0 {
		out = out[:2+f.rng.IntN(len(c.keys))] // too few keys
	}
	return append(out, args...)
}

// damage gives a key of the queue a wrong type (or fixes it), or breaks
// the fence.
func (f *fuzzer) damage() {
	k := "emq:{fz}:" + f.pick([]string{"pending", "active", "delayed", "dead", "meta", "job:JOB00000000001", "job:JOB00000000002"})
	s := f.s
	s.raw(f.t, "DEL", k)
	switch f.rng.IntN(8) {
	case 0:
		s.raw(f.t, "SET", k, "x")
	case 1:
		s.raw(f.t, "RPUSH", k, "JOB00000000001")
	case 2:
		s.raw(f.t, "SADD", k, "JOB00000000001")
	case 3:
		s.raw(f.t, "HSET", k, "state", "active", "attempts", f.value(), "paused", "1")
	case 4:
		s.raw(f.t, "ZADD", k, "0", "JOB00000000001", "5", "JOB00000000002")
	case 5:
		s.raw(f.t, "SET", "{emq}:version", f.pick([]string{"echomq:7.0.0", "", "echomq:6.", "x"}))
	case 6:
		s.raw(f.t, "HSET", "{emq}:version", "a", "b")
	default:
		s.raw(f.t, "DEL", "{emq}:version")
		s.raw(f.t, "SET", "{emq}:version", "echomq:6.0.0")
	}
}

// TestMemoryFlat: rounds of the same work, each ending with an empty
// queue, leave the server's memory where the first round left it: the
// module frees what it makes.
func TestMemoryFlat(t *testing.T) {
	_, n := pair(t)
	s := newSide(t, "module", n.Addr, true)
	q := qk("mem")
	p, a, d, x := q.sets()
	round := func(r int) {
		for b := 0; b < 20; b++ {
			var args []string
			for i := 0; i < 50; i++ {
				id := fmt.Sprintf("JOB%05d%06d", r, b*50+i)
				args = append(args, id, strings.Repeat("p", 200))
			}
			s.run(t, true, "enqueue_batch", []string{p, q.base()}, args)
			s.run(t, true, "enqueue_at", []string{q.row("JOBat" + args[0][5:]), d}, []string{"JOBat" + args[0][5:], "x", "0"})
		}
		s.run(t, true, "promote", []string{d, p, q.base()}, []string{"1000"})
		var outcomes []string
		for {
			args := []string{"60000", "64", "0", strconv.Itoa(len(outcomes) / 2), "0", "0"}
			v := s.run(t, true, "settle_claim", []string{p, a, d, x, q.base()}, append(args, outcomes...))
			require.Equal(t, resp.Array, v.Type, render(v))
			jobs := v.Elems[1].Elems
			if len(jobs) == 0 {
				break
			}
			outcomes = outcomes[:0]
			for i := 0; i+2 < len(jobs); i += 3 {
				outcomes = append(outcomes, jobs[i].Text(), strconv.FormatInt(jobs[i+2].Int, 10))
			}
		}
		require.Equal(t, int64(0), s.must(t, "EXISTS", p, a, d, x).Int)
	}
	used := func() int64 {
		info := s.must(t, "INFO", "memory").Text()
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		t.Fatal("no used_memory")
		return 0
	}
	round(0)
	round(1)
	base := used()
	for r := 2; r < 12; r++ {
		round(r)
	}
	grown := used() - base
	t.Logf("used_memory after 2 rounds %d, after 12 %d (%+d bytes over 10 rounds of 1,020 jobs)", base, base+grown, grown)
	require.Less(t, grown, int64(64<<10), "memory grows round after round")
}

// freePort returns a free loopback port.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestValgrind runs the differential test (a small count) against a
// module server running under valgrind (memcheck), then unloads, loads
// and unloads the module: no invalid access, no definite leak in the
// module. Slow: only with EMQ_VALGRIND=1.
func TestValgrind(t *testing.T) {
	if os.Getenv("EMQ_VALGRIND") != "1" {
		t.Skip("EMQ_VALGRIND=1 runs the module under valgrind")
	}
	vg, err := exec.LookPath("valgrind")
	if err != nil {
		t.Skip("no valgrind")
	}
	so := Need(t, "")
	s, _ := pair(t)
	bin := s.Bin
	port := freePort(t)
	dir := t.TempDir()
	logf := filepath.Join(dir, "valgrind.log")
	cmd := exec.Command(vg, "--error-exitcode=99", "--leak-check=full", "--show-leak-kinds=definite", "--errors-for-leak-kinds=definite",
		"--log-file="+logf, bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--enable-module-command", "yes", "--loadmodule", so)
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	}()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(2 * time.Minute) // only against a hang
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Write([]byte("PING\r\n"))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if strings.HasPrefix(line, "+PONG") {
				break
			}
		}
		require.True(t, time.Now().Before(deadline), "valgrind server did not start")
		select { // the next probe, unless the server has exited
		case err := <-exited:
			t.Fatalf("the valgrind server exited before it answered PING: %v (log %s)", err, logf)
		case <-time.After(100 * time.Millisecond):
		}
	}
	os.Setenv("EMQ_DIFF_NATIVE_ADDR", addr)
	if os.Getenv("EMQ_DIFF_OPS") == "" {
		os.Setenv("EMQ_DIFF_OPS", "3000")
	}
	defer os.Unsetenv("EMQ_DIFF_NATIVE_ADDR")
	t.Run("differential", TestDifferential)

	c, err := conn.Dial(tctx(t), conn.Options{Addr: addr})
	require.NoError(t, err)
	// Unloaded, loaded and used again, unloaded: what the module made is
	// freed at unload (a string it kept would be lost with its memory).
	for i := 0; i < 2; i++ {
		_, err = c.Do(tctx(t), "MODULE", "UNLOAD", "emq")
		require.NoError(t, err)
		_, err = c.Do(tctx(t), "MODULE", "LOAD", so)
		require.NoError(t, err)
		_, err = c.Do(tctx(t), "SET", "{emq}:version", "echomq:6.0.0")
		require.NoError(t, err)
		_, err = c.Do(tctx(t), "EMQ.ENQUEUE_BATCH", "2", "emq:{vg}:pending", "emq:{vg}:", "JOB00000000001", "a", "JOB00000000002", "b")
		require.NoError(t, err)
		_, err = c.Do(tctx(t), "EMQ.CLAIM_BATCH", "3", "emq:{vg}:pending", "emq:{vg}:active", "emq:{vg}:", "1000", "5")
		require.NoError(t, err)
	}
	_, err = c.Do(tctx(t), "MODULE", "UNLOAD", "emq")
	require.NoError(t, err)
	c.Do(tctx(t), "SHUTDOWN", "NOSAVE")
	c.Close()
	select {
	case err = <-exited:
	case <-time.After(2 * time.Minute):
		t.Fatal("valgrind server did not exit")
	}
	log, _ := os.ReadFile(logf)
	text := string(log)
	t.Logf("valgrind: %s", lastLines(text, 12))
	require.NoError(t, err, "valgrind reported errors:\n%s", text)
	require.Contains(t, text, "ERROR SUMMARY: 0 errors")
	require.NotContains(t, text, "emq.c:", "a valgrind record has a frame in the module")
	require.Contains(t, text, "definitely lost: 0 bytes")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// plausible builds arguments of the right shape, so that calls reach the
// transitions' writes.
func (f *fuzzer) plausible(name string) []string {
	id := func() string { return "JOB0000000000" + strconv.Itoa(f.rng.IntN(10)) }
	small := func() string { return strconv.Itoa(f.rng.IntN(4)) }
	switch name {
	case "enqueue":
		return []string{id(), f.value()}
	case "enqueue_at":
		return []string{id(), f.value(), small()}
	case "enqueue_batch":
		var a []string
		for n := f.rng.IntN(5); n > 0; n-- {
			a = append(a, id(), f.value())
		}
		return a
	case "claim":
		return []string{"100000"}
	case "claim_batch":
		return []string{"100000", strconv.Itoa(1 + f.rng.IntN(5))}
	case "complete", "extend":
		return []string{id(), small(), small()}
	case "complete_batch":
		a := []string{small()}
		for n := f.rng.IntN(4); n > 0; n-- {
			a = append(a, id(), small())
		}
		return a
	case "retry":
		return []string{id(), small(), small(), small(), f.value()}
	case "promote":
		return []string{small()}
	}
	return []string{"100000", small(), small(), "1", "1", "1", id(), small(), id(), small(), small(), small(), f.value(), id(), small()}
}
