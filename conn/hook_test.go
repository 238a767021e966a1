package conn_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/faultproxy"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// hookEvent is one call to a hook.
type hookEvent struct {
	kind  string // "bp", "ap", "+", "-"
	name  string // the command's, or the pipeline's size
	reply string // AfterCommand's reply, as text
	err   error
	tag   any // the context value "tag" the After function saw
	raw   string
	keys  string // BeforeCommand's keys, space-separated
}

type tagKey struct{}

// hookRecorder is a Hook recording every call in order. Its Before
// functions put a tag in the context, which the After functions must see.
type hookRecorder struct {
	mu     sync.Mutex
	events []hookEvent
	seq    int
}

func (r *hookRecorder) add(e hookEvent) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *hookRecorder) take() []hookEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.events
	r.events = nil
	return e
}

func (r *hookRecorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

func (r *hookRecorder) hook() conn.Hook {
	return conn.Hook{
		BeforeCommand: func(ctx context.Context, cmd conn.CommandInfo, raw conn.RawCommand) context.Context {
			var keys []string
			for i := range raw.Keys() {
				keys = append(keys, string(raw.Key(i)))
			}
			r.mu.Lock()
			r.seq++
			tag := cmd.Name + "#" + strconv.Itoa(r.seq)
			r.events = append(r.events, hookEvent{kind: "+", name: cmd.Name, tag: ctx.Value(tagKey{}), raw: string(raw.Bytes()), keys: strings.Join(keys, " ")})
			r.mu.Unlock()
			return context.WithValue(ctx, tagKey{}, tag)
		},
		AfterCommand: func(ctx context.Context, cmd conn.CommandInfo, reply resp.Value, _ time.Duration, err error) {
			r.add(hookEvent{kind: "-", name: cmd.Name, reply: reply.Text(), err: err, tag: ctx.Value(tagKey{})})
		},
		BeforePipeline: func(ctx context.Context, p conn.PipelineInfo) context.Context {
			r.add(hookEvent{kind: "bp", name: strconv.Itoa(len(p.Commands))})
			return context.WithValue(ctx, tagKey{}, "pipeline")
		},
		AfterPipeline: func(ctx context.Context, p conn.PipelineInfo, _ time.Duration, err error) {
			r.add(hookEvent{kind: "ap", name: strconv.Itoa(len(p.Commands)), err: err, tag: ctx.Value(tagKey{})})
		},
	}
}

// script renders events as "+GET -GET bp2 …".
func script(evs []hookEvent) string {
	var b strings.Builder
	for _, e := range evs {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		if e.kind == "bp" || e.kind == "ap" {
			b.WriteString(e.kind + e.name)
			continue
		}
		b.WriteString(e.kind + e.name)
	}
	return b.String()
}

// checkPairs asserts that every "-" event carries the tag its "+" made,
// so that each After saw its own Before's context.
func checkPairs(t *testing.T, evs []hookEvent) {
	t.Helper()
	seq := map[string]bool{}
	for _, e := range evs {
		if e.kind == "-" {
			tag, _ := e.tag.(string)
			require.True(t, strings.HasPrefix(tag, e.name+"#"), "AfterCommand(%s) saw tag %v", e.name, e.tag)
			require.False(t, seq[tag], "tag %s ended twice", tag)
			seq[tag] = true
		}
	}
}

// TestHooksConn: on a Conn, hooks see each command once, in order, with
// its reply or error: a reply, a server error, a refusal, a done ctx, and
// a pipeline of 100 whose commands are seen in order inside the
// pipeline's events, each After with its Before's context.
func TestHooksConn(t *testing.T) {
	rec := &hookRecorder{}
	c := setup(t, conn.Options{Hooks: []conn.Hook{rec.hook()}})
	ctx := testCtx(t)
	require.Zero(t, rec.len(), "nothing of the handshake is hooked")

	_, err := c.Do(ctx, "set", "k", "v")
	require.NoError(t, err)
	_, err = c.Do(ctx, "HGET", "k", "f")
	require.ErrorContains(t, err, "WRONGTYPE")
	_, err = c.Do(ctx, "SUBSCRIBE", "news")
	require.ErrorIs(t, err, conn.ErrCommandRefused)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Do(done, "PING")
	require.ErrorIs(t, err, context.Canceled)
	evs := rec.take()
	require.Equal(t, "+SET -SET +HGET -HGET +SUBSCRIBE -SUBSCRIBE +PING -PING", script(evs))
	checkPairs(t, evs)
	require.Equal(t, string(resp.AppendCommand(nil, "set", "k", "v")), evs[0].raw, "raw is the command as sent")
	require.NoError(t, evs[1].err)
	require.Equal(t, "OK", evs[1].reply)
	var se *resp.ServerError
	require.ErrorAs(t, evs[3].err, &se)
	require.True(t, se.HasCode("WRONGTYPE"))
	require.Contains(t, evs[3].reply, "WRONGTYPE", "the error reply is passed too")
	require.ErrorIs(t, evs[5].err, conn.ErrCommandRefused)
	require.ErrorIs(t, evs[7].err, context.Canceled)

	var b pipeline.Batch
	for i := range 100 {
		b.Add("ECHO", "e"+strconv.Itoa(i))
	}
	require.NoError(t, b.Exec(ctx, c))
	evs = rec.take()
	require.Len(t, evs, 202)
	require.Equal(t, "bp100", script(evs[:1]))
	require.Equal(t, "ap100", script(evs[201:]))
	require.NoError(t, evs[201].err)
	require.Equal(t, "pipeline", evs[201].tag, "AfterPipeline sees BeforePipeline's context")
	for i := range 100 {
		require.Equal(t, "+", evs[1+i].kind)
		require.Equal(t, "pipeline", evs[1+i].tag, "a pipeline's commands get its context")
		require.Equal(t, string(resp.AppendCommand(nil, "ECHO", "e"+strconv.Itoa(i))), evs[1+i].raw)
		e := evs[101+i]
		require.Equal(t, "-", e.kind)
		require.Equal(t, "e"+strconv.Itoa(i), e.reply, "replies end in order")
		require.NoError(t, e.err)
	}
	checkPairs(t, evs)
}

// TestHooksBrokenConnection: a pipeline in flight when the connection
// breaks ends each command once, in order, with the fault, then the
// pipeline.
func TestHooksBrokenConnection(t *testing.T) {
	rec := &hookRecorder{}
	p := newProxy(t, srvAddr(t))
	c := setup(t, conn.Options{Addr: p.Addr(), Hooks: []conn.Hook{rec.hook()}})
	ctx := testCtx(t)
	_, err := c.Do(ctx, "PING")
	require.NoError(t, err)
	rec.take()
	p.Set(faultproxy.Mode{Stall: waitLong}) // replies are held
	up := p.BytesUp()
	errc := make(chan error, 1)
	go func() {
		var b pipeline.Batch
		for i := range 100 {
			b.Add("ECHO", "e"+strconv.Itoa(i))
		}
		errc <- b.Exec(ctx, c)
	}()
	waitFor(t, "the pipeline to reach the server", func() bool { return rec.len() == 101 && p.BytesUp() > up })
	p.CutAll()
	require.ErrorIs(t, <-errc, conn.ErrBroken)
	evs := rec.take()
	require.Len(t, evs, 202)
	for i, e := range evs[101:201] {
		require.Equal(t, "-ECHO", e.kind+e.name, "event %d", 101+i)
		require.ErrorIs(t, e.err, conn.ErrBroken)
	}
	require.Equal(t, "ap100", script(evs[201:]))
	require.ErrorIs(t, evs[201].err, conn.ErrBroken)
	checkPairs(t, evs)
}

// TestHooksClientResendOnce: a Client sends a call on its next
// connection when the current one had been closed by the server before
// anything was sent: hooks and the Observer see that command once, with
// its reply (before, the Observer saw it twice: once failed, once sent).
// Its refusals are seen once too.
func TestHooksClientResendOnce(t *testing.T) {
	s := startServer(t, servertest.Options{})
	ctx := testCtx(t)
	rec := &hookRecorder{}
	obs := &recorder{}
	cl, err := conn.NewClient(ctx, conn.Options{
		Addr: s.Addr, ClientName: "hook-victim", Hooks: []conn.Hook{rec.hook()}, Observer: obs,
	})
	require.NoError(t, err)
	defer cl.Close()
	got, err := echo(ctx, cl, "before")
	require.NoError(t, err)
	require.Equal(t, "before", got)
	_, err = s.Do("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
	require.NoError(t, err)
	waitFor(t, "the server to close the idle connection", func() bool {
		list, _ := s.Do("CLIENT", "LIST")
		return !strings.Contains(list, "name=hook-victim ")
	})
	rec.take()
	obs.take()
	got, err = echo(ctx, cl, "after")
	require.NoError(t, err)
	require.Equal(t, "after", got)
	evs := rec.take()
	require.Equal(t, "+ECHO -ECHO", script(evs))
	require.NoError(t, evs[1].err)
	require.Equal(t, "after", evs[1].reply)
	checkPairs(t, evs)
	o := obs.take()
	require.Equal(t, "+ECHO -ECHO", names(o), "the Observer sees the command once")
	require.NoError(t, o[1].err)

	// A blocking command goes on a dedicated connection: seen once.
	_, err = cl.Do(ctx, "BLPOP", "nothing", "0.01")
	require.NoError(t, err)
	_, err = cl.Do(ctx, "WAIT", "1", "0") // refused by the Client itself
	require.ErrorIs(t, err, conn.ErrCommandRefused)
	require.NoError(t, cl.Close())
	_, err = cl.Do(ctx, "PING")
	require.ErrorIs(t, err, conn.ErrClosed)
	evs = rec.take()
	require.Equal(t, "+BLPOP -BLPOP +WAIT -WAIT +PING -PING", script(evs))
	require.ErrorIs(t, evs[3].err, conn.ErrCommandRefused)
	require.ErrorIs(t, evs[5].err, conn.ErrClosed)
	require.Equal(t, "+BLPOP -BLPOP +WAIT -WAIT +PING -PING", names(obs.take()))
}

// TestHooksOrder: hooks run in the order given, the Observer last, each
// Before given the context the previous one returned.
func TestHooksOrder(t *testing.T) {
	var mu sync.Mutex
	var order []string
	mk := func(name string) conn.Hook {
		return conn.Hook{
			BeforeCommand: func(ctx context.Context, _ conn.CommandInfo, _ conn.RawCommand) context.Context {
				mu.Lock()
				order = append(order, "+"+name)
				mu.Unlock()
				prev, _ := ctx.Value(tagKey{}).(string)
				return context.WithValue(ctx, tagKey{}, prev+name)
			},
			AfterCommand: func(ctx context.Context, _ conn.CommandInfo, _ resp.Value, _ time.Duration, _ error) {
				mu.Lock()
				order = append(order, "-"+name+"("+ctx.Value(tagKey{}).(string)+")")
				mu.Unlock()
			},
		}
	}
	obs := &recorder{}
	c := setup(t, conn.Options{Hooks: []conn.Hook{mk("a"), {}, mk("b")}, Observer: obs})
	_, err := c.Do(testCtx(t), "PING")
	require.NoError(t, err)
	require.Equal(t, []string{"+a", "+b", "-a(ab)", "-b(ab)"}, order)
	require.Equal(t, "+PING -PING", names(obs.take()))
}

// TestAllocsHooked: a hook that keeps its context costs no allocation
// per command in steady state.
func TestAllocsHooked(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets are not measured under -race (sync.Pool drops items)")
	}
	var n int
	c := setup(t, conn.Options{Hooks: []conn.Hook{{
		BeforeCommand: func(context.Context, conn.CommandInfo, conn.RawCommand) context.Context { return nil },
		AfterCommand: func(context.Context, conn.CommandInfo, resp.Value, time.Duration, error) {
			n++
		},
	}}})
	ctx := context.Background()
	ping := resp.Command(nil, "PING")
	run := func() {
		if err := c.DoFunc(ctx, ping, nil); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		run()
	}
	if a := testing.AllocsPerRun(1000, run); a != 0 {
		t.Errorf("hooked DoFunc(PING) = %v allocs per call, want 0", a)
	}
	require.Equal(t, 1101, n, "AfterCommand once per call (AllocsPerRun runs once more)")
}

// TestHooksClientOwnCommandsUnseen: the commands a Client sends on its
// own behalf are not the user's: a BLPOP cancelled via its ctx is
// unblocked by CLIENT UNBLOCK on the shared connection (and, under
// RESP2, the lent connection's CLIENT ID is asked first), which hooks
// and the Observer do not see; the BLPOP they see once. The unblock
// happened (the server ran CLIENT UNBLOCK, and the lent connection came
// back: the next BLPOP runs on it) and the next commands work.
func TestHooksClientOwnCommandsUnseen(t *testing.T) {
	for _, proto := range []int{3, 2} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			servertest.Need(t, srv)
			srv.Flush(t)
			rec := &hookRecorder{}
			obs := &recorder{}
			cl, err := conn.NewClient(testCtx(t), conn.Options{
				Addr: srv.Addr, Protocol: proto, Hooks: []conn.Hook{rec.hook()}, Observer: obs,
			})
			require.NoError(t, err)
			defer cl.Close()
			srv.ResetStats(t)
			ctx, cancel := context.WithCancel(testCtx(t))
			ended := make(chan error, 1)
			go func() {
				_, err := cl.Do(ctx, "BLPOP", "own-q", "0") // only the unblock can end it
				ended <- err
			}()
			waitBlocked(t, 1)
			cancel()
			require.ErrorIs(t, <-ended, context.Canceled)
			waitBlocked(t, 0)
			require.Equal(t, int64(1), srv.CommandCalls(t, "client|unblock"), "the server unblocked the BLPOP")

			_, err = srv.Do("RPUSH", "own-q", "x")
			require.NoError(t, err)
			v, err := cl.Do(testCtx(t), "BLPOP", "own-q", "0")
			require.NoError(t, err)
			require.Equal(t, "x", v.Elems[1].Text())
			got, err := echo(testCtx(t), cl, "after")
			require.NoError(t, err)
			require.Equal(t, "after", got)
			list, err := srv.Do("CLIENT", "LIST")
			require.NoError(t, err)
			require.Equal(t, 1, strings.Count(list, " cmd=blpop "), "the lent connection came back: connections that ran BLPOP:\n%s", list)

			evs := rec.take()
			require.Equal(t, "+BLPOP -BLPOP +BLPOP -BLPOP +ECHO -ECHO", script(evs), "the hook sees the user's commands, once each")
			checkPairs(t, evs)
			require.Equal(t, "+BLPOP -BLPOP +BLPOP -BLPOP +ECHO -ECHO", names(obs.take()), "the Observer too")
		})
	}
}
