package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/kv"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
	"github.com/echomq/echomq-go/submit"
)

// waiter is a Handler whose caller waits for Done.
type waiter struct {
	replies []string
	done    chan error
}

func newWaiter() *waiter { return &waiter{done: make(chan error, 1)} }

func (w *waiter) Reply(_ int, v resp.Value) { w.replies = append(w.replies, v.Text()) }
func (w *waiter) Done(err error)            { w.done <- err }
func (w *waiter) Waits() bool               { return true }

// sendWait submits cmds on s and waits for them.
func sendWait(ctx context.Context, s conn.Sender, cmds conn.Cmds) error {
	w := newWaiter()
	if err := s.Send(ctx, cmds, w); err != nil {
		return err
	}
	return <-w.done
}

// guardPaths are the ways to submit one command given as strings: each
// path reaches the connection with the command's facts known (a builder,
// Batch.Add, Stream, Do) or unknown (a user's resp types, submit.New).
func guardPaths(args ...string) map[string]func(ctx context.Context, s conn.Sender) error {
	anyArgs := make([]any, len(args))
	for i, a := range args {
		anyArgs[i] = a
	}
	return map[string]func(ctx context.Context, s conn.Sender) error{
		"Do": func(ctx context.Context, s conn.Sender) error {
			_, err := s.Do(ctx, anyArgs...)
			return err
		},
		"DoFunc": func(ctx context.Context, s conn.Sender) error {
			return s.DoFunc(ctx, resp.Command(nil, args...), nil)
		},
		"CmdsOf": func(ctx context.Context, s conn.Sender) error {
			w, err := conn.CmdsOf(resp.Command(nil, args...))
			if err != nil {
				return err
			}
			return sendWait(ctx, s, w)
		},
		"CmdsOfBatch": func(ctx context.Context, s conn.Sender) error {
			var c resp.Cmds
			c.Add(args...)
			w, err := conn.CmdsOfBatch(&c)
			if err != nil {
				return err
			}
			return sendWait(ctx, s, w)
		},
		"submit.New": func(ctx context.Context, s conn.Sender) error {
			w, err := submit.New(resp.AppendCommand(nil, args...), 1)
			if err != nil {
				return err
			}
			return sendWait(ctx, s, w)
		},
		"Batch.Add": func(ctx context.Context, s conn.Sender) error {
			var b pipeline.Batch
			b.Add(args...)
			return b.Exec(ctx, s)
		},
		"Batch.AddCmd": func(ctx context.Context, s conn.Sender) error {
			var b pipeline.Batch
			b.AddCmd(resp.Command(nil, args...))
			return b.Exec(ctx, s)
		},
		"Batch.Begin": func(ctx context.Context, s conn.Sender) error {
			var b pipeline.Batch
			b.Begin(len(args))
			for _, a := range args {
				b.Arg(a)
			}
			return b.Exec(ctx, s)
		},
		"Batch.AddBytes": func(ctx context.Context, s conn.Sender) error {
			var b pipeline.Batch
			b.AddBytes(bytesOf(args)...)
			return b.Exec(ctx, s)
		},
		"Batch.Begin ArgBytes": func(ctx context.Context, s conn.Sender) error {
			var b pipeline.Batch
			b.Begin(len(args))
			for _, a := range bytesOf(args) {
				b.ArgBytes(a)
			}
			return b.Exec(ctx, s)
		},
		// Among plain commands, which alone make a batch sent without
		// facts: the one command that is not plain is found by its name,
		// however it was added, begun last or before another.
		"Batch among plain, begun last": func(ctx context.Context, s conn.Sender) error {
			var b pipeline.Batch
			b.Add("PING")
			b.Begin(len(args))
			for _, a := range args {
				b.Arg(a)
			}
			return b.Exec(ctx, s)
		},
		"Batch among plain, begun before": func(ctx context.Context, s conn.Sender) error {
			var b pipeline.Batch
			b.Begin(len(args))
			for _, a := range args {
				b.Arg(a)
			}
			b.Begin(1)
			b.Arg("PING")
			b.AddCmd(resp.Command(nil, "PING"))
			return b.Exec(ctx, s)
		},
		"Batch among plain, AddCmd": func(ctx context.Context, s conn.Sender) error {
			var b pipeline.Batch
			b.Add("PING")
			b.AddCmd(resp.Command(nil, args...))
			b.AddBytes([]byte("PING"))
			return b.Exec(ctx, s)
		},
		"Batch among plain, Add": func(ctx context.Context, s conn.Sender) error {
			var b pipeline.Batch
			b.Begin(1)
			b.Arg("PING")
			b.Add(args...)
			return b.Exec(ctx, s)
		},
		"Stream.Add": func(ctx context.Context, s conn.Sender) error {
			var out []error
			st := pipeline.NewStream(s, func(_ int64, _ resp.Value, err error) { out = append(out, err) }, pipeline.StreamOptions{})
			err := st.Add(ctx, args...)
			if werr := st.Wait(ctx); err == nil {
				err = werr
			}
			return err
		},
	}
}

func bytesOf(args []string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

// TestRefusedOnEveryPath: a command that would break a shared connection
// is refused with the same *CommandError whichever way it is submitted,
// facts known or read from the bytes, and nothing is sent: the
// connection still answers one reply per command. A Cmds made by
// submit.New (facts unknown) was once, as a literal Cmds, sent as it was before the facts: nothing marked it.
func TestRefusedOnEveryPath(t *testing.T) {
	var b cmds.Builder
	for _, tc := range []struct {
		args    []string
		builder func() cmds.Command
		name    string
	}{
		{[]string{"SUBSCRIBE", "ch"}, func() cmds.Command { return b.Subscribe("ch").Build() }, "SUBSCRIBE"},
		{[]string{"client", "reply", "off"}, func() cmds.Command { return b.ClientReply(cmds.ReplyOff).Build() }, "CLIENT REPLY"},
		{[]string{"WATCH", "k"}, func() cmds.Command { return b.Watch("k").Build() }, "WATCH"},
		{[]string{"MULTI"}, func() cmds.Command { return b.Multi().Build() }, "MULTI"},
		{[]string{"SYNC"}, nil, "SYNC"},
		// A name of ten bytes or more: a begun command's name is read
		// past the one-digit header the common names have.
		{[]string{"PSUBSCRIBE", "p*"}, nil, "PSUBSCRIBE"},
		{[]string{"ssubscribe", "shard-channel-name"}, nil, "SSUBSCRIBE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			c := setup(t, conn.Options{})
			paths := guardPaths(tc.args...)
			if tc.builder != nil {
				paths["Batch.AddCommand"] = func(ctx context.Context, s conn.Sender) error {
					var bt pipeline.Batch
					bt.AddCommand(tc.builder())
					return bt.Exec(ctx, s)
				}
			}
			var want *conn.CommandError
			for path, send := range paths {
				err := send(ctx, c)
				var ce *conn.CommandError
				if !errors.As(err, &ce) || !errors.Is(err, conn.ErrCommandRefused) {
					t.Fatalf("%s: %v, want a *conn.CommandError", path, err)
				}
				if ce.Command != tc.name {
					t.Errorf("%s: refused as %q, want %q", path, ce.Command, tc.name)
				}
				if want == nil {
					want = ce
				} else if *ce != *want {
					t.Errorf("%s: %+v, want %+v", path, *ce, *want)
				}
				// Nothing was sent: the connection is in sync.
				v, err := c.Do(ctx, "ECHO", path)
				if err != nil || v.Text() != path {
					t.Fatalf("after %s: ECHO answered %q, %v", path, v.Text(), err)
				}
			}
		})
	}
}

// TestMalformedLiteralCmds: a submission put together by hand whose
// bytes are not N commands is refused by submit.New with ErrMalformed,
// and so never sent; the connection stays in sync. (A user's code can no
// longer give a submission facts that do not describe its bytes: a Cmds
// has no exported fields.)
func TestMalformedLiteralCmds(t *testing.T) {
	ctx := testCtx(t)
	c := setup(t, conn.Options{})
	ping := resp.AppendCommand(nil, "PING")
	for _, w := range []struct {
		b []byte
		n int
	}{
		{ping, 2},                           // fewer commands than N
		{append(ping, ping...), 1},          // more
		{[]byte("PING\r\n"), 1},             // inline
		{ping[:len(ping)-1], 1},             // cut
		{[]byte("*1\r\n:1\r\n"), 1},         // not bulk strings
		{[]byte("*0\r\n"), 1},               // no arguments
		{[]byte("*1\r\n$9999\r\nx\r\n"), 1}, // short bulk
		{ping, -1},                          // a negative count
	} {
		err := func() error {
			sub, err := submit.New(w.b, w.n)
			if err != nil {
				return err
			}
			return sendWait(ctx, c, sub)
		}()
		if !errors.Is(err, conn.ErrMalformed) {
			t.Errorf("%q N=%d: %v, want ErrMalformed", w.b, w.n, err)
		}
	}
	if v, err := c.Do(ctx, "ECHO", "in sync"); err != nil || v.Text() != "in sync" {
		t.Fatalf("ECHO answered %q, %v", v.Text(), err)
	}
}

// TestBlockingLentOnEveryPath: a Client sends a blocking command on a
// connection of its own whichever way it was submitted: while BLPOP
// blocks on the server, the Client's shared connection answers a PING;
// then an LPUSH ends the BLPOP with its element.
func TestBlockingLentOnEveryPath(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	ctx := testCtx(t)
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	other := setup(t, conn.Options{})
	var b cmds.Builder
	paths := guardPaths("BLPOP", "q", "0")
	paths["Batch.AddCommand"] = func(ctx context.Context, s conn.Sender) error {
		var bt pipeline.Batch
		bt.AddCommand(b.Blpop([]string{"q"}, 0).Build())
		return bt.Exec(ctx, s)
	}
	paths["kv.BLPop"] = func(ctx context.Context, s conn.Sender) error {
		_, _, ok, err := kv.BLPop(ctx, s, 0, "q")
		if err == nil && !ok {
			err = errors.New("BLPOP gave nothing")
		}
		return err
	}
	delete(paths, "Stream.Add") // a Stream does not wait for its chunks: refused (below)
	for path, send := range paths {
		done := make(chan error, 1)
		go func() { done <- send(ctx, cl) }()
		waitBlocked(t, ctx, other, 1)
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		v, err := cl.Do(pctx, "PING")
		cancel()
		if err != nil || v.Text() != "PONG" {
			t.Fatalf("%s: PING while BLPOP blocks: %q, %v (the BLPOP holds the shared connection)", path, v.Text(), err)
		}
		if _, err := other.Do(ctx, "LPUSH", "q", "v"); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	// A Stream's chunks are not waited for: a blocking command is refused.
	err = guardPaths("BLPOP", "q", "0")["Stream.Add"](ctx, cl)
	var ce *conn.CommandError
	if !errors.As(err, &ce) || !strings.Contains(ce.Reason, "blocking") {
		t.Fatalf("Stream.Add BLPOP: %v", err)
	}
}

// waitBlocked waits until the server has n clients blocked.
func waitBlocked(t *testing.T, ctx context.Context, c *conn.Conn, n int) {
	t.Helper()
	want := "blocked_clients:" + string(rune('0'+n))
	for {
		v, err := c.Do(ctx, "INFO", "clients")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(v.Text(), want+"\r\n") {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("never %s", want)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestPlainBatchWithoutFacts: a batch of raw commands whose names are
// all plain (cmds.Plain) goes to a Sender that reads no facts of such a
// submission (a Conn or Client without hooks) without facts, marked
// Plain, so that the connection sends it without inspecting a command;
// one raw command that is not plain by its name, a typed command, or a
// Sender that reads facts (a wrapper, hooks, a cluster), and it goes with
// one fact per command, each the size of its command. Every batch is
// also sent, to a Conn and to a wrapper, and answered.
func TestPlainBatchWithoutFacts(t *testing.T) {
	ctx := testCtx(t)
	c := setup(t, conn.Options{})
	wrapper := conn.SendFunc(c.Send)
	var cb cmds.Builder
	for _, tc := range []struct {
		name  string
		add   func(b *pipeline.Batch)
		plain bool
	}{
		{"Add", func(b *pipeline.Batch) { b.Add("SET", "k", "v"); b.Add("get", "k") }, true},
		{"Begin", func(b *pipeline.Batch) { b.Begin(2); b.Arg("INCR"); b.Arg("n"); b.Begin(1); b.ArgBytes([]byte("PING")) }, true},
		{"AddCmd AddBytes", func(b *pipeline.Batch) {
			b.AddCmd(resp.Command(nil, "GET", "x"))
			b.AddBytes([]byte("DEL"), []byte("k"))
		}, true},
		{"a name given as a number", func(b *pipeline.Batch) { b.Begin(1); b.ArgInt(7); b.Add("PING") }, true},
		{"ECHO, shaped as EXEC", func(b *pipeline.Batch) { b.AddCmd(resp.Command(nil, "ECHO", "x")) }, false},
		{"SINTER, shaped as SELECT", func(b *pipeline.Batch) { b.Add("PING"); b.Add("SINTER", "s") }, false},
		{"begun SINTER", func(b *pipeline.Batch) { b.Begin(2); b.Arg("SINTER"); b.Arg("s"); b.Add("PING") }, false},
		{"typed", func(b *pipeline.Batch) { b.Add("PING"); b.Int(cb.Incr("n").Build()); b.Add("PING") }, false},
	} {
		for _, wants := range []bool{false, true} {
			var b pipeline.Batch
			tc.add(&b)
			got, err := b.Submission(wants)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if tc.plain && !wants {
				if got.Facts() != nil || !got.Plain() {
					t.Errorf("%s: sent with %d facts, Plain %v; want none, Plain", tc.name, len(got.Facts()), got.Plain())
				}
			} else {
				if got.Plain() || len(got.Facts()) != got.Len() {
					t.Fatalf("%s, wants %v: %d facts for %d commands, Plain %v", tc.name, wants, len(got.Facts()), got.Len(), got.Plain())
				}
				at := 0
				for _, f := range got.Facts() {
					at += int(f.Size)
				}
				if at != len(got.Bytes()) {
					t.Errorf("%s: facts cover %d bytes of %d", tc.name, at, len(got.Bytes()))
				}
			}
			for _, s := range []conn.Sender{c, wrapper} {
				if err := b.Exec(ctx, s); err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				if len(b.Replies()) != b.Len() {
					t.Fatalf("%s: %d replies for %d commands", tc.name, len(b.Replies()), b.Len())
				}
			}
		}
	}
}

// TestBatchEagerAfterWantingSender: once a batch was sent to a Sender
// that reads facts, the raw commands added after its Reset get their
// facts as they are added (from their arguments, not read back from the
// bytes at the next Exec); sent to one that reads none, they get none,
// nor do its typed commands of no Guarded kind.
func TestBatchEagerAfterWantingSender(t *testing.T) {
	ctx := testCtx(t)
	c := setup(t, conn.Options{})
	var b pipeline.Batch
	b.Add("PING")
	if err := b.Exec(ctx, conn.SendFunc(c.Send)); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	b.Add("SET", "k", "v")
	b.AddBytes([]byte("GET"), []byte("k"))
	if n := b.FactsKept(); n != 2 {
		t.Fatalf("after a wanting Sender: %d facts kept at Add, want 2", n)
	}
	if err := b.Exec(ctx, c); err != nil {
		t.Fatal(err)
	}
	if v := b.Reply(1); v.Text() != "v" {
		t.Fatalf("GET: %q", v.Text())
	}
	b.Reset()
	b.Add("SET", "k", "w")
	if n := b.FactsKept(); n != 0 {
		t.Fatalf("after a Conn without hooks: %d facts kept at Add, want 0", n)
	}
	// Typed commands: a fresh batch keeps their builder's facts (a
	// cluster routes by them); after a Sender that reads none, those of
	// no Guarded kind go without, like plain raw commands, and a Guarded
	// one brings the facts back for all.
	var cb cmds.Builder
	var fresh pipeline.Batch
	fresh.Int(cb.Incr("n").Build())
	if n := fresh.FactsKept(); n != 1 {
		t.Fatalf("fresh batch: %d facts for a typed INCR, want 1", n)
	}
	n := b.Int(cb.Incr("n").Build())
	if k := b.FactsKept(); k != 0 {
		t.Fatalf("after a Conn without hooks: %d facts for SET and a typed INCR, want 0", k)
	}
	if w, err := b.Submission(false); err != nil || !w.Plain() {
		t.Fatalf("SET, INCR: Plain %v, %v", w.Plain(), err)
	}
	if err := b.Exec(ctx, c); err != nil {
		t.Fatal(err)
	}
	if v, err := n.Value(); err != nil || v < 1 {
		t.Fatalf("INCR: %d, %v", v, err)
	}
	b.Reset()
	b.Int(cb.Incr("n").Build())
	b.Int(cb.Watch("k").Build()) // refused: WATCH on a shared connection
	if k := b.FactsKept(); k != 2 {
		t.Fatalf("INCR, WATCH: %d facts, want 2", k)
	}
	if err := b.Exec(ctx, c); !errors.Is(err, conn.ErrCommandRefused) {
		t.Fatalf("WATCH in a batch: %v", err)
	}
}
