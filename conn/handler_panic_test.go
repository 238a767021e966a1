package conn_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// panicky is a user's Handler of ECHO a, ECHO boom, ECHO c that panics
// in Reply at the second reply ("Reply") or the last ("Last"), or in
// Done ("Done"), as mode says.
type panicky struct {
	mode  string // "Reply", "Last" or "Done"
	waits bool
	mu    sync.Mutex
	got   []string
	ended chan error // Done's err, once
}

func (h *panicky) Reply(i int, v resp.Value) {
	h.mu.Lock()
	h.got = append(h.got, v.Text())
	h.mu.Unlock()
	if h.mode == "Reply" && i == 1 || h.mode == "Last" && i == 2 {
		panic("reply " + v.Text())
	}
}

func (h *panicky) Done(err error) {
	h.ended <- err
	if h.mode == "Done" {
		panic(errors.New("done"))
	}
}

func (h *panicky) Waits() bool { return h.waits }

// sendPanicky sends the three ECHOs with a panicky Handler and returns
// what its Done was given.
func sendPanicky(ctx context.Context, s conn.Sender, mode string, waits bool) (got []string, err error) {
	var c resp.Cmds
	c.Add("ECHO", "a")
	c.Add("ECHO", "boom")
	c.Add("ECHO", "c")
	w, err := conn.CmdsOfBatch(&c)
	if err != nil {
		return nil, err
	}
	h := &panicky{mode: mode, waits: waits, ended: make(chan error, 2)}
	if err := noPanic(func() error { return s.Send(ctx, w, h) }); err != nil {
		return nil, err
	}
	select {
	case err = <-h.ended:
	case <-ctx.Done():
		return nil, fmt.Errorf("Done never called: %w", ctx.Err())
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.got), err
}

// A user's Handler panicking in Reply or in Done, on the reader
// goroutine or on a caller reading its own replies (Waits), on a Conn,
// a Client and a Conn with OnPush, neither kills the process nor leaves
// the reader role held: a panic in Reply (mid-submission or at its last
// reply) fails its own submission (Done
// gets a *conn.PanicError naming "Handler.Reply"; the rest of its
// replies are read and dropped), a panic in Done is logged, and 8
// concurrent callers each get their own correct replies, every round;
// a PING works after. Before the fix a panic on the reader goroutine
// killed the test binary, and one on a leader left the role held (every
// later call hung).
func TestHandlerPanic(t *testing.T) {
	for _, mode := range []string{"Reply", "Last", "Done"} {
		for _, waits := range []bool{true, false} {
			for _, target := range []string{"Conn", "Client", "Conn+OnPush"} {
				t.Run(fmt.Sprintf("%s/waits=%v/%s", mode, waits, target), func(t *testing.T) {
					ctx := testCtx(t)
					sink := &logSink{}
					opts := conn.Options{Addr: srv.Addr, Logger: slog.New(sink)}
					s := targetSender(t, ctx, target, opts)
					check := func(got []string, err error) {
						t.Helper()
						if mode != "Done" {
							var pe *conn.PanicError
							require.ErrorAs(t, err, &pe)
							require.Equal(t, "Handler.Reply", pe.Func)
							require.Contains(t, pe.Error(), "Handler.Reply panicked")
							if mode == "Last" {
								require.Equal(t, "reply c", pe.Value)
								require.Equal(t, []string{"a", "boom", "c"}, got)
								return
							}
							require.Equal(t, "reply boom", pe.Value)
							require.Equal(t, []string{"a", "boom"}, got, "the replies after the panic are dropped")
							return
						}
						require.NoError(t, err)
						require.Equal(t, []string{"a", "boom", "c"}, got)
					}
					const n = 8
					for round := range 3 {
						var wg sync.WaitGroup
						errs := make(chan error, 2*n)
						for g := range n {
							wg.Add(2)
							go func() {
								defer wg.Done()
								got, err := sendPanicky(ctx, s, mode, waits)
								if err == nil || errors.As(err, new(*conn.PanicError)) {
									check(got, err)
									err = nil
								}
								errs <- err
							}()
							go func() {
								defer wg.Done()
								key := fmt.Sprintf("hp%d-%d", round, g)
								errs <- noPanic(func() error {
									if _, err := s.Do(ctx, "SET", key, key); err != nil {
										return err
									}
									v, err := s.Do(ctx, "GET", key)
									if err == nil && v.Text() != key {
										return fmt.Errorf("GET %s = %q", key, v.Text())
									}
									if e, err := echo(ctx, s, key); err != nil || e != key {
										return fmt.Errorf("ECHO %s = %q, %v", key, e, err)
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
							t.Fatal("calls hang after a Handler's panic")
						}
						close(errs)
						for err := range errs {
							require.NoError(t, err)
						}
					}
					v, err := s.Do(ctx, "PING")
					require.NoError(t, err)
					require.Equal(t, "PONG", v.Text())
					if mode == "Done" {
						funcs := sink.funcs()
						require.Len(t, funcs, 3*n, "each Done's panic is logged")
						for _, f := range funcs {
							require.Equal(t, "Handler.Done", f)
						}
					} else {
						require.Empty(t, sink.funcs(), "a Reply's panic is its call's error")
					}
				})
			}
		}
	}
}

// DoFunc's fn runs on the caller's goroutine once the connection is done
// with the reply (it holds no role and no lock then): its panic is the
// caller's, as any function's it calls, and the connection goes on. 8
// concurrent callers whose fn panics, beside 8 whose fn does not, on a
// Conn and a Client: the well-behaved ones get their own replies, and a
// PING works after.
func TestDoFuncPanicIsTheCallers(t *testing.T) {
	for _, target := range []string{"Conn", "Client"} {
		t.Run(target, func(t *testing.T) {
			ctx := testCtx(t)
			var s conn.Sender
			if target == "Client" {
				cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr})
				require.NoError(t, err)
				t.Cleanup(func() { cl.Close() })
				s = cl
			} else {
				s = setup(t, conn.Options{})
			}
			const n = 8
			var wg sync.WaitGroup
			errs := make(chan error, 2*n)
			for g := range n {
				wg.Add(2)
				go func() {
					defer wg.Done()
					err := noPanic(func() error {
						return s.DoFunc(ctx, resp.Command(nil, "ECHO", "boom"), func(resp.Value) error { panic("fn") })
					})
					if err == nil || err.Error() != "the call panicked: fn" {
						err = fmt.Errorf("DoFunc: %v, want fn's panic", err)
					} else {
						err = nil
					}
					errs <- err
				}()
				go func() {
					defer wg.Done()
					val := fmt.Sprint("v", g)
					got, err := echo(ctx, s, val)
					if err == nil && got != val {
						err = fmt.Errorf("ECHO %s = %q", val, got)
					}
					errs <- err
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			v, err := s.Do(ctx, "PING")
			require.NoError(t, err)
			require.Equal(t, "PONG", v.Text())
		})
	}
}

// targetSender is the Sender a panic test runs on: a Client ("Client"),
// a Conn with OnPush set ("Conn+OnPush"), or a plain Conn.
func targetSender(t *testing.T, ctx context.Context, target string, opts conn.Options) conn.Sender {
	t.Helper()
	switch target {
	case "Client":
		cl, err := conn.NewClient(ctx, opts)
		require.NoError(t, err)
		t.Cleanup(func() { cl.Close() })
		return cl
	case "Conn+OnPush":
		opts.OnPush = func(resp.Value) {}
	}
	return setup(t, opts)
}
