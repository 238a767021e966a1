package cache_test

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/cache"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// onDB runs cmds on one new connection of another client, in database
// db, written together, and returns their replies as text (an error reply
// as its message).
func onDB(t testing.TB, db string, cmds ...[]string) []string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", srv.Addr, waitLong)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(waitLong))
	b := resp.AppendCommand(nil, "SELECT", db)
	for _, c := range cmds {
		b = resp.AppendCommand(b, c...)
	}
	if _, err := nc.Write(b); err != nil {
		t.Fatal(err)
	}
	rd := resp.NewReader(nc)
	out := make([]string, 0, len(cmds))
	for i := 0; i <= len(cmds); i++ {
		v, err := rd.Next()
		if err != nil {
			t.Fatalf("%v: %v", cmds, err)
		}
		if i > 0 {
			out = append(out, v.String())
		}
	}
	return out
}

// twoDBs writes k = "db0" in database 0 and k = "db1" in database 1.
func twoDBs(t testing.TB) {
	t.Helper()
	onDB(t, "0", []string{"SET", "k", "db0"})
	onDB(t, "1", []string{"SET", "k", "db1"})
}

// modes runs f in each tracking mode under each protocol.
func modes(t *testing.T, f func(t *testing.T, o cache.Options)) {
	for _, mode := range []cache.Mode{cache.Default, cache.OptIn, cache.Broadcast} {
		t.Run(mode.String(), func(t *testing.T) {
			protocols(t, func(t *testing.T, proto int) {
				o := opts(proto)
				o.Mode = mode
				f(t, o)
			})
		})
	}
}

// The Cache's own SWAPDB is refused before it is sent: the servers
// (Redis 7.0.15, Valkey 8.0.1) send no invalidation for it, in any mode
// or protocol, so what the Cache holds of the database would stay.
func TestSwapDBRefused(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		c := newCache(t, opts(proto))
		twoDBs(t)
		wantGet(t, c, "k", "db0")
		ctx := testCtx(t)
		for _, args := range [][]string{{"SWAPDB", "0", "1"}, {"swapdb", "1", "0"}, {"SwapDB", "0", "0"}} {
			if _, err := c.Do(ctx, args...); !errors.Is(err, cache.ErrRefused) {
				t.Errorf("Do %v: %v, want ErrRefused", args, err)
			}
		}
		if err := c.DoFunc(ctx, resp.Command(nil, "SWAPDB", "0", "1"), nil); !errors.Is(err, cache.ErrRefused) {
			t.Errorf("DoFunc SWAPDB: %v, want ErrRefused", err)
		}
		if got := onDB(t, "0", []string{"GET", "k"}); got[0] != "db0" {
			t.Fatalf("database 0 holds k = %s: a refused SWAPDB was sent", got[0])
		}
		wantGet(t, c, "k", "db0")
		if s := c.Stats(); s.Hits != 1 {
			t.Fatalf("%+v, want the second read from memory", s)
		}
	})
}

// A SWAPDB the Cache does not see coming (another client's, alone, in a
// transaction or in a script, or one in a script the Cache itself runs)
// sends no invalidation; the health check sees it (the server's count of
// SWAPDB calls moved) and empties the cache, after which reads are of the
// new contents.
func TestSwapDBByAnotherClient(t *testing.T) {
	const script = "return redis.call('SWAPDB', '0', '1')"
	ways := []struct {
		name string
		swap func(t *testing.T, c *cache.Cache)
	}{
		{"alone", func(t *testing.T, c *cache.Cache) { onDB(t, "0", []string{"SWAPDB", "0", "1"}) }},
		{"multi", func(t *testing.T, c *cache.Cache) {
			onDB(t, "0", []string{"MULTI"}, []string{"SWAPDB", "0", "1"}, []string{"EXEC"})
		}},
		{"script", func(t *testing.T, c *cache.Cache) { onDB(t, "5", []string{"EVAL", script, "0"}) }},
		{"own script", func(t *testing.T, c *cache.Cache) {
			if _, err := c.Do(testCtx(t), "EVAL", script, "0"); err != nil {
				t.Fatal(err)
			}
		}},
	}
	modes(t, func(t *testing.T, o cache.Options) {
		o.HealthInterval = 5 * time.Millisecond
		for _, w := range ways {
			t.Run(w.name, func(t *testing.T) {
				c := newCache(t, o)
				twoDBs(t)
				wantGet(t, c, "k", "db0")
				wantGet(t, c, "k", "db0")
				before := c.Stats()
				w.swap(t, c)
				if got := onDB(t, "0", []string{"GET", "k"}); got[0] != "db1" {
					t.Fatalf("after the swap database 0 holds k = %s", got[0])
				}
				waitFor(t, "the health check to see the SWAPDB", func() bool { return c.Stats().Flushes > before.Flushes })
				if s := c.Stats(); s.Reconnects != before.Reconnects {
					t.Fatalf("%+v: a SWAPDB is not a lost connection", s)
				}
				wantGet(t, c, "k", "db1")
				wantGet(t, c, "k", "db1") // kept again, from the new contents
			})
		}
	})
}

// The other commands that change a database's contents are told, as
// the servers were found to do: MOVE and COPY … DB send the key's
// invalidation (the servers track key names over every database), and
// FLUSHDB (of any database), FLUSHALL and their ASYNC forms a flush. The
// commands that would move the Cache's connection to another database or
// open a transaction on it are refused by the connection, before
// sending, with a *conn.CommandError.
func TestCommandsThatChangeADatabase(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		ctx := testCtx(t)
		sync := func(t *testing.T, c *cache.Cache) {
			t.Helper()
			if err := c.Sync(ctx); err != nil {
				t.Fatal(err)
			}
		}
		t.Run("refused", func(t *testing.T) {
			c := newCache(t, opts(proto))
			twoDBs(t)
			wantGet(t, c, "k", "db0")
			for _, args := range [][]string{{"SELECT", "1"}, {"MULTI"}, {"RESET"}, {"HELLO", "2"}} {
				_, err := c.Do(ctx, args...)
				var ce *conn.CommandError
				if !errors.As(err, &ce) || !errors.Is(err, conn.ErrCommandRefused) {
					t.Errorf("Do %v: %v, want a *conn.CommandError", args, err)
				}
			}
			if v, err := c.Do(ctx, "GET", "k"); err != nil || v.Text() != "db0" {
				t.Fatalf("GET k on the Cache's connection: %v, %v; want db0, still database 0", v, err)
			}
			wantGet(t, c, "k", "db0")
		})
		t.Run("MOVE", func(t *testing.T) {
			c := newCache(t, opts(proto))
			onDB(t, "0", []string{"SET", "m", "v"})
			wantGet(t, c, "m", "v")
			if v, err := c.Do(ctx, "MOVE", "m", "1"); err != nil || v.Int != 1 {
				t.Fatalf("MOVE: %v, %v", v, err)
			}
			wantGet(t, c, "m", "")
			onDB(t, "1", []string{"MOVE", "m", "0"}) // another client's, from database 1
			sync(t, c)
			wantGet(t, c, "m", "v")
		})
		t.Run("COPY DB", func(t *testing.T) {
			c := newCache(t, opts(proto))
			twoDBs(t)
			wantGet(t, c, "k", "db0")
			onDB(t, "1", []string{"COPY", "k", "k", "DB", "0", "REPLACE"})
			sync(t, c)
			wantGet(t, c, "k", "db1")
			onDB(t, "1", []string{"SET", "k", "db1b"})
			if _, err := c.Do(ctx, "COPY", "k", "k", "DB", "1", "REPLACE"); err != nil {
				t.Fatal(err)
			}
			wantGet(t, c, "k", "db1") // database 0 is unchanged
			if got := onDB(t, "1", []string{"GET", "k"}); got[0] != "db1" {
				t.Fatalf("COPY … DB 1 did not write: %s", got[0])
			}
		})
		for _, flush := range [][]string{{"FLUSHDB"}, {"FLUSHDB", "ASYNC"}, {"FLUSHALL", "ASYNC"}} {
			t.Run(strings.Join(flush, " ")+" elsewhere", func(t *testing.T) {
				c := newCache(t, opts(proto))
				twoDBs(t)
				wantGet(t, c, "k", "db0")
				onDB(t, "1", flush)
				sync(t, c)
				if s := c.Stats(); s.Flushes != 1 || s.Entries != 0 {
					t.Fatalf("%v in database 1: %+v, want one flush", flush, s)
				}
				want := "db0"
				if flush[0] == "FLUSHALL" {
					want = ""
				}
				wantGet(t, c, "k", want)
			})
		}
	})
}
