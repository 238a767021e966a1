package conn_test

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/resp"
)

// pushLog collects push frames (copied: a pushed Value is valid only
// during the callback).
type pushLog struct {
	mu     sync.Mutex
	frames []resp.Value
}

func (l *pushLog) add(v resp.Value) {
	l.mu.Lock()
	l.frames = append(l.frames, v.Clone())
	l.mu.Unlock()
}

func (l *pushLog) snapshot() []resp.Value {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]resp.Value(nil), l.frames...)
}

// waitLen waits until n frames arrived.
func (l *pushLog) waitLen(t testing.TB, n int) []resp.Value {
	t.Helper()
	var f []resp.Value
	servertest.Eventually(t, strconv.Itoa(n)+" push frames", func() bool {
		f = l.snapshot()
		return len(f) >= n
	})
	return f
}

// Client-side caching on a real server: invalidation pushes arrive
// between replies while other goroutines keep the pipeline busy; each
// goes to OnPush (or is dropped without one) and never takes a caller's
// reply.
func TestPushTrackingInvalidation(t *testing.T) {
	for _, withHandler := range []bool{true, false} {
		t.Run(fmt.Sprintf("OnPush=%v", withHandler), func(t *testing.T) {
			var log pushLog
			opts := conn.Options{}
			if withHandler {
				opts.OnPush = log.add
			}
			c := setup(t, opts)
			ctx := testCtx(t)
			mustDo(t, c, "CLIENT", "TRACKING", "on")

			// Background traffic on the same connection.
			stop := make(chan struct{})
			var wrong atomic.Int64
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						want := "bg" + strconv.Itoa(g) + "-" + strconv.Itoa(i)
						if got, err := echo(ctx, c, want); err != nil || got != want {
							wrong.Add(1)
							t.Errorf("background ECHO %q = %q, %v", want, got, err)
							return
						}
					}
				}()
			}
			const rounds = 50
			for i := range rounds {
				want := "v" + strconv.Itoa(i)
				if _, err := srv.Do("SET", "tracked", want); err != nil {
					t.Fatal(err)
				}
				// GET reads the new value and tracks the key again; the
				// invalidation for this SET was queued before its reply.
				if v := mustDo(t, c, "GET", "tracked"); v.Text() != want {
					t.Fatalf("round %d: GET = %v, want %q", i, v, want)
				}
			}
			close(stop)
			wg.Wait()
			if wrong.Load() != 0 {
				t.Fatalf("%d background calls went wrong", wrong.Load())
			}
			if v := mustDo(t, c, "PING"); v.Text() != "PONG" {
				t.Fatalf("PING = %v", v)
			}
			if !withHandler {
				return
			}
			// The first SET came before any GET tracked the key.
			frames := log.waitLen(t, rounds-1)
			if len(frames) != rounds-1 {
				t.Fatalf("%d pushes, want %d", len(frames), rounds-1)
			}
			for _, f := range frames {
				if f.Type != resp.Push || f.Len() != 2 || f.Elems[0].Text() != "invalidate" ||
					f.Elems[1].Len() != 1 || f.Elems[1].Elems[0].Text() != "tracked" {
					t.Fatalf("push = %v, want [invalidate [tracked]]", f)
				}
			}
		})
	}
}

// A fake peer wraps every reply in push frames: before it, after it, and
// two in a row. Every caller still gets its own reply.
func TestPushInterleavedBetweenReplies(t *testing.T) {
	push := func(s string) string {
		return ">2\r\n$7\r\nmessage\r\n" + bulk(s)
	}
	addr := peer(t, func(args []string, w io.Writer) error {
		_, err := io.WriteString(w, push("before")+bulk(args[1])+push("after")+push("again"))
		return err
	})
	for _, withHandler := range []bool{true, false} {
		var log pushLog
		opts := conn.Options{Addr: addr}
		if withHandler {
			opts.OnPush = log.add
		}
		c := dial(t, opts)
		const goroutinesN, perG = 8, 50
		var wg sync.WaitGroup
		for g := range goroutinesN {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perG {
					want := fmt.Sprintf("%d-%d", g, i)
					if got, err := echo(context.Background(), c, want); err != nil || got != want {
						t.Errorf("ECHO %q = %q, %v", want, got, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if withHandler {
			n := 3 * goroutinesN * perG
			if frames := log.waitLen(t, n); len(frames) != n {
				t.Fatalf("OnPush saw %d pushes, want %d", len(frames), n)
			}
		}
		if c.Err() != nil {
			t.Fatalf("connection failed: %v", c.Err())
		}
	}
}
