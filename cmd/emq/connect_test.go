package main

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/servertest"
)

// startServer starts a private server for one test, stopped at cleanup.
func startServer(t *testing.T, opts servertest.Options) *servertest.Server {
	t.Helper()
	servertest.Need(t, srv)
	s, err := servertest.Start(opts)
	require.NoError(t, err)
	t.Cleanup(func() { s.Stop() })
	return s
}

// exit2 runs the command with args and requires exit 2, nothing on
// stdout and one line on stderr holding every one of want and none of
// notWant; it returns that line.
func exit2(t *testing.T, args []string, want []string, notWant ...string) string {
	t.Helper()
	code, out, errs := runArgs(args...)
	require.Equal(t, exitUsage, code, "stderr %q", errs)
	require.Empty(t, out)
	require.Equal(t, 1, strings.Count(errs, "\n"), "one line: %q", errs)
	require.True(t, strings.HasPrefix(errs, "emq: "), errs)
	for _, w := range want {
		require.Contains(t, errs, w)
	}
	for _, w := range notWant {
		require.NotContains(t, errs, w)
	}
	return errs
}

// A wrong or missing password says that authentication failed, not that
// the server cannot be reached; the password is never shown; the right
// one works.
func TestAuthFailed(t *testing.T) {
	s := startServer(t, servertest.Options{Password: "right-pw-123"})
	exit2(t, []string{"-url", "redis://:wrong-pw-456@" + s.Addr, "-queue", "ops", "stats"},
		[]string{"authentication failed at " + s.Addr, "wrong user name or password"}, "cannot reach", "wrong-pw-456")
	exit2(t, []string{"-url", "redis://alice:wrong-pw-456@" + s.Addr, "-queue", "ops", "stats"},
		[]string{"authentication failed at " + s.Addr, "wrong user name or password"}, "cannot reach", "wrong-pw-456")
	exit2(t, []string{"-url", "redis://" + s.Addr, "-queue", "ops", "browse"},
		[]string{"authentication failed at " + s.Addr, "wants a password and none was given"}, "cannot reach")
	code, out, errs := runArgs("-url", "redis://:right-pw-123@"+s.Addr, "-queue", "ops", "stats")
	require.Equal(t, exitOK, code, errs)
	require.Contains(t, out, "queue ops does not exist")
}

// A database the server does not have is named as such.
func TestNoSuchDatabase(t *testing.T) {
	servertest.Need(t, srv)
	exit2(t, []string{"-url", "redis://" + srv.Addr + "/99", "-queue", "ops", "stats"},
		[]string{"no such database at " + srv.Addr, "database 99"}, "cannot reach")
	code, _, errs := runArgs("-url", "redis://"+srv.Addr+"/3", "-queue", "ops", "stats")
	require.Equal(t, exitOK, code, errs)
}

// notRedis listens on a free loopback port and answers every connection
// with an HTTP response, as a web server on the wrong port does; it
// returns the address. The listener closes at cleanup.
func notRedis(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
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
	return l.Addr().String()
}

// A listener that is not Redis/Valkey is called that, not a frame
// offset.
func TestNotRedis(t *testing.T) {
	addr := notRedis(t)
	exit2(t, []string{"-url", "redis://" + addr, "-queue", "ops", "stats"},
		[]string{"not a Redis/Valkey server? " + addr}, "frame offset", "cannot reach")
}

// A URL without a scheme gets the redis:// (or unix://) form to use; one
// that may hold a password is not echoed.
func TestURLWithoutScheme(t *testing.T) {
	for url, want := range map[string]string{
		"127.0.0.1:6379":    "did you mean redis://127.0.0.1:6379?",
		"localhost:6379":    "did you mean redis://localhost:6379?",
		"localhost":         "did you mean redis://localhost?",
		"/run/valkey.sock":  "did you mean unix:///run/valkey.sock?",
		":pw-9876@10.0.0.1": "begin it with redis://",
	} {
		exit2(t, []string{"-url", url, "-queue", "ops", "stats"}, []string{"-url: ", want}, "pw-9876", "frame offset")
	}
}

// stats on a queue none of whose keys is on the server says that it does
// not exist (exit 0: an emptied queue is the same on the server), in text
// and JSON; a queue with a job, or only paused, exists.
func TestStatsQueueDoesNotExist(t *testing.T) {
	queue(t) // flushed, and the fence set: the queue has no key
	require.Equal(t, "queue ops does not exist: none of its sets or flags is on the server\n", ok(t, "stats"))
	var st statsJSON
	jsonLine(t, ok(t, "-json", "stats"), &st)
	require.NotNil(t, st.Exists)
	require.False(t, *st.Exists)
	require.Zero(t, st.Pending)

	require.Equal(t, "ops paused\n", ok(t, "pause"))
	require.Regexp(t, `paused +yes`, ok(t, "stats"))
	q := queue(t)
	_, err := q.Enqueue(context.Background(), nil)
	require.NoError(t, err)
	out := ok(t, "stats")
	require.NotContains(t, out, "does not exist")
	require.Regexp(t, `pending +1 `, out)
	jsonLine(t, ok(t, "-json", "stats"), &st)
	require.True(t, *st.Exists)
}

// waitReplica waits until the replica has every write made on the
// primary so far: c, a connection to the primary, writes a marker and
// WAITs for one replica to acknowledge it (WAIT counts the replicas that
// reached the offset of this connection's last write, which follows
// every earlier write of any connection).
func waitReplica(t *testing.T, c *conn.Conn) {
	t.Helper()
	ctx := context.Background()
	_, err := c.Do(ctx, "SET", "emqtest:sync", "1")
	require.NoError(t, err)
	for range 10 { // WAIT's own timeout bounds each try: only against a hang
		n, err := c.Do(ctx, "WAIT", "1", "2000")
		require.NoError(t, err)
		if n.Int == 1 {
			return
		}
	}
	t.Fatal("the replica never caught up")
}

// stats and browse only read: on a read-only replica they work, even
// when no fence was ever written (opening would SET it); commands that
// write fail there with the server's refusal.
func TestReadOnlyReplica(t *testing.T) {
	// No delay before the replica's first sync (5 s by default).
	primary := startServer(t, servertest.Options{Args: []string{"--repl-diskless-sync-delay", "0"}})
	replica := startServer(t, servertest.Options{Args: []string{"--replicaof", "127.0.0.1", strconv.Itoa(primary.Port)}})
	pc, err := conn.Dial(context.Background(), conn.Options{Addr: primary.Addr})
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	waitReplica(t, pc)
	_, err = replica.Do("SET", "probe", "1")
	require.ErrorContains(t, err, "READONLY", "the replica is read-only")
	u := "redis://" + replica.Addr

	// No fence anywhere: the read-only commands read it and write
	// nothing.
	for _, args := range [][]string{{"stats"}, {"-json", "stats"}, {"browse"}, {"browse", "-state", "dead"}} {
		code, out, errs := runArgs(append([]string{"-url", u, "-queue", "ops"}, args...)...)
		require.Equal(t, exitOK, code, "%q: stderr %q", args, errs)
		require.Empty(t, errs)
		require.NotEmpty(t, out)
	}
	v, err := primary.Do("EXISTS", emq.VersionKey)
	require.NoError(t, err)
	require.Equal(t, "0", v)

	// A queue written on the primary reads back on the replica.
	q, err := emq.Open(context.Background(), pc, "ops")
	require.NoError(t, err)
	ids := dead(t, q, 1, "boom")
	_, err = q.Enqueue(context.Background(), []byte("x"))
	require.NoError(t, err)
	waitReplica(t, pc)
	code, out, errs := runArgs("-url", u, "-queue", "ops", "-json", "stats")
	require.Equal(t, exitOK, code, errs)
	var st statsJSON
	jsonLine(t, out, &st)
	require.Equal(t, [3]int64{1, 0, 1}, [3]int64{st.Pending, st.Active, st.Dead})
	require.True(t, *st.Exists)
	code, out, errs = runArgs("-url", u, "-queue", "ops", "browse", "-state", "dead")
	require.Equal(t, exitOK, code, errs)
	require.Contains(t, out, ids[0])
	require.Contains(t, out, `"boom"`)

	// A command that writes is refused by the replica, in one line.
	code, _, errs = runArgs("-url", u, "-queue", "ops", "pause")
	require.Equal(t, exitFailed, code, errs)
	require.Contains(t, errs, "READONLY")
	require.Equal(t, 1, strings.Count(errs, "\n"), errs)
}
