package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/servertest"
)

var srv *servertest.Server

func TestMain(m *testing.M) {
	os.Exit(servertest.Main(m, &srv, servertest.Options{}))
}

// runArgs runs the command with exactly args.
func runArgs(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// emqRun runs the command against the test server's queue "ops".
func emqRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	servertest.Need(t, srv)
	return runArgs(append([]string{"-url", "redis://" + srv.Addr, "-queue", "ops"}, args...)...)
}

// ok runs the command and requires exit 0 and nothing on stderr.
func ok(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errs := emqRun(t, args...)
	require.Equal(t, exitOK, code, "stderr %q", errs)
	require.Empty(t, errs)
	return out
}

// failsWith runs the command and requires exit code with one line on
// stderr holding want, and returns stdout.
func failsWith(t *testing.T, code int, want string, args ...string) string {
	t.Helper()
	got, out, errs := emqRun(t, args...)
	require.Equal(t, code, got, "stdout %q stderr %q", out, errs)
	require.Equal(t, 1, strings.Count(errs, "\n"), "one line: %q", errs)
	require.True(t, strings.HasPrefix(errs, "emq: "), errs)
	require.Contains(t, errs, want)
	return out
}

// queue flushes the server and opens "ops" through the library.
func queue(t *testing.T) *emq.Queue {
	t.Helper()
	servertest.Need(t, srv)
	srv.Flush(t)
	c, err := conn.Dial(context.Background(), conn.Options{Addr: srv.Addr})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	q, err := emq.Open(context.Background(), c, "ops")
	require.NoError(t, err)
	return q
}

// dead makes n dead jobs whose error is reason, in id order.
func dead(t *testing.T, q *emq.Queue, n int, reason string) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	for range n {
		id, err := q.Enqueue(ctx, []byte(`{"n":1}`))
		require.NoError(t, err)
		job, got, err := q.Claim(ctx, time.Minute)
		require.NoError(t, err)
		require.True(t, got)
		require.Equal(t, id, job.ID, "the queue held other pending jobs")
		out, err := q.Retry(ctx, job.ID, job.Token, 0, 1, reason)
		require.NoError(t, err)
		require.Equal(t, emq.RetryDead, out)
		ids = append(ids, id)
	}
	return ids
}

// jsonLine decodes stdout, one JSON object on one line, into v.
func jsonLine(t *testing.T, out string, v any) {
	t.Helper()
	require.Equal(t, 1, strings.Count(out, "\n"), "one line: %q", out)
	require.NoError(t, json.Unmarshal([]byte(out), v), out)
}

func TestStats(t *testing.T) {
	q := queue(t)
	ctx := context.Background()
	dead(t, q, 2, "boom")
	_, err := q.Enqueue(ctx, nil)
	require.NoError(t, err)
	_, err = q.EnqueueIn(ctx, time.Hour, nil)
	require.NoError(t, err)
	require.NoError(t, q.Pause(ctx))

	out := ok(t, "stats")
	for _, want := range []string{`queue +ops\n`, `pending +1 +lag \d`, `active +0 +0 leases expired`, `delayed +1 +0 due`, `dead +2 `, `paused +yes`} {
		require.Regexp(t, want, out)
	}
	var st statsJSON
	jsonLine(t, ok(t, "-json", "stats"), &st)
	exists := true
	require.Equal(t, statsJSON{Queue: "ops", Time: st.Time, Pending: 1, Delayed: 1, Dead: 2, Paused: true,
		Oldest: st.Oldest, LagSeconds: st.LagSeconds, Exists: &exists}, st)
	require.True(t, emq.ValidID(st.Oldest))
	require.GreaterOrEqual(t, st.LagSeconds, 0.0)
}

func TestBrowse(t *testing.T) {
	q := queue(t)
	ids := dead(t, q, 3, "timeout: upstream")
	out := ok(t, "browse", "-state", "dead", "-offset", "1", "-count", "5")
	require.Equal(t, 3, strings.Count(out, "\n"), out) // the header and two jobs
	require.Contains(t, out, ids[1])
	require.Contains(t, out, ids[2])
	require.NotContains(t, out, ids[0])
	require.Contains(t, out, `"timeout: upstream"`)

	var page struct {
		Set  string    `json:"set"`
		Jobs []jobJSON `json:"jobs"`
	}
	jsonLine(t, ok(t, "browse", "-json", "-state", "dead"), &page)
	require.Equal(t, "dead", page.Set)
	require.Len(t, page.Jobs, 3)
	require.Equal(t, jobJSON{ID: ids[0], Score: page.Jobs[0].Score, Exists: true, State: "dead", Attempts: 1,
		Payload: `{"n":1}`, Error: "timeout: upstream"}, page.Jobs[0])
	require.Contains(t, ok(t, "browse"), "no pending jobs")
}

func TestRequeueByID(t *testing.T) {
	q := queue(t)
	ids := dead(t, q, 2, "boom")
	out := ok(t, "requeue", ids[0])
	require.Equal(t, ids[0]+" requeued\n", out)
	// One not dead any more: exit 1, one line naming it; the other is
	// requeued all the same. Each line reads: "<id> requeued", "<id> not
	// dead".
	out = failsWith(t, exitFailed, "1 of 2 jobs not dead: "+ids[0], "requeue", ids[0], ids[1])
	require.Equal(t, ids[0]+" not dead\n"+ids[1]+" requeued\n", out)
	var res struct {
		Results []struct{ ID, Result string }
	}
	out = failsWith(t, exitFailed, "1 of 1 jobs not dead", "requeue", "-json", ids[0])
	jsonLine(t, out, &res)
	require.Equal(t, "not dead", res.Results[0].Result)
	n, err := q.PendingSize(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
}

func TestRequeueFilter(t *testing.T) {
	q := queue(t)
	dead(t, q, 3, "timeout: upstream")
	dead(t, q, 2, "invalid payload")
	require.Equal(t, "requeued 2\n", ok(t, "requeue", "-error-prefix", "timeout", "-limit", "2"))
	var got map[string]any
	jsonLine(t, ok(t, "requeue", "-json", "-error-prefix", "timeout"), &got)
	require.Equal(t, map[string]any{"queue": "ops", "requeued": 1.0}, got)
	require.Equal(t, "requeued 0\n", ok(t, "requeue", "-since", "2h", "-before", "1h"))
	require.Equal(t, "requeued 2\n", ok(t, "requeue", "-all"))
	st, err := q.Stats(context.Background())
	require.NoError(t, err)
	require.Equal(t, [2]int64{5, 0}, [2]int64{st.Pending, st.Dead})
}

func TestDelete(t *testing.T) {
	q := queue(t)
	ctx := context.Background()
	ids := dead(t, q, 1, "boom")
	id, err := q.EnqueueIn(ctx, time.Hour, nil)
	require.NoError(t, err)
	require.Equal(t, ids[0]+" was dead\n"+id+" was delayed\n", ok(t, "delete", ids[0], id))
	require.Equal(t, id+" not found\n", failsWith(t, exitFailed, "1 of 1 jobs not found", "delete", id))
	out := failsWith(t, exitFailed, "1 of 1 jobs not found: "+id, "delete", "-json", id)
	var res struct {
		Results []struct{ ID, Result string }
	}
	jsonLine(t, out, &res)
	require.Equal(t, "not found", res.Results[0].Result)
	require.Equal(t, "", func() string { v, _ := srv.Do("KEYS", "emq:{ops}:*"); return v }())
}

func TestTrim(t *testing.T) {
	q := queue(t)
	dead(t, q, 5, "boom")
	require.Equal(t, "removed 0\n", ok(t, "trim", "-max-age", "1h"))
	require.Equal(t, "removed 3\n", ok(t, "trim", "-max-count", "2"))
	require.Equal(t, "removed 2\n", ok(t, "trim", "-all"))
	n, err := q.Count(context.Background(), emq.StateDead)
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestPauseResume(t *testing.T) {
	q := queue(t)
	ctx := context.Background()
	require.Equal(t, "ops paused\n", ok(t, "pause"))
	paused, err := q.Paused(ctx)
	require.NoError(t, err)
	require.True(t, paused)
	var got map[string]any
	jsonLine(t, ok(t, "resume", "-json"), &got)
	require.Equal(t, map[string]any{"queue": "ops", "paused": false}, got)
	paused, err = q.Paused(ctx)
	require.NoError(t, err)
	require.False(t, paused)
}

// lines is a writer that reports each line written on a channel.
type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
	got chan string
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for {
		line, err := l.buf.ReadString('\n')
		if err != nil {
			l.buf.WriteString(line) // an incomplete line waits for the rest
			return len(p), nil
		}
		l.got <- line
	}
}

// TestWatchStopsOnSIGINT: stats -watch prints a line per interval, each
// reading the queue anew, until SIGINT, then exits 0.
func TestWatchStopsOnSIGINT(t *testing.T) {
	q := queue(t)
	out := &lines{got: make(chan string, 100)}
	var errb bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"-url", "redis://" + srv.Addr, "-queue", "ops", "-json", "stats", "-watch", "-interval", "20ms"}, out, &errb)
	}()
	next := func() statsJSON {
		t.Helper()
		var st statsJSON
		select {
		case line := <-out.got:
			require.NoError(t, json.Unmarshal([]byte(line), &st))
		case <-time.After(30 * time.Second): // only a hang gets there
			t.Fatal("no stats line")
		}
		return st
	}
	first := next()
	_, err := q.Enqueue(context.Background(), nil)
	require.NoError(t, err)
	for st := next(); st.Pending == 0; st = next() {
		require.Zero(t, first.Pending)
	}
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
	select {
	case c := <-code:
		require.Equal(t, exitOK, c)
	case <-time.After(30 * time.Second):
		t.Fatal("stats -watch did not stop on SIGINT")
	}
	require.Empty(t, errb.String())
}

func TestWatchText(t *testing.T) {
	queue(t)
	out := &lines{got: make(chan string, 100)}
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"-url", "redis://" + srv.Addr, "-queue", "ops", "stats", "-watch", "-interval", "10ms"}, out, &bytes.Buffer{})
	}()
	header, row := <-out.got, <-out.got
	require.Regexp(t, `^time +pending +active +delayed +due +dead +expired +lag +paused\n$`, header)
	require.Regexp(t, `^\d\d:\d\d:\d\d\.\d{3} +0 +0 +0 +0 +0 +0 +0s +no\n$`, row)
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
	require.Equal(t, exitOK, <-code)
}

func TestBadFlagsExit2(t *testing.T) {
	servertest.Need(t, srv)
	u := "redis://" + srv.Addr
	for _, args := range [][]string{
		{},
		{"-queue", "ops"},
		{"-queue", "ops", "nosuch"},
		{"stats"},
		{"-queue", "a{b}", "stats"},
		{"-queue", "ops", "-bogus", "stats"},
		{"-queue", "ops", "-state", "dead", "stats"},
		{"-queue", "ops", "stats", "extra"},
		{"-queue", "ops", "stats", "-watch", "-interval", "0s"},
		{"-queue", "ops", "browse", "-state", "done"},
		{"-queue", "ops", "browse", "-count", "0"},
		{"-queue", "ops", "requeue"},
		{"-queue", "ops", "requeue", "JOB0KHTOWnGLuC", "-all"},
		{"-queue", "ops", "requeue", "-all", "-limit", "-1"},
		{"-queue", "ops", "requeue", "-since", "yesterday"},
		{"-queue", "ops", "requeue", "-since", "1h", "-before", "2h"},
		{"-queue", "ops", "delete"},
		{"-queue", "ops", "delete", "not-an-id"},
		{"-queue", "ops", "trim"},
		{"-queue", "ops", "trim", "-all", "-max-count", "3"},
		{"-queue", "ops", "trim", "-max-count", "-3"},
		{"-queue", "ops", "-url", "ftp://127.0.0.1", "stats"},
	} {
		code, out, errs := runArgs(append([]string{"-url", u}, args...)...) // a later -url wins
		require.Equal(t, exitUsage, code, "%q: stderr %q", args, errs)
		require.Empty(t, out, "%q", args)
		require.Equal(t, 1, strings.Count(errs, "\n"), "%q: one line: %q", args, errs)
		require.True(t, strings.HasPrefix(errs, "emq: "), "%q: %q", args, errs)
	}
	code, out, errs := runArgs("-h")
	require.Equal(t, exitOK, code)
	require.Contains(t, out, "usage: emq")
	require.Empty(t, errs)
}

func TestUnreachableExit2(t *testing.T) {
	code, out, errs := runArgs("-url", "redis://:hunter2pw@127.0.0.1:1", "-queue", "ops", "stats")
	require.Equal(t, exitUsage, code)
	require.Empty(t, out)
	require.Equal(t, 1, strings.Count(errs, "\n"), errs)
	require.Contains(t, errs, "cannot reach 127.0.0.1:1")
	require.NotContains(t, errs, "hunter2pw")
}

// TestSecretArgsNotEchoed: an argument that looks like a URL is never
// echoed, wherever it is given.
func TestSecretArgsNotEchoed(t *testing.T) {
	const pw = "Hunter2pw"
	for _, args := range [][]string{
		{"redis://:" + pw + "@h:6379"},
		{"-queue", "ops", "redis://:" + pw + "@h"},
		{"-queue", "ops", "stats", "redis://:" + pw + "@h"},
		{"-queue", "ops", "delete", pw + "@h"},
		{"-queue", "redis://:" + pw + "@h", "stats"},
		{"-queue", "ops", "-interval", "redis://:" + pw + "@h", "stats"},
		{"-queue", "ops", "requeue", "-since", "redis://:" + pw + "@h"},
		{"-queue", "ops", "-url", "redis://:" + pw + "#x@127.0.0.1:1", "stats"},
		{"-queue", "ops", "-url", "redis://:" + pw + "@127.0.0.1:1", "stats"},
		{"-queue", "ops", "-url", "ftp://:" + pw + "@127.0.0.1:1", "stats"},
	} {
		code, out, errs := runArgs(args...)
		require.Equal(t, exitUsage, code, "%d args: %q", len(args), errs)
		require.Empty(t, out)
		require.Equal(t, 1, strings.Count(errs, "\n"), errs)
		require.NotContains(t, errs, pw)
		require.NotContains(t, errs, "@h")
	}
	_, _, errs := runArgs("-queue", "ops", "redis://:"+pw+"@h")
	require.Contains(t, errs, "unknown command <not shown")
	require.Contains(t, errs, "-url")
}
