package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/faultproxy"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// outcomes records one Stream's ReplyFunc calls: each sequence number
// must get exactly one outcome (bad), in order (disorder).
type outcomes struct {
	mu       sync.Mutex
	next     int64 // the sequence number expected next
	seen     map[int64]bool
	ok       int64
	failed   int64
	bad      []string
	disorder []string
	check    func(seq int64, v resp.Value) bool
}

func (o *outcomes) fn(seq int64, v resp.Value, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen == nil {
		o.seen = map[int64]bool{}
	}
	if o.seen[seq] {
		o.bad = append(o.bad, fmt.Sprintf("second outcome for %d", seq))
	}
	o.seen[seq] = true
	if seq != o.next {
		o.disorder = append(o.disorder, fmt.Sprintf("outcome for %d, want %d", seq, o.next))
	}
	o.next = seq + 1
	switch {
	case err != nil:
		o.failed++
	case o.check(seq, v):
		o.ok++
	default:
		o.bad = append(o.bad, fmt.Sprintf("seq %d: wrong reply %v", seq, v))
	}
}

// A million INCRs of one key through a Stream: replies 1..N in order.
func TestStreamMillionIncr(t *testing.T) {
	n := int64(1_000_000)
	if raceEnabled || testing.Short() {
		n = 100_000
	}
	c := setup(t, conn.Options{})
	o := &outcomes{check: func(seq int64, v resp.Value) bool { return v.Type == resp.Integer && v.Int == seq+1 }}
	st := pipeline.NewStream(c, o.fn, pipeline.StreamOptions{})
	ctx := testCtx(t)
	cmd := resp.Command(nil, "INCR", "counter")
	for range n {
		if err := st.AddCmd(ctx, cmd); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if len(o.bad)+len(o.disorder) > 0 || o.ok != n || o.failed != 0 {
		t.Fatalf("%d ok, %d failed, problems: %v", o.ok, o.failed, o.bad[:min(len(o.bad), 5)])
	}
	if got, _ := srv.Do("GET", "counter"); got != strconv.FormatInt(n, 10) {
		t.Fatalf("counter = %s", got)
	}
}

// A Stream through a proxy that cuts the connection at a random byte:
// every command gets exactly one outcome, in order, its own reply or the
// fault; Wait reports ErrStreamFailed.
func TestStreamCutMidway(t *testing.T) {
	servertest.Need(t, srv)
	var cut int
	var disorder []string
	p, err := faultproxy.New(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for round := range 20 {
		p.Set(faultproxy.Mode{})
		down0 := p.BytesDown()
		c, err := conn.Dial(testCtx(t), conn.Options{Addr: p.Addr()})
		if err != nil {
			t.Fatal(err)
		}
		// Byte counts are per connection: skip the handshake's reply.
		p.Set(faultproxy.Mode{CutDownAfter: p.BytesDown() - down0 + 1 + rand.Int64N(200_000)})
		o := &outcomes{check: func(seq int64, v resp.Value) bool { return v.Text() == "s"+strconv.FormatInt(seq, 10) }}
		st := pipeline.NewStream(c, o.fn, pipeline.StreamOptions{Window: 512, Chunk: 64})
		ctx := testCtx(t)
		const n = 20_000
		var addErr error
		for i := range n {
			if addErr = st.Add(ctx, "ECHO", "s"+strconv.Itoa(i)); addErr != nil {
				break
			}
		}
		werr := st.Wait(ctx)
		c.Close()
		o.mu.Lock()
		if len(o.bad) > 0 {
			t.Fatalf("round %d: %v", round, o.bad[:min(len(o.bad), 5)])
		}
		disorder = append(disorder, o.disorder...)
		if o.ok+o.failed != st.Sent() || int64(len(o.seen)) != st.Sent() {
			t.Fatalf("round %d: %d outcomes for %d commands sent", round, o.ok+o.failed, st.Sent())
		}
		if o.failed > 0 && !errors.Is(werr, pipeline.ErrStreamFailed) || o.failed == 0 && werr != nil {
			t.Fatalf("round %d: %d failed, Wait = %v", round, o.failed, werr)
		}
		if addErr != nil && !errors.Is(addErr, pipeline.ErrStreamFailed) {
			t.Fatalf("round %d: Add: %v", round, addErr)
		}
		if o.failed > 0 {
			cut++
		}
		o.mu.Unlock()
	}
	t.Logf("%d of 20 rounds were cut before their last reply", cut)
	if cut == 0 {
		t.Fatal("no round was cut: the test did not test faults")
	}
	if len(disorder) > 0 {
		t.Fatalf("outcomes out of order after a fault: %v", disorder[:min(len(disorder), 3)])
	}
}

// Add of no arguments must not be sent: the server never answers "*0",
// so every later reply would be credited to the command before it.
func TestStreamEmptyCommand(t *testing.T) {
	c := setup(t, conn.Options{})
	o := &outcomes{check: func(seq int64, v resp.Value) bool { return v.Text() == "e"+strconv.FormatInt(seq, 10) }}
	st := pipeline.NewStream(c, o.fn, pipeline.StreamOptions{Chunk: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // only against a hang
	defer cancel()
	st.Add(ctx, "ECHO", "e0")
	emptyErr := st.Add(ctx)
	for i := 1; i < 7; i++ { // the refused command took no sequence number
		st.Add(ctx, "ECHO", "e"+strconv.Itoa(i))
	}
	werr := st.Wait(ctx)
	o.mu.Lock()
	defer o.mu.Unlock()
	if !errors.Is(emptyErr, pipeline.ErrEmptyCommand) {
		t.Fatalf("Add() = %v, want ErrEmptyCommand", emptyErr)
	}
	if werr != nil || st.Sent() != 7 {
		t.Fatalf("Wait = %v, Sent = %d", werr, st.Sent())
	}
	if len(o.bad)+len(o.disorder) > 0 {
		t.Fatalf("wrong outcomes: %v %v", o.bad, o.disorder)
	}
}

// TestStreamMixedKinds: a stream of commands plain by their names (sent
// without facts to a Conn without hooks), commands that are not
// (SINTER, shaped like SELECT; ECHO, like EXEC: their facts read, the
// plain run before them read back), a guarded one (WATCH: in a chunk of
// its own, refused) and more plain ones, over a Conn with and without
// hooks: every reply arrives once, in order, under its own sequence
// number, and the refusal is WATCH's alone.
func TestStreamMixedKinds(t *testing.T) {
	hook := conn.Hook{BeforeCommand: func(ctx context.Context, _ conn.CommandInfo, _ conn.RawCommand) context.Context { return ctx }}
	for _, opts := range []conn.Options{{}, {Hooks: []conn.Hook{hook}}} {
		c := setup(t, opts)
		ctx := testCtx(t)
		var got []string
		st := pipeline.NewStream(c, func(seq int64, v resp.Value, err error) {
			switch {
			case err != nil:
				got = append(got, fmt.Sprintf("%d:err", seq))
			case v.Type == resp.Integer:
				got = append(got, fmt.Sprintf("%d:%d", seq, v.Int))
			case len(v.Elems) == 1:
				got = append(got, fmt.Sprintf("%d:%s", seq, v.Elems[0].Text()))
			default:
				got = append(got, fmt.Sprintf("%d:%s", seq, v.Text()))
			}
		}, pipeline.StreamOptions{Chunk: 3, Window: 8})
		var want []string
		seq := 0
		add := func(w string, args ...string) {
			t.Helper()
			err := st.Add(ctx, args...)
			if args[0] == "WATCH" {
				if !errors.Is(err, conn.ErrCommandRefused) {
					t.Fatalf("WATCH in a stream: %v", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			want = append(want, fmt.Sprintf("%d:%s", seq, w))
			seq++
		}
		for round := range 3 {
			r := strconv.Itoa(round)
			add("1", "SADD", "s"+r, "a"+r)
			add("PONG", "PING")
			add("1", "INCR", "n"+r)
			add("a"+r, "SINTER", "s"+r)
			add("OK", "SET", "k", r)
			if err := st.AddCmd(ctx, resp.Command(nil, "ECHO", "e"+r)); err != nil {
				t.Fatal(err)
			}
			want = append(want, fmt.Sprintf("%d:e%s", seq, r))
			seq++
			add("err", "WATCH", "k")
			add(r, "GET", "k")
		}
		if err := st.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("hooks %v:\n got %v\nwant %v", opts.Hooks != nil, got, want)
		}
	}
}

// TestStreamArgOverMaxArgAlone: a command refused for an argument over
// the connection's Options.MaxArg, in a chunk of several, is refused
// alone: the commands beside it in the chunk are sent and get their own
// replies, every outcome once, in order. The connection refuses a whole
// submission, so the chunk's seven ECHOs all failed with the SET's
// ArgTooLargeError, never sent.
func TestStreamArgOverMaxArgAlone(t *testing.T) {
	ctx := testCtx(t)
	c := setup(t, conn.Options{MaxArg: 1024})
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr, MaxArg: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, s := range []conn.Sender{c, cl, conn.SendFunc(c.Send)} {
		var got []string
		st := pipeline.NewStream(s, func(seq int64, v resp.Value, err error) {
			var ae *conn.ArgTooLargeError
			switch {
			case errors.As(err, &ae):
				got = append(got, fmt.Sprintf("%d:refused %s", seq, ae.Command))
			case err != nil:
				got = append(got, fmt.Sprintf("%d:%v", seq, err))
			default:
				got = append(got, fmt.Sprintf("%d:%s", seq, v.Text()))
			}
		}, pipeline.StreamOptions{Chunk: 8})
		var want []string
		var errs []error
		for i := range 16 {
			if i == 3 || i == 14 {
				errs = append(errs, st.Add(ctx, "SET", "big", strings.Repeat("x", 1025)))
				want = append(want, fmt.Sprintf("%d:refused SET", i))
				continue
			}
			errs = append(errs, st.Add(ctx, "ECHO", "e"+strconv.Itoa(i)))
			want = append(want, fmt.Sprintf("%d:e%d", i, i))
		}
		if err := st.Wait(ctx); err != nil {
			t.Fatalf("%T: Wait: %v", s, err)
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("%T: outcomes\n%v\nwant\n%v", s, got, want)
		}
		// The Add that sent each chunk tells of its refusal.
		if !errors.Is(errs[7], conn.ErrCommandRefused) || !errors.Is(errs[15], conn.ErrCommandRefused) {
			t.Fatalf("%T: Add errors %v", s, errs)
		}
	}
}

// TestStreamAddCancelledQueuesNothing: an Add whose ctx ends while it
// waits for room (a window of one command, a SET whose reply CLIENT
// PAUSE WRITE holds back), or had ended, returns ctx's error and queues nothing: the
// command takes no sequence number and is never sent (the INCR did not
// run), so adding it again sends it once. Before, it stayed gathered and
// was sent by the next Flush or Wait, so a caller adding it again after
// the error ran it twice. Plain and guarded commands alike (WATCH goes in
// a chunk of its own).
func TestStreamAddCancelledQueuesNothing(t *testing.T) {
	for _, cmd := range [][]string{{"INCR", "n"}, {"WATCH", "n"}} {
		c := setup(t, conn.Options{})
		ctl := setup(t, conn.Options{})
		ctx := testCtx(t)
		var got []string
		st := pipeline.NewStream(c, func(seq int64, v resp.Value, err error) {
			got = append(got, fmt.Sprintf("%d:%s:%v", seq, v.Text(), err != nil))
		}, pipeline.StreamOptions{Chunk: 1, Window: 1})
		if _, err := ctl.Do(ctx, "CLIENT", "PAUSE", 60000, "WRITE"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ctl.Do(context.Background(), "CLIENT", "UNPAUSE") })
		if err := st.Add(ctx, "SET", "held", "1"); err != nil { // in flight, its reply held back
			t.Fatal(err)
		}
		short, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- st.Add(short, cmd...) }()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: Add cancelled: %v", cmd[0], err)
		}
		if _, err := ctl.Do(ctx, "CLIENT", "UNPAUSE"); err != nil {
			t.Fatal(err)
		}
		if err := st.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if want := "0:OK:false"; strings.Join(got, " ") != want || st.Sent() != 1 {
			t.Fatalf("%s: replies %v, sent %d; want %s, 1: the cancelled Add was queued", cmd[0], got, st.Sent(), want)
		}
		if v, err := ctl.Do(ctx, "GET", "n"); err != nil || !v.IsNull() {
			t.Fatalf("%s: GET n = %q, %v: the INCR ran after its Add failed", cmd[0], v.Text(), err)
		}
	}
}
