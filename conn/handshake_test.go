package conn_test

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
)

func TestHandshakeRESP3(t *testing.T) {
	c := setup(t, conn.Options{})
	if c.Protocol() != 3 {
		t.Fatalf("Protocol() = %d, want 3", c.Protocol())
	}
	h := c.Hello()
	if h.Type != resp.Map {
		t.Fatalf("Hello() is a %v, want a map", h.Type)
	}
	proto, ok := h.Lookup("proto")
	if n, err := proto.AsInt(); !ok || err != nil || n != 3 {
		t.Fatalf("Hello()[proto] = %v (found %v), want 3", proto, ok)
	}
	if srvName, ok := h.Lookup("server"); !ok || srvName.Text() == "" {
		t.Fatalf("Hello() has no server field: %v", h)
	}
	// A RESP3-only type comes back as such: HGETALL is a map under RESP3.
	mustDo(t, c, "HSET", "h", "f", "v")
	if v := mustDo(t, c, "HGETALL", "h"); v.Type != resp.Map || v.Len() != 1 {
		t.Fatalf("HGETALL under RESP3 = %v, want a map of 1", v)
	}
}

func TestHandshakeProtocol2(t *testing.T) {
	c := setup(t, conn.Options{Protocol: 2})
	if c.Protocol() != 2 || !c.Hello().IsNull() {
		t.Fatalf("Protocol() = %d, Hello() = %v; want 2 and null", c.Protocol(), c.Hello())
	}
	mustDo(t, c, "HSET", "h", "f", "v")
	if v := mustDo(t, c, "HGETALL", "h"); v.Type != resp.Array || v.Len() != 2 {
		t.Fatalf("HGETALL under RESP2 = %v, want an array of 2", v)
	}
	if v := mustDo(t, c, "CLIENT", "INFO"); !strings.Contains(v.Text(), "resp=2") {
		t.Fatalf("CLIENT INFO = %q, want resp=2", v.Text())
	}
}

// A server without HELLO gets the RESP2 handshake, with AUTH, name and db
// still applied.
func TestHandshakeFallbackWithoutHello(t *testing.T) {
	s := startServer(t, servertest.Options{Password: "pw-fallback", Args: []string{"--rename-command", "HELLO", ""}})
	c := dial(t, conn.Options{Addr: s.Addr, Password: "pw-fallback", ClientName: "fallback", DB: 2})
	if c.Protocol() != 2 || !c.Hello().IsNull() {
		t.Fatalf("Protocol() = %d, Hello() = %v; want the RESP2 fallback", c.Protocol(), c.Hello())
	}
	if v := mustDo(t, c, "CLIENT", "GETNAME"); v.Text() != "fallback" {
		t.Fatalf("CLIENT GETNAME = %v", v)
	}
	mustDo(t, c, "SET", "k", "in-db-2")
	if got, err := s.Do("SELECT", "2"); err != nil || got != "OK" {
		t.Fatalf("raw SELECT: %q %v", got, err)
	}
	if got, _ := s.Do("GET", "k"); got != "" {
		t.Fatalf("key landed in db 0: %q", got)
	}
	if got, _ := s.Do("DBSIZE"); got != "0" {
		t.Fatalf("db 0 holds %s keys, want 0", got)
	}
}

func TestHandshakeAuth(t *testing.T) {
	const password = "correct-horse-battery"
	s := startServer(t, servertest.Options{Password: password})
	for _, proto := range []int{3, 2} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			c := dial(t, conn.Options{Addr: s.Addr, Password: password, Protocol: proto})
			if v := mustDo(t, c, "PING"); v.Text() != "PONG" {
				t.Fatalf("PING = %v", v)
			}
			for _, bad := range []conn.Options{
				{Addr: s.Addr, Password: "wrong-" + password, Protocol: proto},
				{Addr: s.Addr, Username: "nobody", Password: password, Protocol: proto},
			} {
				_, err := conn.Dial(testCtx(t), bad)
				if err == nil {
					t.Fatalf("Dial with %s succeeded", bad)
				}
				if strings.Contains(err.Error(), password) {
					t.Fatalf("error shows the password: %v", err)
				}
				if !resp.IsCode(err, resp.CodeWrongPass) && !resp.IsCode(err, resp.CodeNoAuth) {
					t.Fatalf("Dial with %s: %v, want WRONGPASS or NOAUTH", bad, err)
				}
				if s := bad.String(); strings.Contains(s, password) {
					t.Fatalf("Options.String shows the password: %s", s)
				}
			}
			// Without a password, RESP3's HELLO is refused at dial; RESP2
			// sends no handshake, so the first command gets NOAUTH, a
			// server error on a healthy connection.
			n, err := conn.Dial(testCtx(t), conn.Options{Addr: s.Addr, Protocol: proto})
			if proto == 3 {
				if !resp.IsCode(err, resp.CodeNoAuth) {
					t.Fatalf("RESP3 dial without a password: %v, want NOAUTH", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			if _, err := n.Do(testCtx(t), "PING"); !resp.IsCode(err, resp.CodeNoAuth) {
				t.Fatalf("RESP2 PING without a password: %v, want NOAUTH", err)
			}
		})
	}
}

func TestHandshakeACLUser(t *testing.T) {
	s := startServer(t, servertest.Options{})
	if _, err := s.Do("ACL", "SETUSER", "alice", "on", ">s3cret-alice", "~*", "&*", "+@all"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Do("ACL", "SETUSER", "bob", "on", ">s3cret-bob", "~bob:*", "+get"); err != nil {
		t.Fatal(err)
	}
	for _, proto := range []int{3, 2} {
		c := dial(t, conn.Options{Addr: s.Addr, Username: "alice", Password: "s3cret-alice", Protocol: proto})
		if v := mustDo(t, c, "ACL", "WHOAMI"); v.Text() != "alice" {
			t.Fatalf("RESP%d: ACL WHOAMI = %v", proto, v)
		}
		_, err := conn.Dial(testCtx(t), conn.Options{Addr: s.Addr, Username: "alice", Password: "s3cret-bob", Protocol: proto})
		if !resp.IsCode(err, resp.CodeWrongPass) || strings.Contains(err.Error(), "s3cret") {
			t.Fatalf("RESP%d: wrong password for alice: %v", proto, err)
		}
		// A permission error is a server error on a healthy connection.
		b := dial(t, conn.Options{Addr: s.Addr, Username: "bob", Password: "s3cret-bob", Protocol: proto})
		if _, err := b.Do(testCtx(t), "SET", "bob:x", "1"); !resp.IsCode(err, "NOPERM") {
			t.Fatalf("RESP%d: bob's SET: %v, want NOPERM", proto, err)
		}
		if v := mustDo(t, b, "GET", "bob:x"); !v.IsNull() {
			t.Fatalf("RESP%d: GET after NOPERM = %v", proto, v)
		}
	}
}

func TestHandshakeSelectDB(t *testing.T) {
	for _, proto := range []int{3, 2} {
		c := setup(t, conn.Options{DB: 3, Protocol: proto})
		mustDo(t, c, "SET", "dbkey", "three")
		got, err := srv.Do("GET", "dbkey")
		if err != nil || got != "" {
			t.Fatalf("RESP%d: db 0 sees %q, %v", proto, got, err)
		}
		if got, _ := srv.Do("INFO", "keyspace"); !strings.Contains(got, "db3:keys=1") {
			t.Fatalf("RESP%d: INFO keyspace = %q, want db3:keys=1", proto, got)
		}
		if v := mustDo(t, c, "CLIENT", "INFO"); !strings.Contains(v.Text(), " db=3 ") {
			t.Fatalf("RESP%d: CLIENT INFO = %q", proto, v.Text())
		}
	}
	// A database the server does not have fails the dial.
	_, err := conn.Dial(testCtx(t), conn.Options{Addr: srv.Addr, DB: 99})
	if err == nil || !strings.Contains(err.Error(), "DB index is out of range") {
		t.Fatalf("Dial DB 99: %v", err)
	}
}

func TestHandshakeClientName(t *testing.T) {
	for _, proto := range []int{3, 2} {
		name := fmt.Sprintf("echomq-test-%d", proto)
		c := setup(t, conn.Options{ClientName: name, Protocol: proto})
		if v := mustDo(t, c, "CLIENT", "GETNAME"); v.Text() != name {
			t.Fatalf("RESP%d: CLIENT GETNAME = %v, want %q", proto, v, name)
		}
	}
	_, err := conn.Dial(testCtx(t), conn.Options{Addr: srv.Addr, ClientName: "has space"})
	if err == nil {
		t.Fatal("a client name with a space was accepted")
	}
}

func TestHandshakeTLS(t *testing.T) {
	servertest.NeedTLS(t, srv)
	c := setup(t, conn.Options{Addr: srv.TLSAddr, TLS: &tls.Config{RootCAs: srv.CACertPool}, ClientName: "tls"})
	if c.Protocol() != 3 {
		t.Fatalf("Protocol() = %d over TLS", c.Protocol())
	}
	if v := mustDo(t, c, "CLIENT", "GETNAME"); v.Text() != "tls" {
		t.Fatalf("CLIENT GETNAME over TLS = %v", v)
	}
	if v := mustDo(t, c, "ECHO", strings.Repeat("x", 100_000)); v.Len() != 100_000 {
		t.Fatalf("ECHO of 100 kB over TLS: %d bytes", v.Len())
	}
	// rediss:// from ParseURL verifies against the same pool.
	o, err := conn.ParseURL("rediss://" + srv.TLSAddr + "/0?client_name=tls-url")
	if err != nil {
		t.Fatal(err)
	}
	o.TLS.RootCAs = srv.CACertPool
	u := dial(t, o)
	if v := mustDo(t, u, "CLIENT", "GETNAME"); v.Text() != "tls-url" {
		t.Fatalf("CLIENT GETNAME over rediss:// = %v", v)
	}
	// An unknown CA fails the dial with a certificate error, not a hang.
	_, err = conn.Dial(testCtx(t), conn.Options{Addr: srv.TLSAddr, TLS: &tls.Config{}, DialTimeout: waitLong})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Dial TLS with an unknown CA: %v", err)
	}
	// TLS spoken to the plain port fails the dial (the server waits for a
	// line end that a ClientHello may never send: DialTimeout ends it).
	start := time.Now()
	_, err = conn.Dial(testCtx(t), conn.Options{Addr: srv.Addr, TLS: &tls.Config{RootCAs: srv.CACertPool}, DialTimeout: 300 * time.Millisecond})
	if err == nil {
		t.Fatal("TLS to the plain port succeeded")
	}
	t.Logf("TLS to the plain port: %v after %v", err, time.Since(start).Round(time.Millisecond))
}

func TestHandshakeUnix(t *testing.T) {
	servertest.Need(t, srv)
	c := setup(t, conn.Options{Network: "unix", Addr: srv.UnixPath, DB: 1})
	mustDo(t, c, "SET", "u", "unix")
	if v := mustDo(t, c, "GET", "u"); v.Text() != "unix" {
		t.Fatalf("GET over unix = %v", v)
	}
	o, err := conn.ParseURL("unix://" + srv.UnixPath + "?db=1&protocol=2")
	if err != nil {
		t.Fatal(err)
	}
	u := dial(t, o)
	if v := mustDo(t, u, "GET", "u"); v.Text() != "unix" || u.Protocol() != 2 {
		t.Fatalf("GET over unix:// URL = %v (RESP%d)", v, u.Protocol())
	}
}

// TestHandshakeUnderSmallLimits: Options.Limits bound the commands'
// replies, not the handshake's: with MaxAggregate 4 a Conn and a Client
// connect under RESP2 and RESP3 (HELLO's reply is a map of 7 pairs,
// which failed Dial), and a reply of 5 elements is then over the limit,
// its own command's error, the connection kept.
func TestHandshakeUnderSmallLimits(t *testing.T) {
	servertest.Need(t, srv)
	ctx := testCtx(t)
	for _, proto := range []int{2, 3} {
		opts := conn.Options{Addr: srv.Addr, Protocol: proto, Limits: resp.Limits{MaxAggregate: 4}}
		c, err := conn.Dial(ctx, opts)
		if err != nil {
			t.Fatalf("RESP%d Dial: %v", proto, err)
		}
		cl, err := conn.NewClient(ctx, opts)
		if err != nil {
			t.Fatalf("RESP%d NewClient: %v", proto, err)
		}
		for _, s := range []conn.Sender{c, cl} {
			key := fmt.Sprintf("small-limits-%d", proto)
			if _, err := s.Do(ctx, "DEL", key); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Do(ctx, "RPUSH", key, "a", "b", "c", "d", "e"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Do(ctx, "LRANGE", key, 0, -1); !errors.Is(err, resp.ErrReplyTooLarge) {
				t.Fatalf("RESP%d LRANGE of 5 under MaxAggregate 4: %v", proto, err)
			}
			if v, err := s.Do(ctx, "LRANGE", key, 0, 3); err != nil || len(v.Elems) != 4 {
				t.Fatalf("RESP%d LRANGE of 4: %v, %v", proto, v, err)
			}
		}
		c.Close()
		cl.Close()
	}
}
