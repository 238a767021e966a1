package conn_test

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/faultproxy"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// MaxPending 4 with 32 goroutines: all complete with their own replies.
func TestBackpressureSmallWindow(t *testing.T) {
	c := setup(t, conn.Options{MaxPending: 4})
	var wrong atomic.Int64
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b pipeline.Batch
			for i := range 100 {
				want := strconv.Itoa(g) + ":" + strconv.Itoa(i)
				if i%4 == 0 { // a batch of 3 fits; one of 9 goes alone
					b.Reset()
					n := 3 + 6*(i%8/4)
					for j := range n {
						b.Add("ECHO", want+"/"+strconv.Itoa(j))
					}
					if err := b.Exec(context.Background(), c); err != nil {
						t.Error(err)
						wrong.Add(1)
						return
					}
					for j, v := range b.Replies() {
						if v.Text() != want+"/"+strconv.Itoa(j) {
							wrong.Add(1)
						}
					}
					continue
				}
				if got, err := echo(context.Background(), c, want); err != nil || got != want {
					t.Errorf("%s: %q %v", want, got, err)
					wrong.Add(1)
					return
				}
			}
		}()
	}
	wg.Wait()
	if wrong.Load() != 0 {
		t.Fatalf("%d wrong", wrong.Load())
	}
}

// With the window held full by a server that holds its replies, a Send
// waiting for room returns its ctx's error, and h is never called; the
// held calls complete once the server answers, and the connection goes
// on. The peer holds the replies until the test releases them, so the
// window is full for as long as the test needs, however slow the machine.
func TestBackpressureWaitHonoursContext(t *testing.T) {
	haveFour, release := make(chan struct{}), make(chan struct{})
	answer := sync.OnceFunc(func() { close(release) })
	t.Cleanup(answer) // runs before the peer's cleanup, which waits for it
	var held []string // the peer's replies not yet written
	released := false
	addr := peer(t, func(args []string, w io.Writer) error {
		held = append(held, bulk(args[1]))
		if !released {
			if len(held) < 4 {
				return nil
			}
			close(haveFour)
			<-release
			released = true
		}
		out := strings.Join(held, "")
		held = held[:0]
		_, err := io.WriteString(w, out)
		return err
	})
	c := dial(t, conn.Options{Addr: addr, MaxPending: 4, ReadTimeout: -1})
	heldErrs := make(chan error, 4)
	for i := range 4 {
		go func() {
			want := "held-" + strconv.Itoa(i)
			got, err := echo(context.Background(), c, want)
			if err == nil && got != want {
				err = errors.New("wrong reply " + got)
			}
			heldErrs <- err
		}()
	}
	// The peer has the four commands: they hold the window, a fifth Send
	// must wait.
	select {
	case <-haveFour:
	case <-time.After(waitLong):
		t.Fatal("the peer never got the four commands")
	}
	var bad atomic.Int64
	pr := newProbe([]string{"never"}, &bad)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := sendEchos(ctx, c, []string{"never"}, pr)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Send into a full window: %v, want DeadlineExceeded", err)
	}
	select {
	case err := <-heldErrs:
		t.Fatalf("a held call ended before the server answered: %v", err)
	default:
	}
	answer()
	for range 4 {
		if err := <-heldErrs; err != nil {
			t.Fatal(err)
		}
	}
	if got, err := echo(testCtx(t), c, "after"); err != nil || got != "after" {
		t.Fatalf("ECHO after = %q, %v", got, err)
	}
	if pr.dones.Load() != 0 || bad.Load() != 0 {
		t.Fatal("the Handler of a refused Send was called")
	}
}

// Close ends every waiting call with ErrClosed, waits for the
// connection's goroutines, and may be called again.
func TestCloseEndsWaitingCalls(t *testing.T) {
	before := goroutines()
	p := newProxy(t, srvAddr(t))
	c := dial(t, conn.Options{Addr: p.Addr()})
	p.Set(faultproxy.Mode{Stall: waitLong})
	const callers = 20
	// Every call is waiting once its bytes have reached the proxy (the
	// stall holds the replies back): that many bytes up, from here.
	up := p.BytesUp() + int64(len(resp.AppendCommand(resp.AppendCommand(nil, "ECHO", "batched"), "PING")))
	for i := range callers {
		up += int64(len(resp.AppendCommand(nil, "ECHO", "w"+strconv.Itoa(i))))
	}
	errs := make(chan error, callers+1)
	for i := range callers {
		go func() {
			_, err := echo(context.Background(), c, "w"+strconv.Itoa(i))
			errs <- err
		}()
	}
	var b pipeline.Batch
	b.Add("ECHO", "batched")
	b.Add("PING")
	go func() { errs <- b.Exec(context.Background(), c) }()
	waitFor(t, "every call written", func() bool { return p.BytesUp() >= up })
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed when Close returned")
	}
	for range callers + 1 {
		if err := <-errs; !errors.Is(err, conn.ErrClosed) {
			t.Fatalf("a waiting call: %v, want ErrClosed", err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := echo(context.Background(), c, "x"); !errors.Is(err, conn.ErrClosed) {
		t.Fatalf("call after Close: %v", err)
	}
	if !errors.Is(c.Err(), conn.ErrClosed) {
		t.Fatalf("Err() = %v", c.Err())
	}
	p.Close()
	checkNoLeak(t, before, 0)
}

// Close on an idle connection and on one that already failed.
func TestCloseIdleAndAfterFault(t *testing.T) {
	before := goroutines()
	c := dial(t, conn.Options{})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	checkNoLeak(t, before, 0)

	p := newProxy(t, srvAddr(t))
	c = dial(t, conn.Options{Addr: p.Addr()})
	p.CutAll()
	if _, err := echo(context.Background(), c, "x"); !errors.Is(err, conn.ErrBroken) {
		t.Fatalf("call on a cut connection: %v, want ErrBroken", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(c.Err(), conn.ErrBroken) {
		t.Fatalf("Err() after a fault then Close = %v, want the fault", c.Err())
	}
	p.Close()
	checkNoLeak(t, before, 0)
}
