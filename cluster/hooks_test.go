package cluster_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cluster"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/emq"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// hookLog records what a Hook is shown, in order.
type hookLog struct {
	mu  sync.Mutex
	got []string
}

func (l *hookLog) add(e string) {
	l.mu.Lock()
	l.got = append(l.got, e)
	l.mu.Unlock()
}

func (l *hookLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.got
	l.got = nil
	return g
}

func (l *hookLog) hook() conn.Hook {
	return conn.Hook{
		BeforeCommand: func(ctx context.Context, cmd conn.CommandInfo, _ conn.RawCommand) context.Context {
			l.add("+" + cmd.Name)
			return ctx
		},
		AfterCommand: func(_ context.Context, cmd conn.CommandInfo, v resp.Value, _ time.Duration, err error) {
			text := v.Text()
			if v.Type == resp.Integer {
				text = strconv.FormatInt(v.Int, 10)
			}
			l.add(fmt.Sprintf("-%s %s %v", cmd.Name, text, err))
		},
		BeforePipeline: func(ctx context.Context, p conn.PipelineInfo) context.Context {
			l.add(fmt.Sprintf("pipeline of %d", len(p.Commands)))
			return ctx
		},
		AfterPipeline: func(_ context.Context, p conn.PipelineInfo, _ time.Duration, err error) {
			l.add(fmt.Sprintf("end of %d %v", len(p.Commands), err))
		},
	}
}

// The hooks of Options.Node see each command the caller sent through
// the cluster Client once, with its final reply: not the topology reads
// (CLUSTER SHARDS), nor a command's MOVED or ASK answer and the ASKING
// before it is sent again, nor a NOSCRIPT and the SCRIPT LOAD after it.
// What the caller sends on a node's own connection (Node) is seen.
func TestHooksSeeEachCommandOnce(t *testing.T) {
	c := privateCluster(t, 2, 0)
	src, dst := c.Primaries[0], c.Primaries[1]
	// A client reading the topology all the time: its hooks never see
	// those reads. The redirects are shown on another client, whose
	// topology is read only at start (a refresh every 10 ms could learn
	// of a moved slot before the command meets MOVED).
	watch := &hookLog{}
	watcher := newClient(t, c, func(o *cluster.Options) {
		o.RefreshInterval = 10 * time.Millisecond
		o.Node.Hooks = []conn.Hook{watch.hook()}
	})
	rec := &hookLog{}
	cl := newClient(t, c, func(o *cluster.Options) { o.Node.Hooks = []conn.Hook{rec.hook()} })
	ctx := testCtx(t)
	topologyReads(t, watcher, 3)
	require.Empty(t, watch.take(), "the topology reads are the Client's own")
	require.Empty(t, rec.take(), "the topology read at start is the Client's own")

	// MOVED: the slot moves behind the client's back.
	km := tagOn(c, src, "hm") + "k"
	sm := strconv.Itoa(int(emq.Slot(km)))
	for _, n := range []*servertest.Server{dst, src} {
		_, err := n.Do("CLUSTER", "SETSLOT", sm, "NODE", c.IDs[dst.Addr])
		require.NoError(t, err)
	}
	moved := cl.Stats().Moved
	_, err := cl.Do(ctx, "SET", km, "1")
	require.NoError(t, err)
	require.Greater(t, cl.Stats().Moved, moved, "the MOVED path was not taken")
	require.Equal(t, []string{"+SET", "-SET OK <nil>"}, rec.take())

	// ASK: the key already moved to the importing node.
	ka := tagOn(c, src, "ha") + "k"
	sa := strconv.Itoa(int(emq.Slot(ka)))
	_, err = cl.Do(ctx, "SET", ka, "5")
	require.NoError(t, err)
	rec.take()
	_, err = dst.Do("CLUSTER", "SETSLOT", sa, "IMPORTING", c.IDs[src.Addr])
	require.NoError(t, err)
	_, err = src.Do("CLUSTER", "SETSLOT", sa, "MIGRATING", c.IDs[dst.Addr])
	require.NoError(t, err)
	_, err = src.Do("MIGRATE", "127.0.0.1", strconv.Itoa(dst.Port), ka, "0", "5000")
	require.NoError(t, err)
	ask := cl.Stats().Ask
	v, err := cl.Do(ctx, "GET", ka)
	require.NoError(t, err)
	require.Equal(t, "5", v.Text())
	require.Greater(t, cl.Stats().Ask, ask, "the ASK path was not taken")
	require.Equal(t, []string{"+GET", "-GET 5 <nil>"}, rec.take())

	// NOSCRIPT: the script is loaded on the node, then run.
	src1 := "return 7"
	sum := sha1.Sum([]byte(src1))
	sha := hex.EncodeToString(sum[:])
	cl.RegisterScript(sha, src1)
	v, err = cl.Do(ctx, "EVALSHA", sha, 1, km)
	require.NoError(t, err)
	require.EqualValues(t, 7, v.Int)
	require.Positive(t, cl.Stats().ScriptLoads)
	require.Equal(t, []string{"+EVALSHA", "-EVALSHA 7 <nil>"}, rec.take())

	// A batch over both nodes: one pipeline, each command once.
	var b pipeline.Batch
	b.Add("GET", km)
	b.Add("GET", tagOn(c, src, "hb")+"k")
	require.NoError(t, b.Exec(ctx, cl))
	require.Equal(t, []string{"pipeline of 2", "+GET", "+GET", "-GET 1 <nil>", "-GET  <nil>", "end of 2 <nil>"}, rec.take())

	// On a node's own connection, the caller's command is seen.
	n, err := cl.Node(ctx, dst.Addr)
	require.NoError(t, err)
	_, err = n.Do(ctx, "PING")
	require.NoError(t, err)
	require.Equal(t, []string{"+PING", "-PING PONG <nil>"}, rec.take())

	topologyReads(t, watcher, 3)
	require.Empty(t, rec.take(), "the topology reads are the Client's own")
	require.Empty(t, watch.take(), "the topology reads are the Client's own")
}

// topologyReads waits until cl has read the topology n more times.
func topologyReads(t *testing.T, cl *cluster.Client, n uint64) {
	t.Helper()
	want := cl.Stats().Refreshes + n
	eventually(t, "topology reads", func() bool { return cl.Stats().Refreshes >= want })
}
