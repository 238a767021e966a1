package cmds

import (
	"bufio"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
)

// srv is the package's private server (valkey-server when on PATH, else
// redis-server): the tests run once per server, RESP2 and RESP3 each.
var srv *servertest.Server

func TestMain(m *testing.M) {
	os.Exit(servertest.Main(m, &srv, servertest.Options{Debug: true}))
}

// waitLong bounds every read: only against a hang.
const waitLong = 20 * time.Second

// raw is a connection of our own, speaking the protocol given, so that
// every command (MULTI, SUBSCRIBE, CLIENT REPLY, HELLO, …) runs on a
// connection nobody else uses.
type raw struct {
	t  testing.TB
	c  net.Conn
	w  *bufio.Writer
	rd *resp.Reader
}

func dialRaw(t testing.TB, proto int) *raw { t.Helper(); return dialRawAt(t, srv.Addr, proto) }

func dialRawAt(t testing.TB, addr string, proto int) *raw {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, waitLong)
	if err != nil {
		t.Fatal(err)
	}
	r := &raw{t: t, c: c, w: bufio.NewWriter(c), rd: resp.NewReader(c)}
	t.Cleanup(func() { c.Close() })
	if proto == 3 {
		if v, err := r.do(resp.AppendCommand(nil, "HELLO", "3")); err != nil || v.Type != resp.Map {
			t.Fatalf("HELLO 3: %v %v", v, err)
		}
	}
	return r
}

// do sends encoded commands and reads one reply.
func (r *raw) do(b []byte) (resp.Value, error) {
	r.c.SetDeadline(time.Now().Add(waitLong))
	if _, err := r.w.Write(b); err != nil {
		return resp.Value{}, err
	}
	if err := r.w.Flush(); err != nil {
		return resp.Value{}, err
	}
	return r.next()
}

func (r *raw) next() (resp.Value, error) {
	for {
		v, err := r.rd.Next()
		if err != nil {
			return v, err
		}
		if v.Type == resp.Push && r.skipPush(v) {
			continue
		}
		return v.Clone(), nil
	}
}

// skipPush tells a push that is not a reply (an invalidation) from a
// subscribe confirmation, which is.
func (r *raw) skipPush(v resp.Value) bool {
	return len(v.Elems) > 0 && strings.EqualFold(v.Elems[0].Text(), "invalidate")
}

// args returns the arguments of an encoded command.
func args(t testing.TB, cmd resp.Cmd) []string {
	t.Helper()
	v, _, err := resp.Parse(cmd.Bytes(), resp.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var a []string
	for _, e := range v.Elems {
		a = append(a, e.Text())
	}
	return a
}
