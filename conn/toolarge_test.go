package conn_test

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// fillList pushes n elements "e<i>" onto key, 10,000 per RPUSH.
func fillList(t *testing.T, c conn.Sender, key string, n int) {
	t.Helper()
	ctx := testCtx(t)
	var b pipeline.Batch
	args := make([]string, 0, 10002)
	for from := 0; from < n; from += 10000 {
		args = append(args[:0], "RPUSH", key)
		for i := from; i < min(from+10000, n); i++ {
			args = append(args, "e"+strconv.Itoa(i))
		}
		b.Reset()
		b.Add(args...)
		if err := b.Exec(ctx, c); err != nil || b.Err(0) != nil {
			t.Fatalf("RPUSH: %v, %v", err, b.Err(0))
		}
	}
}

// clientID returns the server's id of the Client's shared connection.
func clientID(t *testing.T, cl *conn.Client) int64 {
	t.Helper()
	v, err := cl.Do(testCtx(t), "CLIENT", "ID")
	if err != nil || v.Type != resp.Integer {
		t.Fatalf("CLIENT ID = %v, %v", v, err)
	}
	return v.Int
}

// checkTooLargeErr checks that err is the typed error of a skipped reply
// over limit, and no connection fault.
func checkTooLargeErr(t *testing.T, err error, limit string) *resp.ReplyTooLargeError {
	t.Helper()
	var e *resp.ReplyTooLargeError
	if !errors.Is(err, resp.ErrReplyTooLarge) || !errors.As(err, &e) {
		t.Fatalf("err = %v, want a *resp.ReplyTooLargeError", err)
	}
	if errors.Is(err, conn.ErrBroken) || errors.Is(err, resp.ErrProtocol) {
		t.Fatalf("err = %v: a fault, not a skipped reply", err)
	}
	if e.Limit != limit || !strings.Contains(err.Error(), "resp.Limits."+limit) {
		t.Fatalf("err = %v, want it to name %s", err, limit)
	}
	return e
}

// bigWhileBusy runs LRANGE key 0 -1 on cl while 41 goroutines run ECHO
// and GET of their own values on the same Client, all released together.
// It checks that the big call alone fails, with ErrReplyTooLarge over
// limit, that every other call gets its own reply, and that the
// connection was neither broken nor replaced.
func bigWhileBusy(t *testing.T, cl *conn.Client, key, limit string) *resp.ReplyTooLargeError {
	ctx := testCtx(t)
	idBefore := clientID(t, cl)
	const workers, rounds = 41, 10
	for g := range workers {
		if _, err := cl.Do(ctx, "SET", "own:"+strconv.Itoa(g), "value-"+strconv.Itoa(g)); err != nil {
			t.Fatal(err)
		}
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds*2)
	for g := range workers {
		wg.Go(func() {
			<-start
			for i := range rounds {
				want := "g" + strconv.Itoa(g) + "-" + strconv.Itoa(i)
				if got, err := echo(ctx, cl, want); err != nil || got != want {
					errs <- errors.New("ECHO " + want + " = " + got + ": " + errString(err))
				}
				v, err := cl.Do(ctx, "GET", "own:"+strconv.Itoa(g))
				if want := "value-" + strconv.Itoa(g); err != nil || v.Text() != want {
					errs <- errors.New("GET own:" + strconv.Itoa(g) + " = " + v.Text() + ": " + errString(err))
				}
			}
		})
	}
	var bigErr error
	wg.Go(func() {
		<-start
		_, bigErr = cl.Do(ctx, "LRANGE", key, "0", "-1")
	})
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	e := checkTooLargeErr(t, bigErr, limit)
	// The next call works, on the same connection.
	if got, err := echo(ctx, cl, "after"); err != nil || got != "after" {
		t.Fatalf("ECHO after the big reply = %q, %v", got, err)
	}
	if id := clientID(t, cl); id != idBefore {
		t.Fatalf("CLIENT ID %d, was %d: the connection was replaced", id, idBefore)
	}
	return e
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func newClient(t *testing.T, opts conn.Options) *conn.Client {
	t.Helper()
	if opts.Addr == "" {
		opts.Addr = srv.Addr
	}
	cl, err := conn.NewClient(testCtx(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// Issue 15, finding 5, at the default limits: LRANGE of a 1.2M-element
// list, whose Values would take 86 MB (over MaxReplyBytes, 64 MiB), fails
// alone with ErrReplyTooLarge while 41 goroutines share the Client; the
// connection lives on. (Before the fix all 41 failed with ErrBroken, and
// the error called itself a protocol error.)
func TestOversizedReplyFailsAloneDefaultLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a list of 1.2M elements")
	}
	srv.Flush(t)
	cl := newClient(t, conn.Options{})
	const n = 1200000
	fillList(t, cl, "big", n)
	e := bigWhileBusy(t, cl, "big", "MaxReplyBytes")
	if e.Max != resp.DefaultMaxReplyBytes || e.Size != n*int64(unsafe.Sizeof(resp.Value{})) || e.Type != resp.Array {
		t.Fatalf("%+v", e)
	}
	if e.Bytes < n*5 {
		t.Fatalf("%+v: fewer bytes skipped than the reply holds", e)
	}
	// In a batch, among other commands.
	var b pipeline.Batch
	b.Add("GET", "own:0")
	b.Add("LRANGE", "big", "0", "-1")
	b.Add("LLEN", "big")
	if err := b.Exec(testCtx(t), cl); err != nil {
		t.Fatal(err)
	}
	checkTooLargeErr(t, b.Err(1), "MaxReplyBytes")
	if b.Reply(0).Text() != "value-0" || b.Reply(2).Int != n {
		t.Fatalf("batch replies %v, %v", b.Reply(0), b.Reply(2))
	}
}

// The same with a reduced MaxReplyBytes: a list of 5,000 elements over a
// limit of 1,000 Values.
func TestOversizedReplyFailsAloneReducedLimit(t *testing.T) {
	srv.Flush(t)
	lim := resp.Limits{MaxReplyBytes: 1000 * int(unsafe.Sizeof(resp.Value{}))}
	cl := newClient(t, conn.Options{Limits: lim})
	fillList(t, cl, "big", 5000)
	e := bigWhileBusy(t, cl, "big", "MaxReplyBytes")
	if e.Max != lim.MaxReplyBytes || e.Size != 5000*int64(unsafe.Sizeof(resp.Value{})) {
		t.Fatalf("%+v", e)
	}
	// Below the limit, LRANGE works on the same connection.
	v, err := cl.Do(testCtx(t), "LRANGE", "big", "0", "998")
	if err != nil || len(v.Elems) != 999 || v.Elems[998].Text() != "e998" {
		t.Fatalf("LRANGE 0 998 = %d elements, %v", len(v.Elems), err)
	}
}

// A pipeline.Batch holding the oversized command among others: Exec
// succeeds, the big command's reply is the typed error, the others get
// their own replies, in order.
func TestOversizedReplyInBatch(t *testing.T) {
	srv.Flush(t)
	lim := resp.Limits{MaxReplyBytes: 1000 * int(unsafe.Sizeof(resp.Value{}))}
	cl := newClient(t, conn.Options{Limits: lim})
	fillList(t, cl, "big", 5000)
	id := clientID(t, cl)
	ctx := testCtx(t)
	var b pipeline.Batch
	b.Add("SET", "a", "1")
	b.Add("LRANGE", "big", "0", "-1")
	b.Add("GET", "a")
	b.Add("LRANGE", "big", "0", "2")
	b.Add("LRANGE", "big", "0", "-1")
	b.Add("ECHO", "last")
	for round := range 2 { // and again: the Batch and the connection are reusable
		if err := b.Exec(ctx, cl); err != nil {
			t.Fatalf("round %d: Exec: %v", round, err)
		}
		if v := b.Reply(0); v.Text() != "OK" {
			t.Fatalf("SET = %v", v)
		}
		checkTooLargeErr(t, b.Err(1), "MaxReplyBytes")
		checkTooLargeErr(t, b.Err(4), "MaxReplyBytes")
		if v := b.Reply(2); v.Text() != "1" {
			t.Fatalf("GET = %v", v)
		}
		if v := b.Reply(3); len(v.Elems) != 3 || v.Elems[2].Text() != "e2" {
			t.Fatalf("LRANGE 0 2 = %v", v)
		}
		if v := b.Reply(5); v.Text() != "last" {
			t.Fatalf("ECHO = %v", v)
		}
	}
	if got := clientID(t, cl); got != id {
		t.Fatalf("CLIENT ID %d, was %d", got, id)
	}
}

// A bulk string over a reduced MaxBulk: GET of a 100 KB value with a
// 64 KiB limit fails alone, its bytes streamed past without growing the
// read buffer to hold them; the next GET works on the same connection.
func TestOversizedBulk(t *testing.T) {
	lim := resp.Limits{MaxBulk: 64 << 10}
	c := setup(t, conn.Options{Limits: lim, ReadBufferSize: 4096})
	big := strings.Repeat("x", 100<<10)
	mustDo(t, c, "SET", "big", big)
	mustDo(t, c, "SET", "small", "s")
	id := mustDo(t, c, "CLIENT", "ID").Int
	ctx := testCtx(t)
	for range 3 {
		_, err := c.Do(ctx, "GET", "big")
		e := checkTooLargeErr(t, err, "MaxBulk")
		if e.Size != int64(len(big)) || e.Max != lim.MaxBulk || e.Type != resp.BulkString {
			t.Fatalf("%+v", e)
		}
		if v := mustDo(t, c, "GET", "small"); v.Text() != "s" {
			t.Fatalf("GET small = %v", v)
		}
	}
	if got := mustDo(t, c, "CLIENT", "ID").Int; got != id || c.Err() != nil {
		t.Fatalf("CLIENT ID %d, was %d; Err %v", got, id, c.Err())
	}
	// At the limit it decodes.
	mustDo(t, c, "SET", "edge", big[:lim.MaxBulk])
	if v := mustDo(t, c, "GET", "edge"); len(v.Str) != lim.MaxBulk {
		t.Fatalf("GET edge: %d bytes", len(v.Str))
	}
}

// A push over the limits (a client-side caching invalidation naming a key
// longer than MaxBulk) is skipped: OnPush is told with a TooLarge value,
// no caller's reply is taken, and the connection lives on.
func TestOversizedPush(t *testing.T) {
	var log pushLog
	lim := resp.Limits{MaxBulk: 1024}
	c := setup(t, conn.Options{Limits: lim, OnPush: log.add})
	if c.Protocol() != 3 {
		t.Skip("pushes need RESP3")
	}
	ctx := testCtx(t)
	key := strings.Repeat("k", 2048)
	mustDo(t, c, "CLIENT", "TRACKING", "on")
	mustDo(t, c, "SET", key, "1")
	mustDo(t, c, "GET", key) // tracks the key
	if _, err := srv.Do("SET", key, "2"); err != nil {
		t.Fatal(err)
	}
	// The invalidation was sent before the reply to this PING.
	if got, err := echo(ctx, c, "after"); err != nil || got != "after" {
		t.Fatalf("ECHO after the push = %q, %v", got, err)
	}
	frames := log.waitLen(t, 1)
	if len(frames) != 1 || frames[0].Type != resp.TooLarge {
		t.Fatalf("OnPush got %v", frames)
	}
	var e *resp.ReplyTooLargeError
	if !errors.As(frames[0].Err(), &e) || e.Type != resp.Push || e.Limit != "MaxBulk" {
		t.Fatalf("push error %v", frames[0].Err())
	}
	if c.Err() != nil {
		t.Fatalf("connection failed: %v", c.Err())
	}
}
