package emqmodule

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/servertest"
)

// TestLoadArgs: the load arguments choose the fence. None on a standalone
// server, or "fence key" in any case, read {emq}:version on every call
// (EMQFENCE when it is absent or of another major); "fence client" reads
// it on none; "fence key" on a cluster-enabled server, and any other
// argument, keep the server from starting, and its log says why.
func TestLoadArgs(t *testing.T) {
	so := Need(t, "")
	pair(t) // skips without a server binary
	enqueue := func(s *servertest.Server) (string, error) {
		id := "JOB0000000000F"
		return s.Do("EMQ.ENQUEUE", "2", "emq:{fa}:job:"+id, "emq:{fa}:pending", id, "x")
	}
	for _, args := range [][]string{nil, {"FENCE", "Key"}} {
		s := startServer(t, so, servertest.Options{}, args...)
		_, err := enqueue(s)
		require.ErrorContains(t, err, "EMQFENCE {emq}:version is not set", "load args %q", args)
	}
	s := startServer(t, so, servertest.Options{}, "fence", "client")
	for _, v := range []string{"", "echomq:7.0.0"} { // the client's check at connect is the fence
		if v != "" {
			_, err := s.Do("SET", emq.VersionKey, v)
			require.NoError(t, err)
		}
		_, err := s.Do("DEL", "emq:{fa}:job:JOB0000000000F", "emq:{fa}:pending")
		require.NoError(t, err)
		got, err := enqueue(s)
		require.NoError(t, err, "fence client, {emq}:version %q", v)
		require.Equal(t, "1", got)
	}
	for _, args := range [][]string{{"fence"}, {"fence", "maybe"}, {"fence", "key", "x"}, {"other", "client"}, {"fence", ""}} {
		s, err := Start(so, servertest.Options{}, args...)
		if err == nil {
			s.Stop()
			t.Fatalf("load args %q: the server started", args)
		}
		require.Contains(t, err.Error(), "emq: bad load arguments", "load args %q", args)
	}
	s, err := Start(so, servertest.Options{Cluster: true}, "fence", "key")
	if err == nil {
		s.Stop()
		t.Fatal(`a cluster-enabled server loaded the module with "fence key"`)
	}
	require.Contains(t, err.Error(), `emq: refusing "fence key" on a cluster-enabled server`)
}

// startServer's module arguments: see Start.
func startServer(t testing.TB, so string, opts servertest.Options, args ...string) *servertest.Server {
	t.Helper()
	return startServerArgs(t, so, opts, args)
}

// TestClusterRouting: on a 3-primary cluster loading the module with no
// argument (fence client there), each command is routed by its declared
// keys as EVALSHA's are: a node that does not serve their slot answers
// MOVED to the one that does (and writes nothing), keys of two slots are
// CROSSSLOT, and the owner runs it with no {emq}:version on any node. A
// call whose numkeys is wrong declares no keys and gets the module's own
// error wherever it is sent.
func TestClusterRouting(t *testing.T) {
	so := Need(t, "")
	pair(t)
	c, err := servertest.StartCluster(3, 0, servertest.Options{Args: LoadArgs(nil, so)})
	if errors.Is(err, servertest.ErrNoServer) && !servertest.InCI() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err) // the module refused the cluster, say
	}
	defer c.Stop()
	const q = "route"
	slot := int(emq.Slot("{" + q + "}"))
	owner := c.SlotOwner(slot)
	id := "JOB0000000000R"
	args := []string{id, "x", "1", "0", "0", "0", "0", "0"}
	for _, cmd := range commands {
		keys := make([]string, len(cmd.keys))
		for i, k := range cmd.keys {
			if k == "job:" {
				k += id
			}
			keys[i] = "emq:{" + q + "}:" + k
		}
		line := append(append([]string{"EMQ." + strings.ToUpper(cmd.name), strconv.Itoa(len(keys))}, keys...), args...)
		for _, n := range c.Primaries {
			got, err := n.Do(line...)
			if n != owner {
				want := "MOVED " + strconv.Itoa(slot) + " " + owner.Addr
				require.ErrorContains(t, err, want, "%s sent to %s: %q", cmd.name, n.Addr, got)
				keys, err := n.Do("DBSIZE")
				require.NoError(t, err)
				require.Equal(t, "0", keys, "%s on %s wrote", cmd.name, n.Addr)
				continue
			}
			if err != nil {
				require.NotContains(t, err.Error(), "MOVED", cmd.name)
				require.NotContains(t, err.Error(), "EMQFENCE", cmd.name)
			}
		}
		if len(keys) > 1 {
			cross := append([]string(nil), line...)
			cross[3] = strings.Replace(cross[3], "{"+q+"}", "{other}", 1)
			_, err := owner.Do(cross...)
			require.ErrorContains(t, err, "CROSSSLOT", cmd.name)
		}
		wrong := append([]string(nil), line...)
		wrong[1] = strconv.Itoa(len(keys) + 1)
		for _, n := range c.Primaries {
			_, err := n.Do(wrong...)
			require.ErrorContains(t, err, "takes numkeys "+strconv.Itoa(len(keys)), "%s on %s", cmd.name, n.Addr)
		}
	}
	got, err := owner.Do("HGET", "emq:{"+q+"}:job:"+id, "state")
	require.NoError(t, err)
	require.NotEmpty(t, got, "the owner ran enqueue")
}

// TestExecutorOnCluster: over a cluster client, the executor choice asks
// every primary. With the module on each, auto picks it and a queue's
// job runs through EMQ.* on its slot's primary; after MODULE UNLOAD on
// one primary, CheckNative names that node (a *NativeNodeError matching
// ErrNoNative), auto opens queues on the scripts (whatever their slot),
// ExecutorNative refuses to open, and a queue opened natively before,
// whose slot that node serves, falls back to the scripts (auto) or fails
// with ErrNativeGone (native), nothing run twice.
func TestExecutorOnCluster(t *testing.T) {
	so := Need(t, "")
	pair(t)
	c, err := servertest.StartCluster(3, 0, servertest.Options{Args: LoadArgs([]string{"--enable-module-command", "yes"}, so)})
	if errors.Is(err, servertest.ErrNoServer) && !servertest.InCI() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err) // the module refused the cluster, say
	}
	defer c.Stop()
	ctx := tctx(t)
	cl, err := cluster.NewClient(ctx, cluster.Options{Seeds: c.Addrs()})
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, emq.CheckNative(ctx, cl))

	const q = "xc"
	keys, err := emq.NewKeys(q)
	require.NoError(t, err)
	ownerAddr := cl.Owner(keys.Pending)
	var owner *servertest.Server
	for _, p := range c.Primaries {
		if p.Addr == ownerAddr {
			owner = p
		}
	}
	require.NotNil(t, owner, "no primary serves %s", keys.Pending)
	auto, err := emq.Open(ctx, cl, q)
	require.NoError(t, err)
	native, err := emq.Open(ctx, cl, q, emq.WithExecutorChoice(emq.ExecutorNative))
	require.NoError(t, err)
	require.True(t, auto.IsNative() && native.IsNative())
	run := func(qq *emq.Queue) error {
		if _, err := qq.Enqueue(ctx, []byte("x")); err != nil {
			return err
		}
		j, ok, err := qq.Claim(ctx, time.Minute)
		if err != nil || !ok {
			return fmt.Errorf("claim: %v, %v", ok, err)
		}
		return qq.Complete(ctx, j.ID, j.Token, 0)
	}
	before := owner.CommandCalls(t, "emq.claim")
	require.NoError(t, run(auto))
	require.Equal(t, before+1, owner.CommandCalls(t, "emq.claim"), "the claim ran natively on the slot's primary")

	_, err = owner.Do("MODULE", "UNLOAD", "emq")
	require.NoError(t, err)
	err = emq.CheckNative(ctx, cl)
	require.ErrorIs(t, err, emq.ErrNoNative)
	ne, ok := errors.AsType[*emq.NativeNodeError](err)
	require.True(t, ok, "%v", err)
	require.Equal(t, owner.Addr, ne.Addr)
	require.Contains(t, err.Error(), "primary "+owner.Addr+": ")
	for _, name := range []string{q, "other-slot"} {
		x, err := emq.Open(ctx, cl, name)
		require.NoError(t, err)
		require.False(t, x.IsNative(), "auto on a cluster with a primary lacking the module: %s", name)
		require.NoError(t, run(x))
		_, err = emq.Open(ctx, cl, name, emq.WithExecutorChoice(emq.ExecutorNative))
		require.ErrorIs(t, err, emq.ErrNoNative)
	}
	// Opened before: auto falls back to the scripts, native fails.
	require.NoError(t, run(auto))
	require.False(t, auto.IsNative())
	_, err = native.Enqueue(ctx, []byte("y"))
	require.ErrorIs(t, err, emq.ErrNativeGone)
	n, err := owner.Do("ZCARD", keys.Pending)
	require.NoError(t, err)
	require.Equal(t, "0", n, "a refused native enqueue wrote nothing, every job run was completed")
}
