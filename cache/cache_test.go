package cache_test

import (
	"crypto/tls"
	"errors"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/cache"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

func opts(proto int) cache.Options {
	return cache.Options{Options: conn.Options{Protocol: proto}}
}

// A write by another client invalidates the cached reply; Sync waits for
// the invalidation.
func TestInvalidationFromAnotherClient(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		c := newCache(t, opts(proto))
		must(t, srv, "SET", "k", "v1")
		wantGet(t, c, "k", "v1")
		wantGet(t, c, "k", "v1")
		if s := c.Stats(); s.Hits != 1 || s.Misses != 1 || s.Entries != 1 {
			t.Fatalf("after two reads: %+v, want 1 hit, 1 miss, 1 entry", s)
		}
		must(t, srv, "SET", "k", "v2")
		if err := c.Sync(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		if s := c.Stats(); s.Invalidations != 1 || s.Entries != 0 {
			t.Fatalf("after the write: %+v, want 1 invalidation, no entry", s)
		}
		wantGet(t, c, "k", "v2")
		// A missing key is cached, and its creation invalidates it.
		wantGet(t, c, "nokey", "")
		wantGet(t, c, "nokey", "")
		must(t, srv, "SET", "nokey", "now")
		if err := c.Sync(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		wantGet(t, c, "nokey", "now")
	})
}

// A write through the Cache is seen by the next read at once.
func TestReadYourWrites(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		for _, mode := range []cache.Mode{cache.Default, cache.Broadcast, cache.OptIn} {
			o := opts(proto)
			o.Mode = mode
			c := newCache(t, o)
			for i := range 50 {
				v := "v" + strconv.Itoa(i)
				if _, err := c.Do(testCtx(t), "SET", "k", v); err != nil {
					t.Fatal(err)
				}
				if got, _ := get(t, c, "k"); got != v {
					t.Fatalf("%s: read %q after writing %q", mode, got, v)
				}
				wantGet(t, c, "k", v)
			}
			if s := c.Stats(); s.Hits != 50 || s.Misses != 50 {
				t.Fatalf("%s: %+v, want 50 hits and 50 misses", mode, s)
			}
		}
	})
}

// The in-flight race, forced: the read has run on the server and its
// reply is held on its way back while another client changes the key.
// Under RESP2 the invalidation overtakes the reply (it travels on the
// other connection): the reply must not be kept. Under RESP3 it follows
// the reply in the stream and removes it.
func TestInFlightRace(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		servertest.Need(t, srv)
		srv.Flush(t)
		r := newRelay(t, srv.Addr)
		o := opts(proto)
		o.Addr = srv.Addr
		o.Dialer = firstThrough(r.addr())
		o.MinBackoff = time.Hour // a redial would bypass the relay
		o.HealthInterval = -1    // no PING while the relay holds
		c := newCache(t, o)
		must(t, srv, "SET", "k", "v1")

		r.hold()
		got := make(chan string, 1)
		go func() {
			v, _, err := c.Get(testCtx(t), "k", time.Hour)
			if err != nil {
				got <- "error: " + err.Error()
				return
			}
			got <- string(v)
		}()
		// The GET and the PTTL after it have run: both replies are held.
		waitFor(t, "the read's replies at the relay", func() bool {
			return strings.HasSuffix(r.heldBytes(), "v1\r\n:-1\r\n")
		})
		must(t, srv, "SET", "k", "v2")
		if proto == 2 {
			waitFor(t, "the invalidation", func() bool { return c.Stats().InvalidatedKeys == 1 })
		} else {
			waitFor(t, "the invalidation push at the relay", func() bool {
				return strings.Contains(r.heldBytes(), "invalidate")
			})
		}
		select {
		case v := <-got:
			t.Fatalf("the read returned %q while its reply was held", v)
		default:
		}
		r.release()
		if v := <-got; v != "v1" {
			t.Fatalf("the read returned %q, want v1 (the value when it ran)", v)
		}
		if err := c.Sync(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		wantGet(t, c, "k", "v2")
		s := c.Stats()
		if proto == 2 && s.Discarded != 1 {
			t.Errorf("RESP2: %+v, want the raced reply discarded", s)
		}
		if proto == 3 && s.Invalidations != 1 {
			t.Errorf("RESP3: %+v, want the reply kept, then invalidated", s)
		}
	})
}

// Two reads of one key in flight at once: the second reply replaces the
// first, and the key stays tracked, so a later write still invalidates it.
func TestConcurrentMissesStayTracked(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		servertest.Need(t, srv)
		srv.Flush(t)
		r := newRelay(t, srv.Addr)
		o := opts(proto)
		o.Addr = srv.Addr
		o.Dialer = firstThrough(r.addr())
		o.MinBackoff = time.Hour
		o.HealthInterval = -1
		c := newCache(t, o)
		must(t, srv, "SET", "k", "v1")
		r.hold()
		got := make(chan string, 2)
		for range 2 {
			go func() {
				v, _, err := c.Get(testCtx(t), "k", time.Hour)
				if err != nil {
					got <- err.Error()
					return
				}
				got <- string(v)
			}()
		}
		waitFor(t, "both reads' replies at the relay", func() bool {
			return strings.Count(r.heldBytes(), "v1\r\n:-1\r\n") == 2
		})
		r.release()
		for range 2 {
			if v := <-got; v != "v1" {
				t.Fatalf("read %q, want v1", v)
			}
		}
		if s := c.Stats(); s.Entries != 1 {
			t.Fatalf("%+v: want one entry", s)
		}
		must(t, srv, "SET", "k", "v2")
		if err := c.Sync(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		wantGet(t, c, "k", "v2")
	})
}

// FLUSHALL and FLUSHDB send an invalidation of every key.
func TestFlush(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		for _, flush := range []string{"FLUSHALL", "FLUSHDB"} {
			c := newCache(t, opts(proto))
			must(t, srv, "SET", "a", "1")
			must(t, srv, "SET", "b", "2")
			wantGet(t, c, "a", "1")
			wantGet(t, c, "b", "2")
			must(t, srv, flush)
			if err := c.Sync(testCtx(t)); err != nil {
				t.Fatal(err)
			}
			if s := c.Stats(); s.Entries != 0 || s.Flushes != 1 {
				t.Fatalf("%s: %+v, want empty, one flush", flush, s)
			}
			wantGet(t, c, "a", "")
			must(t, srv, "SET", "a", "3")
			if err := c.Sync(testCtx(t)); err != nil {
				t.Fatal(err)
			}
			wantGet(t, c, "a", "3")
		}
	})
}

// CLIENT KILL of the reading connection (and under RESP2 of the
// invalidation connection) empties the cache; the Cache redials and
// tracks again.
func TestClientKill(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		kills := []string{"reader"}
		if proto == 2 {
			kills = append(kills, "redirect")
		}
		for _, which := range kills {
			c := newCache(t, opts(proto))
			must(t, srv, "SET", "k", "v1")
			wantGet(t, c, "k", "v1")
			if which == "reader" {
				must(t, srv, "CLIENT", "KILL", "ID", clientID(t, c))
			} else {
				must(t, srv, "CLIENT", "KILL", "TYPE", "pubsub")
			}
			// Written while the tracking is gone: no invalidation comes.
			must(t, srv, "SET", "k", "v2")
			waitFor(t, "the redial", func() bool { return c.Stats().Reconnects == 1 })
			if s := c.Stats(); s.Entries != 0 || s.Flushes == 0 {
				t.Fatalf("%s killed: %+v, want emptied", which, s)
			}
			wantGet(t, c, "k", "v2")
			must(t, srv, "SET", "k", "v3")
			if err := c.Sync(testCtx(t)); err != nil {
				t.Fatal(err)
			}
			wantGet(t, c, "k", "v3") // tracked again
		}
	})
}

// A server restart loses every key and all tracking: the cache is
// emptied, and reads during the outage fail rather than serve memory.
func TestServerRestart(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		s := startServer(t, servertest.Options{})
		o := opts(proto)
		o.Addr = s.Addr
		c := newCache(t, o)
		must(t, s, "SET", "k", "v1")
		wantGet(t, c, "k", "v1")
		if err := s.Restart(); err != nil {
			t.Fatal(err)
		}
		must(t, s, "SET", "k", "v2")
		waitFor(t, "a read after the restart", func() bool {
			v, _, err := c.Get(testCtx(t), "k", time.Hour)
			if err == nil {
				if string(v) != "v2" {
					t.Fatalf("after the restart: %q, want v2", v)
				}
				return true
			}
			if !errors.Is(err, cache.ErrNotConnected) && !errors.Is(err, conn.ErrBroken) {
				t.Fatalf("during the outage: %v", err)
			}
			return false
		})
		if st := c.Stats(); st.Reconnects < 1 || st.Flushes < 1 {
			t.Fatalf("%+v: want a reconnect and a flush", st)
		}
	})
}

// A key's server expiry bounds its entry even when the server sends no
// invalidation (active expiry off: the key expires only when touched).
func TestServerTTLHonoured(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		c := newCache(t, opts(proto))
		must(t, srv, "DEBUG", "SET-ACTIVE-EXPIRE", "0")
		t.Cleanup(func() { srv.Do("DEBUG", "SET-ACTIVE-EXPIRE", "1") })
		must(t, srv, "SET", "k", "v", "PX", "200")
		start := time.Now()
		expiry, err := strconv.ParseInt(must(t, srv, "PEXPIRETIME", "k"), 10, 64) // unix ms, the server's clock
		if err != nil {
			t.Fatal(err)
		}
		wantGet(t, c, "k", "v")
		// Until the server's clock is past the key's expiry, and ours
		// past the entry's (read after the SET, it is bounded by start
		// + 200 ms). TIME touches no key: the key is not expired early.
		waitFor(t, "the key's expiry", func() bool {
			return time.Since(start) > 200*time.Millisecond && serverMillis(t, srv) > expiry
		})
		// The entry has expired: the read goes to the server, which
		// finds the key expired.
		before := c.Stats().Misses
		wantGet(t, c, "k", "")
		if c.Stats().Misses != before+1 {
			t.Fatalf("the read past PTTL was served from memory")
		}
	})
}

// The caller's TTL bounds an entry of a key without expiry (checked on
// a clock that moves every few milliseconds).
func TestClientTTL(t *testing.T) {
	c := newCache(t, opts(3))
	must(t, srv, "SET", "k", "v")
	ctx := testCtx(t)
	// The TTL counts from when the read was sent (the conservative
	// end): start is taken before it, so that the entry's expiry is
	// after start+TTL by causality, however slow the round trip.
	start := time.Now()
	if _, _, err := c.Get(ctx, "k", 30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the entry to expire", func() bool {
		if _, _, err := c.Get(ctx, "k", 30*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		return c.Stats().Misses == 2
	})
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Fatalf("the entry expired after %v, before its TTL", d)
	}
	if _, _, err := c.Get(ctx, "k", 0); !errors.Is(err, cache.ErrTTL) {
		t.Fatalf("TTL 0: %v, want ErrTTL", err)
	}
}

// maxmemory eviction on the server invalidates the evicted keys.
func TestServerEviction(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		s := startServer(t, servertest.Options{Args: []string{"--maxmemory", "4mb", "--maxmemory-policy", "allkeys-lru"}})
		o := opts(proto)
		o.Addr = s.Addr
		c := newCache(t, o)
		val := strings.Repeat("x", 1000)
		for i := range 200 {
			must(t, s, "SET", "k"+strconv.Itoa(i), val)
		}
		for i := range 200 {
			wantGet(t, c, "k"+strconv.Itoa(i), val)
		}
		// Fill well past maxmemory: the server evicts.
		fill, err := conn.Dial(testCtx(t), conn.Options{Addr: s.Addr})
		if err != nil {
			t.Fatal(err)
		}
		defer fill.Close()
		for i := 0; i < 20000; i += 500 {
			var b pipeline.Batch
			for j := i; j < i+500; j++ {
				b.Add("SET", "fill"+strconv.Itoa(j), val)
			}
			if err := b.Exec(testCtx(t), fill); err != nil {
				t.Fatal(err)
			}
		}
		info := must(t, s, "INFO", "stats")
		if !strings.Contains(info, "evicted_keys:") || strings.Contains(info, "evicted_keys:0\r") {
			t.Fatalf("the server evicted nothing")
		}
		if err := c.Sync(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		evicted := 0
		for i := range 200 {
			k := "k" + strconv.Itoa(i)
			v, ok := get(t, c, k)
			sv, err := s.Do("EXISTS", k)
			if err != nil {
				t.Fatal(err)
			}
			if (sv == "1") != ok || ok && v != val {
				t.Fatalf("%s: cache says %v, server EXISTS %s", k, ok, sv)
			}
			if !ok {
				evicted++
			}
		}
		if evicted == 0 {
			t.Fatalf("no cached key was evicted on the server: the test proves nothing")
		}
		if st := c.Stats(); st.Invalidations < uint64(evicted) {
			t.Errorf("%+v: want at least %d invalidations", st, evicted)
		}
	})
}

// The cache stays within MaxBytes and evicts; an entry over
// MaxEntryBytes is returned but not kept.
func TestMemoryBound(t *testing.T) {
	o := opts(3)
	o.MaxBytes = 64 << 10
	o.MaxEntryBytes = 8 << 10
	c := newCache(t, o)
	val := strings.Repeat("y", 500)
	for i := range 1000 {
		must(t, srv, "SET", "k"+strconv.Itoa(i), val)
	}
	for i := range 1000 {
		wantGet(t, c, "k"+strconv.Itoa(i), val)
		if s := c.Stats(); s.Bytes > o.MaxBytes {
			t.Fatalf("after %d reads: %d bytes, over %d", i+1, s.Bytes, o.MaxBytes)
		}
	}
	s := c.Stats()
	if s.Evictions == 0 || s.Entries == 0 || s.Entries >= 1000 {
		t.Fatalf("%+v: want evictions and some entries", s)
	}
	big := strings.Repeat("z", 10<<10)
	must(t, srv, "SET", "big", big)
	wantGet(t, c, "big", big)
	wantGet(t, c, "big", big)
	if s2 := c.Stats(); s2.TooLarge != 2 || s2.Hits != s.Hits {
		t.Fatalf("%+v: want the big value never kept", s2)
	}
}

// SIEVE keeps the entries that are read again over the ones read once.
func TestEvictionKeepsHotKeys(t *testing.T) {
	o := opts(3)
	o.MaxBytes = 64 << 10
	c := newCache(t, o)
	val := strings.Repeat("y", 300)
	for i := range 400 {
		must(t, srv, "SET", "k"+strconv.Itoa(i), val)
	}
	for i := range 10 { // hot keys, read twice
		wantGet(t, c, "k"+strconv.Itoa(i), val)
		wantGet(t, c, "k"+strconv.Itoa(i), val)
	}
	for i := 10; i < 400; i++ { // a scan of cold keys
		wantGet(t, c, "k"+strconv.Itoa(i), val)
	}
	before := c.Stats()
	for i := range 10 {
		wantGet(t, c, "k"+strconv.Itoa(i), val)
	}
	if s := c.Stats(); s.Hits-before.Hits != 10 || before.Evictions == 0 {
		t.Fatalf("hot keys after a scan: %d of 10 hits, %d evictions", s.Hits-before.Hits, before.Evictions)
	}
}

// Broadcast caches only keys under its prefixes, and hears of changes
// under them.
func TestBroadcastPrefixes(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		o := opts(proto)
		o.Mode = cache.Broadcast
		o.Prefixes = []string{"p:", "q:"}
		c := newCache(t, o)
		must(t, srv, "SET", "p:1", "a")
		must(t, srv, "SET", "q:1", "b")
		must(t, srv, "SET", "x:1", "c")
		for range 2 {
			wantGet(t, c, "p:1", "a")
			wantGet(t, c, "q:1", "b")
			wantGet(t, c, "x:1", "c")
		}
		if s := c.Stats(); s.Hits != 2 || s.Entries != 2 {
			t.Fatalf("%+v: want p:1 and q:1 cached, x:1 not", s)
		}
		must(t, srv, "SET", "p:1", "a2")
		must(t, srv, "SET", "x:1", "c2")
		if err := c.Sync(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		wantGet(t, c, "p:1", "a2")
		wantGet(t, c, "q:1", "b")
		wantGet(t, c, "x:1", "c2")
	})
}

// OptIn tracks the cached reads (CLIENT CACHING yes before each).
func TestOptIn(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		o := opts(proto)
		o.Mode = cache.OptIn
		c := newCache(t, o)
		must(t, srv, "SET", "k", "v1")
		wantGet(t, c, "k", "v1")
		wantGet(t, c, "k", "v1")
		must(t, srv, "SET", "k", "v2")
		if err := c.Sync(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		wantGet(t, c, "k", "v2")
		if s := c.Stats(); s.Hits != 1 || s.Invalidations != 1 {
			t.Fatalf("%+v: want 1 hit and 1 invalidation", s)
		}
	})
}

// Other cacheable commands, and the ones refused.
func TestDoCached(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		c := newCache(t, opts(proto))
		ctx := testCtx(t)
		must(t, srv, "HSET", "h", "f", "1", "g", "2")
		var got string
		read := func(args ...string) {
			t.Helper()
			err := c.DoCached(ctx, time.Hour, func(v resp.Value) error {
				switch v.Type {
				case resp.Map, resp.Array:
					got = strconv.Itoa(v.Len())
				default:
					got = v.Text()
				}
				return nil
			}, args...)
			if err != nil {
				t.Fatalf("%v: %v", args, err)
			}
		}
		for range 2 {
			read("HGET", "h", "f")
			if got != "1" {
				t.Fatalf("HGET = %q", got)
			}
			read("hgetall", "h")
			if got != "2" && got != "4" {
				t.Fatalf("HGETALL: %s elements", got)
			}
		}
		if s := c.Stats(); s.Hits != 2 || s.Entries != 2 {
			t.Fatalf("%+v: want 2 hits, 2 entries", s)
		}
		if _, err := c.Do(ctx, "HSET", "h", "f", "9"); err != nil {
			t.Fatal(err)
		}
		read("HGET", "h", "f")
		if got != "9" {
			t.Fatalf("HGET after HSET = %q", got)
		}
		if s := c.Stats(); s.Entries != 1 || s.Invalidations != 2 {
			t.Fatalf("%+v: want both replies of h invalidated", s)
		}
		// A wrong type is a server error, not kept.
		must(t, srv, "SET", "s", "x")
		for range 2 {
			err := c.DoCached(ctx, time.Hour, nil, "HGET", "s", "f")
			var se *resp.ServerError
			if !errors.As(err, &se) || se.Code() != "WRONGTYPE" {
				t.Fatalf("HGET of a string: %v", err)
			}
		}
		for _, args := range [][]string{{"TTL", "k"}, {"SET", "k", "v"}, {"EXISTS", "a", "b"}, {"GET"}, {}} {
			err := c.DoCached(ctx, time.Hour, nil, args...)
			var ne *cache.NotCacheableError
			if !errors.Is(err, cache.ErrNotCacheable) || !errors.As(err, &ne) {
				t.Errorf("%v: %v, want a NotCacheableError", args, err)
			}
		}
	})
}

// After Close every call fails with ErrClosed, and New refuses bad
// options.
func TestCloseAndOptions(t *testing.T) {
	c := newCache(t, opts(3))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Get(testCtx(t), "k", time.Hour); !errors.Is(err, cache.ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
	if _, err := c.Do(testCtx(t), "PING"); !errors.Is(err, cache.ErrClosed) {
		t.Fatalf("Do after Close: %v", err)
	}
	for _, o := range []cache.Options{
		{Mode: cache.Mode(7)},
		{Prefixes: []string{"p"}},
		{MaxBytes: -1},
	} {
		o.Addr = srv.Addr
		if _, err := cache.New(testCtx(t), o); !errors.Is(err, cache.ErrOptions) {
			t.Errorf("%+v: %v, want ErrOptions", o, err)
		}
	}
}

// Close stops every goroutine the Cache started, under both protocols.
func TestCloseStopsGoroutines(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		servertest.Need(t, srv)
		before := runtime.NumGoroutine()
		c := newCache(t, opts(proto))
		must(t, srv, "SET", "k", "v")
		wantGet(t, c, "k", "v")
		if runtime.NumGoroutine() <= before {
			t.Fatalf("no goroutine started?")
		}
		c.Close()
		waitFor(t, "the goroutines to stop", func() bool { return runtime.NumGoroutine() <= before })
	})
}

// Commands that would switch tracking off or change it under the Cache
// are refused before sending.
func TestTrackingCommandsRefused(t *testing.T) {
	c := newCache(t, opts(3))
	for _, args := range [][]string{{"CLIENT", "TRACKING", "OFF"}, {"client", "caching", "no"}} {
		_, err := c.Do(testCtx(t), args...)
		if !errors.Is(err, cache.ErrRefused) {
			t.Errorf("%v: %v, want ErrRefused", args, err)
		}
	}
	// Other CLIENT subcommands go through; a malformed command is
	// refused before sending.
	if v, err := c.Do(testCtx(t), "CLIENT", "ID"); err != nil || v.Type != resp.Integer {
		t.Errorf("CLIENT ID: %v, %v", v, err)
	}
	if err := c.DoFunc(testCtx(t), resp.Cmd{}, nil); err == nil {
		t.Errorf("an empty command was sent")
	}
	must(t, srv, "SET", "k", "v1")
	wantGet(t, c, "k", "v1")
	must(t, srv, "SET", "k", "v2")
	if err := c.Sync(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	wantGet(t, c, "k", "v2") // still tracked
}

// A silent fault (the connection that carries the invalidations stops
// delivering, with no error) is caught by the health check: the cache is
// emptied and the Cache redials, so a write made meanwhile is seen.
func TestHealthCheckCatchesSilence(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		servertest.Need(t, srv)
		srv.Flush(t)
		r := newRelay(t, srv.Addr)
		o := opts(proto)
		o.Addr = srv.Addr
		// The connection that carries invalidations: the reading one
		// under RESP3, the second (redirect) one under RESP2.
		o.Dialer = nthThrough(r.addr(), map[int]int{3: 1, 2: 2}[proto])
		o.HealthInterval = 10 * time.Millisecond
		o.HealthTimeout = 100 * time.Millisecond
		c := newCache(t, o)
		must(t, srv, "SET", "k", "v1")
		wantGet(t, c, "k", "v1")
		wantGet(t, c, "k", "v1")
		r.hold() // silence: nothing more arrives, nothing fails
		must(t, srv, "SET", "k", "v2")
		waitFor(t, "the health check to give up", func() bool { return c.Stats().Reconnects == 1 })
		wantGet(t, c, "k", "v2")
	})
}

// MGet reads each key through the cache, the misses together.
func TestMGet(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		c := newCache(t, opts(proto))
		must(t, srv, "SET", "a", "1")
		must(t, srv, "SET", "c", "3")
		wantGet(t, c, "a", "1")
		got, err := c.MGet(testCtx(t), time.Hour, "a", "b", "c", "a")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 4 || string(got[0]) != "1" || got[1] != nil || string(got[2]) != "3" || string(got[3]) != "1" {
			t.Fatalf("MGet = %q", got)
		}
		if s := c.Stats(); s.Hits != 2 || s.Misses != 3 || s.Entries != 3 {
			t.Fatalf("%+v: want a hit twice, b and c read once", s)
		}
		must(t, srv, "SET", "b", "2")
		if err := c.Sync(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		got, err = c.MGet(testCtx(t), time.Hour, "a", "b", "c")
		if err != nil || string(got[1]) != "2" {
			t.Fatalf("MGet after SET b = %q, %v", got, err)
		}
		must(t, srv, "HSET", "h", "f", "v")
		if _, err := c.MGet(testCtx(t), time.Hour, "a", "h"); err == nil {
			t.Fatalf("MGet of a hash: no error")
		}
	})
}

// Over TLS, both connections (under RESP2 the redirect one too) are
// encrypted, and invalidations arrive.
func TestTLS(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		servertest.Need(t, srv)
		s, err := servertest.Start(servertest.Options{TLS: true})
		if errors.Is(err, servertest.ErrNoTLS) {
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Stop() })
		o := opts(proto)
		o.Addr = s.TLSAddr
		o.TLS = &tls.Config{RootCAs: s.CACertPool}
		c := newCache(t, o)
		must(t, s, "SET", "k", "v1")
		wantGet(t, c, "k", "v1")
		must(t, s, "SET", "k", "v2")
		if err := c.Sync(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		wantGet(t, c, "k", "v2")
	})
}

// With a password and a database other than 0, both connections
// authenticate, and the reads are of the chosen database.
func TestAuthAndDB(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		s := startServer(t, servertest.Options{Password: "s3cret"})
		o := opts(proto)
		o.Addr, o.Password, o.DB = s.Addr, "s3cret", 2
		c := newCache(t, o)
		if _, err := c.Do(testCtx(t), "SET", "k", "db2"); err != nil {
			t.Fatal(err)
		}
		wantGet(t, c, "k", "db2")
		if v, err := c.Do(testCtx(t), "SET", "k", "db2b"); err != nil || v.Text() != "OK" {
			t.Fatal(v, err)
		}
		wantGet(t, c, "k", "db2b")
		if _, err := cache.New(testCtx(t), cache.Options{Options: conn.Options{Addr: s.Addr, Password: "wrong", Protocol: proto}}); err == nil {
			t.Fatal("a wrong password: no error")
		}
	})
}

// A failover that turns the Cache's node into a replica of another: the
// full sync replaces its data (a flush invalidation empties the cache),
// and the new primary's writes, replicated, invalidate as any write.
func TestNodeBecomesReplica(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		a := startServer(t, servertest.Options{})
		b := startServer(t, servertest.Options{Args: []string{"--repl-diskless-sync-delay", "0"}})
		o := opts(proto)
		o.Addr = a.Addr
		c := newCache(t, o)
		must(t, a, "SET", "k", "on-a")
		must(t, b, "SET", "k", "on-b")
		wantGet(t, c, "k", "on-a")
		host, port, _ := net.SplitHostPort(b.Addr)
		must(t, a, "REPLICAOF", host, port)
		t.Cleanup(func() { a.Do("REPLICAOF", "NO", "ONE") })
		waitFor(t, "the sync", func() bool {
			info, err := a.Do("INFO", "replication")
			return err == nil && strings.Contains(info, "master_link_status:up")
		})
		if err := c.Sync(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		wantGet(t, c, "k", "on-b")
		must(t, b, "SET", "k", "on-b-2")
		// Applied on a (WAIT may count an ack from before the write,
		// right after a sync): then its invalidation has been sent.
		waitFor(t, "the write replicated", func() bool {
			v, err := a.Do("GET", "k")
			return err == nil && v == "on-b-2"
		})
		if err := c.Sync(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		wantGet(t, c, "k", "on-b-2")
		if s := c.Stats(); s.Flushes == 0 {
			t.Errorf("%+v: the sync did not empty the cache", s)
		}
	})
}
