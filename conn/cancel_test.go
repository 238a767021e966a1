package conn_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/faultproxy"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
)

// Callers with tiny random deadlines mixed with callers without: the
// cancelled ones return ctx.Err() (or their own reply, when it won the
// race), the others always get their own replies, and the connection
// stays in sync and usable afterwards.
func TestCancelMidFlight(t *testing.T) {
	p := newProxy(t, srvAddr(t))
	c := setup(t, conn.Options{Addr: p.Addr()})
	// Latency makes deadlines expire while commands are in flight.
	p.Set(faultproxy.Mode{Latency: 200 * time.Microsecond})
	const goroutinesN = 16
	perG := 400
	if raceEnabled || testing.Short() {
		perG = 150
	}
	var cancelled, answered, wrong atomic.Int64
	var slowest atomic.Int64 // the longest a cancelled call took past its deadline
	var wg sync.WaitGroup
	for g := range goroutinesN {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b pipeline.Batch
			for i := range perG {
				want := strconv.Itoa(g) + "-" + strconv.Itoa(i)
				ctx := context.Background()
				cancels := g%2 == 0
				var cancel context.CancelFunc = func() {}
				var deadline time.Time
				if cancels {
					d := time.Duration(rand.IntN(1500)) * time.Microsecond
					deadline = time.Now().Add(d)
					ctx, cancel = context.WithDeadline(ctx, deadline)
				}
				var got string
				var err error
				if i%5 == 0 { // a reused Batch of three
					b.Reset()
					b.Add("ECHO", want+"a")
					b.Add("ECHO", want+"b")
					b.Add("ECHO", want+"c")
					if err = b.Exec(ctx, c); err == nil {
						if b.Reply(0).Text() == want+"a" {
							got = want
						}
						if b.Reply(1).Text() != want+"b" || b.Reply(2).Text() != want+"c" {
							wrong.Add(1)
						}
					}
				} else {
					got, err = echo(ctx, c, want)
				}
				late := time.Since(deadline)
				cancel()
				switch {
				case err == nil:
					answered.Add(1)
					if got != want {
						wrong.Add(1)
						t.Errorf("%s got %q", want, got)
					}
				case cancels && errors.Is(err, context.DeadlineExceeded):
					cancelled.Add(1)
					for {
						s := slowest.Load()
						if int64(late) <= s || slowest.CompareAndSwap(s, int64(late)) {
							break
						}
					}
				default:
					wrong.Add(1)
					t.Errorf("%s (cancels=%v): %v", want, cancels, err)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d answered, %d cancelled; the slowest cancelled call returned %v after its deadline",
		answered.Load(), cancelled.Load(), time.Duration(slowest.Load()))
	if wrong.Load() != 0 {
		t.Fatalf("%d wrong outcomes", wrong.Load())
	}
	if cancelled.Load() == 0 {
		t.Fatal("no call was cancelled: the test did not test cancellation")
	}
	// Late replies were read and dropped: the connection is in sync.
	p.Set(faultproxy.Mode{})
	if v := mustDo(t, c, "PING"); v.Text() != "PONG" {
		t.Fatalf("PING = %v", v)
	}
	for i := range 100 {
		want := "after-" + strconv.Itoa(i)
		if got, err := echo(testCtx(t), c, want); err != nil || got != want {
			t.Fatalf("ECHO %q = %q, %v", want, got, err)
		}
	}
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
}

// A call whose context is already done returns promptly even when the
// server never answers, and a cancelled Batch can run again at once. The
// peer holds the first Batch's replies until the second Batch's commands
// reach it, so the first is stalled for as long as it takes to give up.
func TestCancelStalledThenReuse(t *testing.T) {
	var held []string // replies not yet written
	released := false
	addr := peer(t, func(args []string, w io.Writer) error {
		held = append(held, bulk(args[1]))
		if !released && !strings.HasPrefix(args[1], "second-") {
			return nil
		}
		released = true
		out := strings.Join(held, "")
		held = held[:0]
		_, err := io.WriteString(w, out)
		return err
	})
	c := dial(t, conn.Options{Addr: addr, ReadTimeout: -1})

	var b pipeline.Batch
	for i := range 50 {
		b.Add("ECHO", "first-"+strconv.Itoa(i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := b.Exec(ctx, c); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stalled Exec: %v, want DeadlineExceeded", err)
	}
	if r := b.Replies(); len(r) != 0 {
		t.Fatalf("Replies() after a cancelled Exec = %v", r)
	}
	// The same Batch, other commands, right away: the stalled replies of
	// the first Exec come first and are dropped.
	b.Reset()
	for i := range 50 {
		b.Add("ECHO", "second-"+strconv.Itoa(i))
	}
	if err := b.Exec(testCtx(t), c); err != nil {
		t.Fatal(err)
	}
	for i, v := range b.Replies() {
		if v.Text() != "second-"+strconv.Itoa(i) {
			t.Fatalf("reply %d = %v", i, v)
		}
	}
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	if _, err := echo(done, c, "x"); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("call with a done context: %v", err)
	}
	if got, err := echo(testCtx(t), c, "still-in-sync"); err != nil || got != "still-in-sync" {
		t.Fatalf("ECHO = %q, %v", got, err)
	}
}

// Cancelled leaders interrupt their own reads with a past deadline; over
// TLS a record may be cut mid-way and must resume intact. Large values
// over TLS and a unix socket, half the callers on tiny deadlines.
func TestCancelOverTLSAndUnix(t *testing.T) {
	needServer(t)
	for _, o := range []conn.Options{
		{Addr: srv.TLSAddr, TLS: &tls.Config{RootCAs: srv.CACertPool}},
		{Network: "unix", Addr: srv.UnixPath},
	} {
		if o.TLS != nil && srv.TLSAddr == "" {
			defer servertest.NeedTLS(t, srv) // skips, saying why, once the unix half ran
			continue
		}
		c := setup(t, o)
		perG := 60
		if raceEnabled {
			perG = 25
		}
		var cancelled, wrong atomic.Int64
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perG {
					want := strconv.Itoa(g) + "-" + strconv.Itoa(i) + ":" + strings.Repeat("x", 1000*(1+i%40))
					ctx, cancel := context.Background(), context.CancelFunc(func() {})
					if g%2 == 0 {
						ctx, cancel = context.WithTimeout(ctx, time.Duration(rand.IntN(300))*time.Microsecond)
					}
					got, err := echo(ctx, c, want)
					cancel()
					switch {
					case err == nil && got == want:
					case err != nil && g%2 == 0 && errors.Is(err, context.DeadlineExceeded):
						cancelled.Add(1)
					default:
						wrong.Add(1)
						t.Errorf("%s: %d bytes, %v", want[:8], len(got), err)
					}
				}
			}()
		}
		wg.Wait()
		t.Logf("%s: %d cancelled", o.Network+o.Addr, cancelled.Load())
		if wrong.Load() != 0 {
			t.Fatalf("%d wrong outcomes", wrong.Load())
		}
		for i := range 20 {
			want := "sync-" + strconv.Itoa(i)
			if got, err := echo(testCtx(t), c, want); err != nil || got != want {
				t.Fatalf("after: %q, %v", got, err)
			}
		}
	}
}
