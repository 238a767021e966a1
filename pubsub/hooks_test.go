package pubsub_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/faultproxy"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pubsub"
	"github.com/echomq/echomq-go/resp"
)

// hookEvent is one call of a recorded hook: a Before with the command's
// arguments as sent, or an After with the first word of its reply and
// its error, and the mark its Before put in the context.
type hookEvent struct {
	after bool
	name  string
	args  string // Before: the arguments after the name, space-separated
	reply string // After: "subscribe", "PONG", "pong", an error's text…
	err   error
	mark  any
}

func (e hookEvent) String() string {
	if !e.after {
		return fmt.Sprintf("before %s %s", e.name, e.args)
	}
	return fmt.Sprintf("after %s %s %v", e.name, e.reply, e.err)
}

type markKey struct{}

// hookRec records every hook call; each Before marks its context with
// its sequence number, which its After must carry back.
type hookRec struct {
	mu     sync.Mutex
	events []hookEvent
	ended  chan string // the name of each command ended, as it ends
}

func newHookRec() *hookRec { return &hookRec{ended: make(chan string, 1024)} }

func (r *hookRec) hook() conn.Hook {
	return conn.Hook{
		BeforeCommand: func(ctx context.Context, cmd conn.CommandInfo, raw conn.RawCommand) context.Context {
			var args []string // raw is *N, then $len and the argument, each line CRLF-ended
			for i, line := range strings.Split(strings.TrimSuffix(string(raw.Bytes()), "\r\n"), "\r\n") {
				if i >= 2 && i%2 == 0 {
					args = append(args, line)
				}
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			if len(args) == 0 || args[0] != cmd.Name {
				panic(fmt.Sprintf("raw %q does not start with the command %q", raw.Bytes(), cmd.Name))
			}
			r.events = append(r.events, hookEvent{name: cmd.Name, args: strings.Join(args[1:], " ")})
			return context.WithValue(ctx, markKey{}, len(r.events))
		},
		AfterCommand: func(ctx context.Context, cmd conn.CommandInfo, reply resp.Value, _ time.Duration, err error) {
			word := string(reply.Str)
			if len(reply.Elems) > 0 {
				word = string(reply.Elems[0].Str)
			}
			r.mu.Lock()
			r.events = append(r.events, hookEvent{after: true, name: cmd.Name, reply: word, err: err, mark: ctx.Value(markKey{})})
			r.mu.Unlock()
			r.ended <- cmd.Name
		},
	}
}

// take returns the events since the last take, leaving out the health
// check's PINGs, and checks that every After carries its own Before's
// mark.
func (r *hookRec) take(t *testing.T) []string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for i, e := range r.events {
		if e.after {
			require.NotNil(t, e.mark, "%s: no mark", e)
			m := e.mark.(int) - 1
			require.Less(t, m, i)
			require.Equal(t, e.name, r.events[m].name, "%s ends %s", e, r.events[m])
			require.False(t, r.events[m].after)
		}
		if e.name != "PING" {
			out = append(out, e.String())
		}
	}
	r.events = r.events[:0]
	return out
}

// obsRec is an Observer counting starts and ends by name.
type obsRec struct {
	mu            sync.Mutex
	started, done map[string]int
}

func (o *obsRec) CommandStart(cmd conn.CommandInfo) {
	o.mu.Lock()
	o.started[cmd.Name]++
	o.mu.Unlock()
}

func (o *obsRec) CommandEnd(cmd conn.CommandInfo, _ time.Duration, _ error) {
	o.mu.Lock()
	o.done[cmd.Name]++
	o.mu.Unlock()
}

// A subscription's own commands go through Options.Hooks and the
// Observer, under both protocols: each (P/S)(UN)SUBSCRIBE starts with
// its arguments as sent and has ended, with the confirmation, by the
// time the call returns. The health check's PING is the subscription's
// housekeeping: the server sees it (CLIENT LIST), the hooks do not. The
// context a Before returns reaches its After.
func TestHooksSeeSubscriptionCommands(t *testing.T) {
	srv := startServer(t, servertest.Options{})
	for _, proto := range []int{3, 2} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ctx := testCtx(t)
			rec := newHookRec()
			obs := &obsRec{started: map[string]int{}, done: map[string]int{}}
			name := fmt.Sprintf("hooksub%d", proto)
			sub := newSub(t, pubsub.Options{
				Options:      conn.Options{Addr: srv.Addr, Protocol: proto, ClientName: name, Hooks: []conn.Hook{rec.hook()}, Observer: obs},
				PingInterval: 20 * time.Millisecond,
			})
			require.Empty(t, rec.take(t), "the handshake is not a subscription's command")

			require.NoError(t, sub.Subscribe(ctx, "a", "b"))
			require.Equal(t, []string{"before SUBSCRIBE a b", "after SUBSCRIBE subscribe <nil>"}, rec.take(t))
			require.NoError(t, sub.PSubscribe(ctx, "p.*"))
			require.NoError(t, sub.SSubscribe(ctx, "s"))
			require.NoError(t, sub.Unsubscribe(ctx, "a"))
			require.Equal(t, []string{
				"before PSUBSCRIBE p.*", "after PSUBSCRIBE psubscribe <nil>",
				"before SSUBSCRIBE s", "after SSUBSCRIBE ssubscribe <nil>",
				"before UNSUBSCRIBE a", "after UNSUBSCRIBE unsubscribe <nil>",
			}, rec.take(t))

			// The health check pings (the server's last command from the
			// subscriber is a PING), unseen by the hooks.
			require.Eventually(t, func() bool {
				v, err := srv.Do("CLIENT", "LIST")
				require.NoError(t, err)
				for _, line := range strings.Split(v, "\n") {
					if strings.Contains(line, "name="+name+" ") && strings.Contains(line, " cmd=ping ") {
						return true
					}
				}
				return false
			}, waitLong, 5*time.Millisecond)
			rec.mu.Lock()
			for _, e := range rec.events {
				require.NotEqual(t, "PING", e.name, "the health check's PING reached the hooks")
			}
			rec.mu.Unlock()

			require.NoError(t, sub.Close())
			obs.mu.Lock()
			defer obs.mu.Unlock()
			require.Equal(t, obs.started, obs.done)
			for _, name := range []string{"SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE"} {
				require.Equal(t, 1, obs.done[name], name)
			}
			require.Zero(t, obs.done["PING"])
		})
	}
}

// A command the server refuses ends, for the hooks, with the server's
// error and the error reply.
func TestHooksSeeRefusal(t *testing.T) {
	s := startServer(t, servertest.Options{})
	_, err := s.Do("ACL", "SETUSER", "reader", "on", ">pw", "resetchannels", "&open.*", "+@all", "~*")
	require.NoError(t, err)
	rec := newHookRec()
	sub := newSub(t, pubsub.Options{Options: conn.Options{Addr: s.Addr, Username: "reader", Password: "pw", Hooks: []conn.Hook{rec.hook()}}})
	err = sub.Subscribe(testCtx(t), "open.1", "secret")
	require.True(t, resp.IsCode(err, "NOPERM"), "got %v", err)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.events, 2)
	require.Equal(t, "open.1 secret", rec.events[0].args)
	require.True(t, resp.IsCode(rec.events[1].err, "NOPERM"), "got %v", rec.events[1].err)
	require.True(t, strings.HasPrefix(rec.events[1].reply, "NOPERM"), "reply %q", rec.events[1].reply)
}

// A command still owed its confirmation when the connection is lost ends,
// for the hooks, with the fault (exactly once); the SUBSCRIBE that
// restores the set on the next connection is seen too, and succeeds.
func TestHooksSeeFault(t *testing.T) {
	s := startServer(t, servertest.Options{})
	p, err := faultproxy.New(s.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	rec := newHookRec()
	sub := newSub(t, pubsub.Options{Options: conn.Options{
		Addr: p.Addr(), Hooks: []conn.Hook{rec.hook()},
		MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond,
	}})

	p.Set(faultproxy.Mode{Stall: waitLong}) // the server's answers are held back
	done := make(chan error, 1)
	go func() { done <- sub.Subscribe(testCtx(t), "x") }()
	eventually(t, "SUBSCRIBE is written", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.events) == 1
	})
	p.Set(faultproxy.Mode{})
	p.CutAll()
	require.NoError(t, <-done)

	rec.mu.Lock()
	events := slices.Clone(rec.events)
	rec.mu.Unlock()
	require.GreaterOrEqual(t, len(events), 4, "%v", events)
	require.Equal(t, "before SUBSCRIBE x", events[0].String())
	require.True(t, events[1].after)
	require.ErrorIs(t, events[1].err, conn.ErrBroken)
	require.Equal(t, "after SUBSCRIBE subscribe <nil>", events[len(events)-1].String())
	for i := 0; i < len(events); i += 2 { // each Before ended, once, before the next one
		require.False(t, events[i].after, "%v", events)
		require.True(t, events[i+1].after, "%v", events)
		require.Equal(t, i+1, events[i+1].mark)
		if events[i+1].err != nil {
			require.ErrorIs(t, events[i+1].err, conn.ErrBroken)
		}
	}
	rec.take(t)
}

// Subscribe subscribes with a Client's options, in one call: the
// message published through the Client arrives, and the hooks in its
// options see both the Client's PUBLISH and the subscription's
// SUBSCRIBE. Naming no channel, or a server that is not there, is an
// error.
func TestSubscribeWithClientOptions(t *testing.T) {
	servertest.Need(t, srv)
	ctx := testCtx(t)
	rec := newHookRec()
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr, Hooks: []conn.Hook{rec.hook()}})
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })

	sub, err := pubsub.Subscribe(ctx, cl.Options(), "news", "sport")
	require.NoError(t, err)
	t.Cleanup(func() { sub.Close() })
	require.Equal(t, []string{"before SUBSCRIBE news sport", "after SUBSCRIBE subscribe <nil>"}, rec.take(t))
	n, err := pubsub.Publish(ctx, cl, "sport", "goal")
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Equal(t, pubsub.Message{Channel: "sport", Payload: []byte("goal")}, receive(t, sub))
	require.Equal(t, []string{"before PUBLISH sport goal", "after PUBLISH  <nil>"}, rec.take(t))

	_, err = pubsub.Subscribe(ctx, cl.Options())
	require.Error(t, err)
	require.Empty(t, rec.take(t), "nothing is dialed for no channel")

	_, err = pubsub.Subscribe(ctx, conn.Options{Addr: "127.0.0.1:1", DialTimeout: time.Second}, "news")
	require.Error(t, err)
	require.NoError(t, ctx.Err())
}
