package conn_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// logSink is a slog.Handler keeping the records logged to it.
type logSink struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (s *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (s *logSink) Handle(_ context.Context, r slog.Record) error {
	s.mu.Lock()
	s.recs = append(s.recs, r.Clone())
	s.mu.Unlock()
	return nil
}
func (s *logSink) WithAttrs([]slog.Attr) slog.Handler { return s }
func (s *logSink) WithGroup(string) slog.Handler      { return s }

// funcs returns the "func" attribute of every record.
func (s *logSink) funcs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.recs {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "func" {
				out = append(out, a.Value.String())
			}
			return true
		})
	}
	return out
}

// panicHook is a Hook whose function kind panics for a submission
// holding an ECHO of "boom"; every other function records nothing and
// passes the context on.
func panicHook(kind string) conn.Hook {
	boom := func(cmds []conn.CommandInfo) bool {
		for _, c := range cmds {
			if c.Name == "ECHO" {
				return true
			}
		}
		return false
	}
	var h conn.Hook
	switch kind {
	case "BeforeCommand":
		h.BeforeCommand = func(ctx context.Context, cmd conn.CommandInfo, raw conn.RawCommand) context.Context {
			if cmd.Name == "ECHO" {
				panic("before " + string(raw.Bytes()))
			}
			return ctx
		}
	case "AfterCommand":
		h.AfterCommand = func(_ context.Context, cmd conn.CommandInfo, v resp.Value, _ time.Duration, _ error) {
			if cmd.Name == "ECHO" {
				panic(errors.New("after " + v.Text()))
			}
		}
	case "BeforePipeline":
		h.BeforePipeline = func(ctx context.Context, p conn.PipelineInfo) context.Context {
			if boom(p.Commands) {
				panic("before pipeline")
			}
			return ctx
		}
	case "AfterPipeline":
		h.AfterPipeline = func(_ context.Context, p conn.PipelineInfo, _ time.Duration, _ error) {
			if boom(p.Commands) {
				panic("after pipeline")
			}
		}
	}
	return h
}

// noPanic runs fn, turning a panic that reaches the caller into an
// error: before the fix, an AfterCommand's panic came out of the call.
func noPanic(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the call panicked: %v", r)
		}
	}()
	return fn()
}

// A panic in any hook function, on a Conn and on a Client, fails its own
// call with a *conn.PanicError naming the function (nothing is sent for a
// Before function's), and every other call, made at the same time or
// after, ends with its own correct reply: no role is left held. A second
// hook, set after the panicking one, still sees every command begin and
// end exactly once.
func TestHookPanicFailsItsOwnCall(t *testing.T) {
	kinds := []string{"BeforeCommand", "AfterCommand", "BeforePipeline", "AfterPipeline"}
	for _, kind := range kinds {
		for _, target := range []string{"Conn", "Client", "Conn+OnPush"} {
			t.Run(kind+"/"+target, func(t *testing.T) {
				ctx := testCtx(t)
				rec := &hookRecorder{}
				sink := &logSink{}
				opts := conn.Options{Addr: srv.Addr, Hooks: []conn.Hook{panicHook(kind), rec.hook()}, Logger: slog.New(sink)}
				s := targetSender(t, ctx, target, opts)
				// The panicking call: ECHO alone for the command hooks, in
				// a batch for the pipeline hooks.
				boom := func() error {
					if kind == "BeforeCommand" || kind == "AfterCommand" {
						_, err := echo(ctx, s, "boom")
						return err
					}
					var b pipeline.Batch
					b.Add("ECHO", "boom")
					b.Add("PING")
					return b.Exec(ctx, s)
				}
				check := func(err error) {
					t.Helper()
					var pe *conn.PanicError
					require.ErrorAs(t, err, &pe)
					require.Equal(t, kind, pe.Func)
					require.NotEmpty(t, pe.Stack)
					require.Contains(t, pe.Error(), kind+" panicked")
				}
				const n = 8
				for round := range 3 {
					var wg sync.WaitGroup
					errs := make(chan error, 2*n)
					for g := range n {
						wg.Add(2)
						go func() {
							defer wg.Done()
							errs <- noPanic(boom)
						}()
						go func() {
							defer wg.Done()
							key := fmt.Sprintf("k%d-%d", round, g)
							errs <- noPanic(func() error {
								if _, err := s.Do(ctx, "SET", key, key); err != nil {
									return err
								}
								v, err := s.Do(ctx, "GET", key)
								if err == nil && v.Text() != key {
									err = fmt.Errorf("GET %s = %q", key, v.Text())
								}
								return err
							})
						}()
					}
					done := make(chan struct{})
					go func() { wg.Wait(); close(done) }()
					select {
					case <-done:
					case <-time.After(waitLong):
						t.Fatal("calls hang after a hook's panic")
					}
					close(errs)
					booms := 0
					for err := range errs {
						var pe *conn.PanicError
						if errors.As(err, &pe) {
							check(err)
							booms++
							continue
						}
						require.NoError(t, err)
					}
					require.Equal(t, n, booms, "every panicking call fails with its panic")
				}
				// Later, alone, the panicking call fails as before and
				// the others work.
				check(boom())
				v, err := s.Do(ctx, "PING")
				require.NoError(t, err)
				require.Equal(t, "PONG", v.Text())
				// Every command the second hook saw began and ended once.
				begun := map[string]int{}
				for _, e := range rec.take() {
					switch e.kind {
					case "+":
						begun[e.name]++
					case "-":
						begun[e.name]--
					}
				}
				for name, d := range begun {
					require.Zero(t, d, "%s: begun minus ended", name)
				}
				require.Empty(t, sink.funcs(), "nothing to log: every panic was its call's error")
			})
		}
	}
}

// BeforeCommand's panic sends nothing: the ECHO never reaches the
// server (its INFO commandstats count stays), and the second hook sees
// the command begin and end with the *PanicError, as a refusal.
func TestHookPanicBeforeSendsNothing(t *testing.T) {
	ctx := testCtx(t)
	rec := &hookRecorder{}
	c := setup(t, conn.Options{Hooks: []conn.Hook{panicHook("BeforeCommand"), rec.hook()}})
	_, err := c.Do(ctx, "CONFIG", "RESETSTAT")
	require.NoError(t, err)
	rec.take()
	_, err = echo(ctx, c, "boom")
	var pe *conn.PanicError
	require.ErrorAs(t, err, &pe)
	info, err := c.Do(ctx, "INFO", "commandstats")
	require.NoError(t, err)
	require.NotContains(t, info.Text(), "cmdstat_echo:")
	ev := rec.take()
	require.Equal(t, "+", ev[0].kind)
	require.Equal(t, "ECHO", ev[0].name)
	require.Equal(t, "-", ev[1].kind)
	require.ErrorAs(t, ev[1].err, &pe)
}

// An AfterCommand that panics for a call which failed by itself (a
// fault) leaves the call its own error; the panic is logged to
// Options.Logger.
func TestHookPanicAfterFaultIsLogged(t *testing.T) {
	ctx := testCtx(t)
	sink := &logSink{}
	h := conn.Hook{AfterCommand: func(_ context.Context, cmd conn.CommandInfo, _ resp.Value, _ time.Duration, err error) {
		if err != nil {
			panic("after a fault")
		}
	}}
	c := setup(t, conn.Options{ClientName: "panicfault", Hooks: []conn.Hook{h}, Logger: slog.New(sink)})
	admin := dial(t, conn.Options{})
	errc := make(chan error, 1)
	go func() {
		_, err := c.Do(ctx, "BLPOP", "nothing-here", 0.0)
		errc <- err
	}()
	var id string
	require.Eventually(t, func() bool {
		id = namedID(t, admin, "panicfault", "blpop")
		return id != ""
	}, waitLong, time.Millisecond)
	mustDo(t, admin, "CLIENT", "KILL", "ID", id)
	err := <-errc
	require.ErrorIs(t, err, conn.ErrBroken)
	var pe *conn.PanicError
	require.False(t, errors.As(err, &pe), "the fault is the call's error: %v", err)
	require.Equal(t, []string{"AfterCommand"}, sink.funcs())
}

// namedID returns the CLIENT ID of the connection named name whose last
// command was cmd ("": any), or "".
func namedID(t testing.TB, c *conn.Conn, name, cmd string) string {
	t.Helper()
	v := mustDo(t, c, "CLIENT", "LIST")
	for _, line := range strings.Split(strings.TrimPrefix(v.Text(), "txt:"), "\n") {
		var id int64
		if _, err := fmt.Sscanf(line, "id=%d", &id); err != nil || !strings.Contains(line, " name="+name+" ") {
			continue
		}
		if cmd == "" || strings.Contains(line, " cmd="+cmd+" ") {
			return strconv.FormatInt(id, 10)
		}
	}
	return ""
}

// A panicking OnPush runs on the reading goroutine: it is recovered and
// logged, the push dropped, and the connection reads on: every call
// made meanwhile ends with its own reply.
func TestOnPushPanicIsLogged(t *testing.T) {
	ctx := testCtx(t)
	sink := &logSink{}
	var pushes atomic.Int64
	c := setup(t, conn.Options{Logger: slog.New(sink), OnPush: func(v resp.Value) {
		pushes.Add(1)
		panic("push " + v.Elems[0].Text())
	}})
	mustDo(t, c, "CLIENT", "TRACKING", "on")
	other := dial(t, conn.Options{})
	for i := range 20 {
		key := "push" + strconv.Itoa(i)
		mustDo(t, c, "GET", key) // tracked
		mustDo(t, other, "SET", key, "x")
		got, err := echo(ctx, c, key) // after the invalidation push
		require.NoError(t, err)
		require.Equal(t, key, got)
	}
	require.Eventually(t, func() bool { return len(sink.funcs()) == 20 }, waitLong, time.Millisecond)
	for _, f := range sink.funcs() {
		require.Equal(t, "OnPush", f)
	}
	require.EqualValues(t, 20, pushes.Load())
	require.NoError(t, c.Err())
}

// A panicking Dialer fails the dial with a *conn.PanicError, and a
// Client whose redial's Dialer panics goes on redialing: once the Dialer
// stops panicking, calls work again.
func TestDialerPanic(t *testing.T) {
	ctx := testCtx(t)
	_, err := conn.Dial(ctx, conn.Options{Addr: srv.Addr, Dialer: func(context.Context, string, string) (net.Conn, error) {
		panic("no dial")
	}})
	var pe *conn.PanicError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "Dialer", pe.Func)

	var panicking atomic.Bool
	var attempts atomic.Int64
	var d net.Dialer
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr, ClientName: "paniclater", MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if panicking.Load() {
				attempts.Add(1)
				panic("redial")
			}
			return d.DialContext(ctx, network, addr)
		}})
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	panicking.Store(true)
	admin := dial(t, conn.Options{})
	mustDo(t, admin, "CLIENT", "KILL", "ID", namedID(t, admin, "paniclater", ""))
	// The call finds the connection closed, waits for the redial, whose
	// Dialer panics.
	_, err = cl.Do(ctx, "PING")
	require.ErrorAs(t, err, &pe, "calls during the outage wrap the dial's panic")
	require.ErrorIs(t, err, conn.ErrNotConnected)
	require.Eventually(t, func() bool { return attempts.Load() >= 3 }, waitLong, time.Millisecond)
	panicking.Store(false)
	require.Eventually(t, func() bool {
		v, err := cl.Do(ctx, "PING")
		return err == nil && v.Text() == "PONG"
	}, waitLong, time.Millisecond)
}
