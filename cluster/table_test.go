package cluster_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
)

// Raw commands are routed by the keys the generated table's key specs
// find (numkeys, keywords, subcommands, names in lower case), and SORT's
// STORE and MIGRATE's KEYS as the servers find them: each reaches its
// keys' primary first time, or is refused before anything is sent when
// its keys span slots.
func TestRoutesFromGeneratedTable(t *testing.T) {
	c := needCluster(t)
	cl := newClient(t, c)
	ctx := testCtx(t)
	// Two keys in different slots, on different primaries.
	a, b := "{a}k", "{b}k" // slots 15495 and 3300
	for _, cmd := range [][]string{
		{"SET", a, "1"},
		{"eval", "return redis.call('GET', KEYS[1])", "1", a},
		{"EVAL", "return 1", "0"},
		{"XADD", b, "*", "f", "v"},
		{"xread", "count", "1", "streams", b, "0"},
		{"object", "encoding", a},
		{"OBJECT", "ENCODING", a},
		{"MEMORY", "USAGE", a, "SAMPLES", "1"},
		{"RPUSH", "{a}list", "2", "1"},
		{"SORT", "{a}list", "BY", "store", "STORE", "{a}dst"},
		{"GEOADD", "{b}geo", "13.36", "38.11", "m"},
		{"GEORADIUS", "{b}geo", "15", "37", "200", "km", "STORE", "{b}near"},
		// With KEYS the key argument is "" (not a key, slot 0): routed
		// by the keys after KEYS; none exist, so the server answers NOKEY
		// without connecting anywhere.
		{"MIGRATE", "127.0.0.1", "1", "", "0", "1000", "KEYS", "{a}none", "{a}x"},
		{"SPUBLISH", "{b}ch", "m"},
	} {
		args := make([]any, len(cmd))
		for i, s := range cmd {
			args[i] = s
		}
		v, err := cl.Do(ctx, args...)
		require.NoError(t, err, "%q", cmd)
		require.False(t, v.IsError(), "%q: %s", cmd, v.Text())
	}
	require.Zero(t, cl.Stats().Moved, "a command went to the wrong primary first")
	require.Equal(t, "2\n1", firstLines(t, cl, "{a}dst"), "SORT … STORE")
	// Keys of two slots: refused before anything is sent.
	for _, cmd := range [][]string{
		{"SORT", "{a}list", "STORE", "{b}dst"},
		{"GEORADIUS", "{b}geo", "15", "37", "200", "km", "STORE", "{a}near"},
		{"EVAL", "return 1", "2", a, b},
		{"XREAD", "STREAMS", a, b, "0", "0"},
		{"MIGRATE", "127.0.0.1", "1", "", "0", "1000", "KEYS", a, b},
	} {
		args := make([]any, len(cmd))
		for i, s := range cmd {
			args[i] = s
		}
		_, err := cl.Do(ctx, args...)
		require.ErrorIs(t, err, cluster.ErrCrossSlot, "%q", cmd)
	}
	// Only the first ones ran.
	for name, want := range map[string]int64{"sort": 1, "georadius": 1, "migrate": 1, "xread": 1, "eval": 2} {
		var n int64
		for _, s := range c.Primaries {
			n += calls(t, s, name)
		}
		require.Equal(t, want, n, name)
	}
}

// firstLines returns the list at key, its elements joined by newlines.
func firstLines(t *testing.T, cl *cluster.Client, key string) string {
	t.Helper()
	v, err := cl.Do(testCtx(t), "LRANGE", key, "0", "-1")
	require.NoError(t, err)
	out := ""
	for i, e := range v.Elems {
		if i > 0 {
			out += "\n"
		}
		out += e.Text()
	}
	return out
}

// A command any server's tips send to every node goes to every primary
// on both servers: ACL SETUSER is tagged all_nodes by Valkey 8.0 only,
// and the generated table takes the union.
func TestTipsUnion(t *testing.T) {
	c := needCluster(t)
	cl := newClient(t, c)
	ctx := testCtx(t)
	const user = "routed-user"
	t.Cleanup(func() {
		for _, s := range c.Primaries {
			s.Do("ACL", "DELUSER", user)
		}
	})
	_, err := cl.Do(ctx, "ACL", "SETUSER", user, "on", ">pw", "~*", "+@all")
	require.NoError(t, err)
	for _, s := range c.Primaries {
		_, err := s.Do("ACL", "DRYRUN", user, "GET", "x")
		require.NoError(t, err, "%s: the user is not there", s.Addr)
	}
	v, err := cl.Do(ctx, "ACL", "DELUSER", user)
	require.NoError(t, err)
	require.EqualValues(t, 1, v.Int)
	for _, s := range c.Primaries {
		_, err := s.Do("ACL", "DRYRUN", user, "GET", "x")
		require.Error(t, err, "%s: the user is still there", s.Addr)
	}
}

// A command the generated table does not know (here INCRBY renamed, as a
// module's command or a newer server's would be) is routed keyless: to
// any primary, and where that one does not serve its key, MOVED sends it
// to the one that does. It runs once: MOVED means it did not run.
func TestUnknownCommandFollowsMoved(t *testing.T) {
	if shared == nil {
		t.Skip("no cluster")
	}
	c, err := servertest.StartCluster(3, 0, servertest.Options{Args: []string{"--rename-command", "INCRBY", "EXT.INCRBY"}})
	require.NoError(t, err)
	t.Cleanup(c.Stop)
	cl := newClient(t, c)
	ctx := testCtx(t)
	const n = 30
	for i := range n {
		v, err := cl.Do(ctx, "EXT.INCRBY", "k"+strconv.Itoa(i), "1")
		require.NoError(t, err)
		require.EqualValues(t, 1, v.Int, "k%d ran more than once", i)
	}
	moved := cl.Stats().Moved
	require.NotZero(t, moved, "30 keys over 3 primaries, none sent to the wrong one first")
	// In a batch: every command is keyless, so all go to one primary,
	// and each one it does not own is sent again where MOVED says.
	var b pipeline.Batch
	for i := range n {
		b.Add("EXT.INCRBY", "k"+strconv.Itoa(i), "1")
	}
	require.NoError(t, b.Exec(ctx, cl))
	for i := range n {
		require.EqualValues(t, 2, b.Reply(i).Int, "k%d", i)
	}
	require.Greater(t, cl.Stats().Moved, moved)
	for i := range n {
		k := "k" + strconv.Itoa(i)
		got, err := ownerOf(t, cl, c, k).Do("GET", k)
		require.NoError(t, err)
		require.Equal(t, "2", got, k)
	}
}

// ownerOf returns the primary that serves key, as the Client's topology
// says.
func ownerOf(t *testing.T, cl *cluster.Client, c *servertest.Cluster, key string) *servertest.Server {
	t.Helper()
	addr := cl.Owner(key)
	for _, s := range c.Primaries {
		if s.Addr == addr {
			return s
		}
	}
	t.Fatalf("%s: no primary at %s", key, addr)
	return nil
}
