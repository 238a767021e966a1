package pipeline_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// 10,000 INCRs of one key in one Batch come back as exactly 1..10000, in
// order.
func TestBatchTenThousandIncr(t *testing.T) {
	c := setup(t, conn.Options{})
	var b pipeline.Batch
	for range 10_000 {
		b.Add("INCR", "counter")
	}
	if err := b.Exec(testCtx(t), c); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, b.Replies(), 1)
	if got, _ := srv.Do("GET", "counter"); got != "10000" {
		t.Fatalf("counter = %s", got)
	}
}

// 100,000 INCRs through one reused Batch in ten Execs: 1..100000 in order.
func TestBatchHundredThousandIncrReused(t *testing.T) {
	c := setup(t, conn.Options{})
	var b pipeline.Batch
	next := int64(1)
	for range 10 {
		b.Reset()
		for range 10_000 {
			b.Begin(2)
			b.Arg("INCR")
			b.ArgBytes([]byte("counter"))
		}
		if err := b.Exec(testCtx(t), c); err != nil {
			t.Fatal(err)
		}
		checkCounts(t, b.Replies(), next)
		next += int64(b.Len())
	}
	if got, _ := srv.Do("GET", "counter"); got != "100000" {
		t.Fatalf("counter = %s", got)
	}
}

// checkCounts checks that replies are the integers from, from+1, ….
func checkCounts(t *testing.T, replies []resp.Value, from int64) {
	t.Helper()
	for i, v := range replies {
		if v.Type != resp.Integer || v.Int != from+int64(i) {
			t.Fatalf("reply %d = %v, want %d", i, v, from+int64(i))
		}
	}
}

// A server error is one command's reply; the commands around it run.
func TestBatchServerErrorIsOneReply(t *testing.T) {
	c := setup(t, conn.Options{})
	var b pipeline.Batch
	b.Add("SET", "s", "text")
	b.Add("INCR", "s")
	b.AddBytes([]byte("ECHO"), []byte("after"))
	b.Begin(3)
	b.Arg("HSET")
	b.Arg("h")
	b.ArgInt(-42) // odd argument count: a server error
	b.Add("NOSUCHCOMMAND")
	b.AddCmd(resp.Command(nil, "PING"))
	b.AddCmd(resp.Command(nil, "ECHO", "x"))
	if err := b.Exec(testCtx(t), c); err != nil {
		t.Fatal(err)
	}
	if b.Len() != 7 || len(b.Replies()) != 7 {
		t.Fatalf("Len %d, %d replies", b.Len(), len(b.Replies()))
	}
	for i, want := range []string{"", "ERR", "", "ERR", "ERR", "", ""} {
		err := b.Err(i)
		if (want == "") != (err == nil) || want != "" && !resp.IsCode(err, want) {
			t.Errorf("Err(%d) = %v, want code %q", i, err, want)
		}
	}
	if b.Reply(2).Text() != "after" || b.Reply(5).Text() != "PONG" || b.Reply(6).Text() != "x" {
		t.Fatalf("replies %v", b.Replies())
	}
}

// Misbuilt batches are refused before anything is sent, and refusing
// one leaves the connection in step.
func TestBatchRefusesMisbuiltCommands(t *testing.T) {
	c := setup(t, conn.Options{})
	ctx := testCtx(t)
	var b pipeline.Batch
	b.Add("PING")
	b.Add() // no arguments: the server would not answer it
	b.Add("ECHO", "x")
	if err := b.Exec(ctx, c); !errors.Is(err, pipeline.ErrEmptyCommand) {
		t.Fatalf("Exec with an empty command: %v, want ErrEmptyCommand", err)
	}
	b.Reset()
	b.AddBytes()
	if err := b.Exec(ctx, c); !errors.Is(err, pipeline.ErrEmptyCommand) {
		t.Fatalf("Exec with AddBytes(): %v", err)
	}
	b.Reset()
	b.Begin(0)
	if err := b.Exec(ctx, c); !errors.Is(err, pipeline.ErrEmptyCommand) {
		t.Fatalf("Exec with Begin(0): %v", err)
	}
	b.Reset()
	b.Begin(3)
	b.Arg("SET")
	b.Arg("k")
	if err := b.Exec(ctx, c); !errors.Is(err, pipeline.ErrIncompleteCommand) {
		t.Fatalf("Exec with a short command: %v", err)
	}
	b.Reset()
	if err := b.Exec(ctx, c); err != nil || len(b.Replies()) != 0 {
		t.Fatalf("empty Exec: %v, %v", err, b.Replies())
	}
	for i := range 10 {
		b.Reset()
		b.Add("ECHO", strconv.Itoa(i))
		if err := b.Exec(ctx, c); err != nil || b.Reply(0).Text() != strconv.Itoa(i) {
			t.Fatalf("Exec %d: %v %v", i, err, b.Replies())
		}
	}
}

// Replies stay valid after the connection goes on to other commands, and
// a failed Exec leaves no stale replies behind.
func TestBatchRepliesOwnedAndCleared(t *testing.T) {
	c := setup(t, conn.Options{})
	ctx := testCtx(t)
	var b pipeline.Batch
	b.Add("ECHO", "kept")
	b.Add("HSET", "h", "f", "v")
	b.Add("HGETALL", "h")
	if err := b.Exec(ctx, c); err != nil {
		t.Fatal(err)
	}
	for i := range 100 { // the reader's buffer is reused meanwhile
		if _, err := c.Do(ctx, "ECHO", "other-"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if b.Reply(0).Text() != "kept" || b.Reply(2).Type != resp.Map || b.Reply(2).Elems[1].Text() != "v" {
		t.Fatalf("replies changed under us: %v", b.Replies())
	}
	c.Close()
	if err := b.Exec(ctx, c); !errors.Is(err, conn.ErrClosed) {
		t.Fatalf("Exec on a closed connection: %v", err)
	}
	if len(b.Replies()) != 0 {
		t.Fatalf("Replies() after a failed Exec = %v: the last Exec's replies", b.Replies())
	}
}

// A Batch whose Exec was cancelled is reusable at once.
func TestBatchCancelledThenReused(t *testing.T) {
	c := setup(t, conn.Options{})
	var b pipeline.Batch
	for round := range 50 {
		b.Reset()
		for i := range 200 {
			b.Add("ECHO", strconv.Itoa(round)+"-"+strconv.Itoa(i))
		}
		ctx, cancel := context.WithCancel(context.Background())
		if round%2 == 0 {
			cancel() // before or during the Exec
		}
		err := b.Exec(ctx, c)
		cancel()
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
			continue
		}
		for i, v := range b.Replies() {
			if v.Text() != strconv.Itoa(round)+"-"+strconv.Itoa(i) {
				t.Fatalf("round %d reply %d = %v", round, i, v)
			}
		}
	}
}
