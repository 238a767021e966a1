package conn_test

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/faultproxy"
)

// A stall longer than ReadTimeout while replies are owed fails every
// owed call with ErrTimeout (and ErrBroken), and the connection. (The
// PING before the stall must come back within ReadTimeout: 500 ms is far
// above a loaded machine's local round trip.)
func TestLivenessStallTimesOut(t *testing.T) {
	p := newProxy(t, srvAddr(t))
	c := setup(t, conn.Options{Addr: p.Addr(), ReadTimeout: 500 * time.Millisecond})
	if v := mustDo(t, c, "PING"); v.Text() != "PONG" {
		t.Fatal(v)
	}
	p.Set(faultproxy.Mode{Stall: waitLong}) // the next server→client chunk waits
	const callers = 16
	errs := make(chan error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := echo(context.Background(), c, "stalled-"+strconv.Itoa(i))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, conn.ErrTimeout) || !errors.Is(err, conn.ErrBroken) {
			t.Fatalf("a stalled call: %v, want ErrTimeout and ErrBroken", err)
		}
	}
	waitDone(t, c)
	if _, err := echo(context.Background(), c, "later"); !errors.Is(err, conn.ErrTimeout) {
		t.Fatalf("a call after the timeout: %v", err)
	}
}

// An idle connection owes nothing and must not time out, however long it
// idles. (The PING after the idling must come back within ReadTimeout:
// 200 ms is far above a loaded machine's local round trip.)
func TestLivenessIdle(t *testing.T) {
	p := newProxy(t, srvAddr(t))
	c := setup(t, conn.Options{Addr: p.Addr(), ReadTimeout: 200 * time.Millisecond})
	time.Sleep(time.Second) // five timeouts' worth of idling
	if err := c.Err(); err != nil {
		t.Fatalf("idle connection failed: %v", err)
	}
	if v := mustDo(t, c, "PING"); v.Text() != "PONG" {
		t.Fatal(v)
	}
}

// A reply that trickles in one byte every 20 ms, taking far longer than
// ReadTimeout in total, is progress, not a stall. (Each 20 ms gap must
// stay under ReadTimeout: 400 ms leaves a loaded machine room.)
func TestLivenessTrickleIsProgress(t *testing.T) {
	addr := peer(t, func(args []string, w io.Writer) error {
		for _, b := range []byte(bulk(args[1])) {
			time.Sleep(20 * time.Millisecond)
			if _, err := w.Write([]byte{b}); err != nil {
				return err
			}
		}
		return nil
	})
	const readTimeout = 400 * time.Millisecond
	c := dial(t, conn.Options{Addr: addr, ReadTimeout: readTimeout})
	want := "thirty-bytes-of-trickled-text"
	start := time.Now()
	if got, err := echo(testCtx(t), c, want); err != nil || got != want {
		t.Fatalf("trickled ECHO = %q, %v", got, err)
	}
	// 36 bytes 20 ms apart: the reply took longer than ReadTimeout.
	if d := time.Since(start); d <= readTimeout {
		t.Fatalf("the reply took %v, not longer than ReadTimeout %v: the test tested nothing", d, readTimeout)
	}
	if err := c.Err(); err != nil {
		t.Fatalf("connection failed: %v", err)
	}
}

// A negative ReadTimeout disables liveness: a stall only ends with ctx.
func TestLivenessDisabled(t *testing.T) {
	p := newProxy(t, srvAddr(t))
	c := setup(t, conn.Options{Addr: p.Addr(), ReadTimeout: -1})
	p.Set(faultproxy.Mode{Stall: waitLong})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := echo(ctx, c, "x"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stalled call without liveness: %v, want DeadlineExceeded", err)
	}
	if err := c.Err(); err != nil {
		t.Fatalf("connection failed without liveness: %v", err)
	}
}
