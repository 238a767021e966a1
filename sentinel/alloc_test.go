package sentinel_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/replica"
	"github.com/echomq/echomq-go/resp"
	"github.com/echomq/echomq-go/sentinel"
)

// The READONLY hook a MasterSet adds costs no allocation on a command
// that succeeds: a sentinel Client's DoFunc allocates what a plain
// conn.Client's does on the same primary. (On an error reply conn's hook
// machinery, whatever the hook, allocates a little more: logged.)
func TestAllocsWithReadOnlyHook(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets are not measured under -race")
	}
	set := startSet(t, servertest.SentinelOptions{Replicas: 1, Sentinels: 1, Quorum: 1})
	ctx := context.Background()
	plain, err := conn.NewClient(ctx, conn.Options{Addr: set.Data[0].Addr})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	cl := newClient(t, opts(set, "", ""))
	allocs := func(s conn.Sender, cmd resp.Cmd) float64 {
		run := func() { _ = s.DoFunc(ctx, cmd, func(resp.Value) error { return nil }) }
		for range 100 {
			run()
		}
		return testing.AllocsPerRun(1000, run)
	}
	ping, bad := resp.Command(nil, "PING"), resp.Command(nil, "LPUSH", "k")
	if p, s := allocs(plain, ping), allocs(cl, ping); s != p {
		t.Errorf("PING: %v allocations per call through sentinel, %v plain", s, p)
	}
	t.Logf("error reply: %v allocations per call through sentinel, %v plain", allocs(cl, bad), allocs(plain, bad))
}

// Neither password is printed, in any verb.
func TestOptionsPrintNoPassword(t *testing.T) {
	o, err := sentinel.ParseURL("redis+sentinel://:data-secret@s1/m?sentinel_password=sent-secret")
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if s := fmt.Sprintf(verb, o); strings.Contains(s, "secret") {
			t.Errorf("%s prints a password: %s", verb, s)
		}
	}
}

// A read routed to a replica allocates what the same read allocates on
// a plain conn.Client to that replica: the pick and the in-flight count
// that keeps a replica leaving the set open until its reads end (a
// recycled wrapper) add none.
func TestAllocsReplicaRead(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets are not measured under -race")
	}
	set := startSet(t, servertest.SentinelOptions{Replicas: 1, Sentinels: 1, Quorum: 1})
	ctx := context.Background()
	o := opts(set, "", "")
	o.Reads = replica.Options{Route: replica.Random}
	cl := newClient(t, o)
	waitFor(t, tctx(t), "the replica taking reads", func() bool { return len(cl.Replicas()) == 1 })
	rs := cl.Replicas()
	plain, err := conn.NewClient(ctx, conn.Options{Addr: rs[0]})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	get := resp.Command(nil, "GET", "k")
	allocs := func(s conn.Sender) float64 {
		run := func() { _ = s.DoFunc(ctx, get, func(resp.Value) error { return nil }) }
		for range 100 {
			run()
		}
		return testing.AllocsPerRun(1000, run)
	}
	if p, s := allocs(plain), allocs(cl); s != p {
		t.Errorf("GET: %v allocations per read through a sentinel Client's replica reads, %v plain", s, p)
	}
}
