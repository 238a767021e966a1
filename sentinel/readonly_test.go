package sentinel_test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/scriptpeer"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
	"github.com/echomq/echomq-go/sentinel"
)

// TestReadOnlyReResolves: the node the client writes to is demoted
// without any sentinel announcing it (a scripted sentinel, which
// announces nothing, names it). The READONLY answer has the MasterSet
// check the node's role and end its connections; the client then refuses
// the node (role slave) until the sentinel names the new primary, and
// writes go there. Without the READONLY hook the client would write to
// the replica for ever.
func TestReadOnlyReResolves(t *testing.T) {
	a, err := servertest.Start(servertest.Options{})
	if errors.Is(err, servertest.ErrNoServer) && !servertest.InCI() {
		t.Skip(servertest.SkipMessage)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	b, err := servertest.Start(servertest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	var named atomic.Value
	named.Store(a.Addr)
	fake := scriptedSentinel(t, func() string { return named.Load().(string) })

	ctx := tctx(t)
	o := sentinel.Options{MasterName: "m", Sentinels: []string{fake}, SentinelTimeout: 500e6}
	o.MinBackoff, o.MaxBackoff = 10e6, 50e6
	cl := newClient(t, o)
	if _, err := cl.Do(ctx, "SET", "k", "a"); err != nil {
		t.Fatal(err)
	}
	// a becomes b's replica; the sentinel still names a.
	if _, err := a.Do("REPLICAOF", "127.0.0.1", strconv.Itoa(b.Port)); err != nil {
		t.Fatal(err)
	}
	_, err = cl.Do(ctx, "SET", "k", "x")
	var se *resp.ServerError
	if !errors.As(err, &se) || !se.HasCode(resp.CodeReadOnly) {
		t.Fatalf("write to the demoted node: %v, want READONLY", err)
	}
	waitFor(t, ctx, "the demoted node refused", func() bool {
		_, err := cl.Do(ctx, "SET", "k", "x")
		return errors.Is(err, conn.ErrNotConnected) && errors.Is(err, sentinel.ErrNotPrimary)
	})
	named.Store(b.Addr)
	waitFor(t, ctx, "writes to the new primary", func() bool {
		_, err := cl.Do(ctx, "SET", "k", "b")
		return err == nil
	})
	if got, _ := b.Do("GET", "k"); got != "b" {
		t.Fatalf("on the new primary: %q", got)
	}
	if got := cl.MasterSet().Primary(); got != b.Addr {
		t.Fatalf("Primary %s, want %s", got, b.Addr)
	}
}

// scriptedSentinel answers GET-MASTER-ADDR-BY-NAME with addr() and
// announces nothing; HELLO and SENTINEL MASTER are refused (RESP2, no
// config-epoch), SUBSCRIBE unanswered.
func scriptedSentinel(t *testing.T, addr func() string) string {
	return scriptpeer.Listen(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			args, err := scriptpeer.ReadCommand(r)
			if err != nil || len(args) == 0 {
				return
			}
			cmd := strings.ToUpper(args[0])
			if cmd == "SENTINEL" && len(args) > 1 {
				cmd += " " + strings.ToUpper(args[1])
			}
			switch cmd {
			case "HELLO":
				fmt.Fprint(c, "-ERR unknown command 'HELLO'\r\n")
			case "PING":
				fmt.Fprint(c, "+PONG\r\n")
			case "SENTINEL GET-MASTER-ADDR-BY-NAME":
				host, port, _ := net.SplitHostPort(addr())
				fmt.Fprintf(c, "*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(host), host, len(port), port)
			case "SENTINEL SENTINELS":
				fmt.Fprint(c, "*0\r\n")
			case "SENTINEL MASTER":
				// No config-epoch told: its answer is never stale.
				fmt.Fprint(c, "-ERR unknown subcommand 'MASTER'\r\n")
			}
		}
	})
}

// TestSentinelsDisagree: the first sentinel names a replica, the second
// the primary. The role check refuses the replica, the sentinel that
// named it is asked last from then on, and the client connects to the
// primary; no write reaches the replica.
func TestSentinelsDisagree(t *testing.T) {
	set := startSet(t, servertest.SentinelOptions{Replicas: 1, Sentinels: 1, Quorum: 1})
	replica := set.Data[1]
	replica.ResetStats(t)
	liar := lyingSentinel(t, replica.Addr)
	o := opts(set, "", "")
	o.Sentinels = []string{liar, set.Sentinels[0].Addr}
	cl := newClient(t, o)
	if _, err := cl.Do(tctx(t), "SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if got := cl.MasterSet().Primary(); got != set.Data[0].Addr {
		t.Fatalf("primary %s, want %s", got, set.Data[0].Addr)
	}
	if s := cl.MasterSet().Sentinels(); s[len(s)-1] != liar {
		t.Fatalf("sentinels %v: the liar is not asked last", s)
	}
	// The replica runs the primary's SET by replication; a SET sent to
	// it would have been refused READONLY.
	if info, err := replica.Do("INFO", "errorstats"); err != nil || strings.Contains(info, "READONLY") {
		t.Fatalf("the replica refused a write: %q, %v", info, err)
	}
}
