package cache_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/cache"
	"github.com/echomq/echomq-go/internal/faultproxy"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
)

// A connection dropped on the server side with the client told nothing
// (a NAT, a firewall or a load balancer that forgets it: no FIN, no RST)
// takes the server's tracking with it. The health check catches it on
// either connection, the reading one (whose client id the tracking
// belongs to, under RESP2 too) or the RESP2 invalidation connection:
// the cache is emptied and the Cache redials. A read meanwhile is
// served from memory (the bound is HealthInterval + HealthTimeout) or
// refused; once the Cache has redialled, none is stale.
func TestSilentDropCaught(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		which := []string{"reader"}
		if proto == 2 {
			which = append(which, "redirect")
		}
		for _, w := range which {
			t.Run(w, func(t *testing.T) {
				servertest.Need(t, srv)
				srv.Flush(t)
				p, err := faultproxy.New(srv.Addr)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { p.Close() })
				o := opts(proto)
				o.Addr = srv.Addr
				nth := 1 // the reading connection is dialed first, the RESP2 one next
				if w == "redirect" {
					nth = 2
				}
				o.Dialer = nthThrough(p.Addr(), nth)
				o.HealthInterval = 20 * time.Millisecond
				o.HealthTimeout = 200 * time.Millisecond
				c := newCache(t, o)
				ctx := testCtx(t)
				must(t, srv, "SET", "k", "v1")
				wantGet(t, c, "k", "v1")
				wantGet(t, c, "k", "v1")
				id := clientID(t, c)
				if w == "redirect" {
					v, err := c.Do(ctx, "CLIENT", "GETREDIR")
					if err != nil {
						t.Fatal(err)
					}
					id = strconv.FormatInt(v.Int, 10)
				}
				p.Sever()
				waitFor(t, "the server to drop the "+w+" connection", func() bool {
					return must(t, srv, "CLIENT", "LIST", "ID", id) == ""
				})
				// Written with the tracking gone: no invalidation comes.
				must(t, srv, "SET", "k", "v2")
				// Until the health check has seen the drop and redialled.
				waitFor(t, "a redial", func() bool {
					if c.Stats().Reconnects != 0 {
						return true
					}
					v, _, err := c.Get(ctx, "k", time.Hour)
					switch {
					case errors.Is(err, cache.ErrNotConnected):
					case err != nil:
						t.Fatalf("Get during the fault: %v", err)
					case string(v) != "v1" && string(v) != "v2":
						t.Fatalf("Get during the fault = %q", v)
					}
					return false
				})
				if s := c.Stats(); s.Flushes == 0 {
					t.Fatalf("%+v: redialled without emptying the cache", s)
				}
				wantGet(t, c, "k", "v2")
				must(t, srv, "SET", "k", "v3")
				if err := c.Sync(ctx); err != nil {
					t.Fatal(err)
				}
				wantGet(t, c, "k", "v3") // tracked again
			})
		}
	})
}

// A user whose ACL refuses INFO: the health check's INFO is answered
// with an error, which still shows that the reading connection answers,
// so the Cache neither redials for it nor empties itself, and a silent
// drop is still caught. (A SWAPDB by another client then goes unseen, as
// the package documentation says.)
func TestHealthCheckWithoutInfo(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		s := startServer(t, servertest.Options{})
		must(t, s, "ACL", "SETUSER", "noinfo", "on", ">pw", "~*", "&*", "+@all", "-info")
		p, err := faultproxy.New(s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		o := opts(proto)
		o.Addr, o.Username, o.Password = s.Addr, "noinfo", "pw"
		o.Dialer = nthThrough(p.Addr(), 1)
		o.HealthInterval = 5 * time.Millisecond
		o.HealthTimeout = 200 * time.Millisecond
		c := newCache(t, o)
		if _, err := c.Do(testCtx(t), "INFO"); err == nil {
			t.Fatal("INFO allowed: the ACL did not take")
		}
		must(t, s, "SET", "k", "v1")
		wantGet(t, c, "k", "v1")
		waitFor(t, "health checks refused INFO", func() bool { return aclDenials(t, s) >= 5 })
		wantGet(t, c, "k", "v1")
		if st := c.Stats(); st.Reconnects != 0 || st.Flushes != 0 || st.Hits != 1 {
			t.Fatalf("%+v: a refused INFO made the Cache redial or empty itself", st)
		}
		id := clientID(t, c)
		p.Sever()
		waitFor(t, "the server to drop the reading connection", func() bool {
			return must(t, s, "CLIENT", "LIST", "ID", id) == ""
		})
		must(t, s, "SET", "k", "v2")
		waitFor(t, "the redial", func() bool { return c.Stats().Reconnects == 1 })
		wantGet(t, c, "k", "v2")
	})
}

// aclDenials adds up the counts of s's ACL LOG.
func aclDenials(t testing.TB, s *servertest.Server) int {
	lines := strings.Split(must(t, s, "ACL", "LOG"), "\n")
	n := 0
	for i := 0; i+1 < len(lines); i++ {
		if lines[i] == "count" {
			c, _ := strconv.Atoi(lines[i+1])
			n += c
		}
	}
	return n
}

// A Cache whose Limits are too small for INFO commandstats (a reply
// skipped with a *resp.ReplyTooLargeError): the health check's INFO
// still shows that the connection answers; the Cache does not redial.
func TestHealthCheckInfoOverLimits(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		s := startServer(t, servertest.Options{})
		o := opts(proto)
		o.Addr = s.Addr
		o.Limits = resp.Limits{MaxBulk: 64}
		o.HealthInterval = 5 * time.Millisecond
		c := newCache(t, o)
		if _, err := c.Do(testCtx(t), "INFO", "commandstats"); !errors.Is(err, resp.ErrReplyTooLarge) {
			t.Fatalf("INFO commandstats under MaxBulk 64: %v, want ErrReplyTooLarge", err)
		}
		must(t, s, "SET", "k", "v1")
		wantGet(t, c, "k", "v1")
		calls := s.CommandCalls(t, "info")
		waitFor(t, "health checks", func() bool { return s.CommandCalls(t, "info") >= calls+5 })
		wantGet(t, c, "k", "v1")
		if st := c.Stats(); st.Reconnects != 0 || st.Flushes != 0 || st.Hits != 1 {
			t.Fatalf("%+v: an INFO reply over the Limits made the Cache redial or empty itself", st)
		}
	})
}
