package pipeline_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// Exec of a reused Batch of 100 PINGs allocates nothing in steady state,
// on a real server, the reader's allocations included.
func TestAllocsBatchExec(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets are not measured under -race (sync.Pool drops items)")
	}
	c := setup(t, conn.Options{})
	ctx := context.Background()
	var b pipeline.Batch
	for range 100 {
		b.Add("PING")
	}
	run := func() {
		if err := b.Exec(ctx, c); err != nil {
			t.Fatal(err)
		}
		if !b.Reply(99).Equal("PONG") {
			t.Fatalf("reply 99 = %v", b.Reply(99))
		}
	}
	for range 20 {
		run()
	}
	if n := testing.AllocsPerRun(200, run); n != 0 {
		t.Fatalf("Exec of 100 PINGs = %v allocs, want 0", n)
	}
	// Rebuilding the batch each time costs nothing either.
	rebuild := func() {
		b.Reset()
		for range 100 {
			b.Begin(2)
			b.Arg("ECHO")
			b.ArgInt(12345)
		}
		if err := b.Exec(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	rebuild()
	if n := testing.AllocsPerRun(200, rebuild); n != 0 {
		t.Fatalf("Reset, 100 × Begin/Arg/ArgInt and Exec = %v allocs, want 0", n)
	}
}

// A typed batch, rebuilt each time (Reset, 100 × Int(Incr) through one
// cmds.Builder, Exec, every Value read), allocates nothing in steady
// state: neither the builder, nor the handles, nor the integer decoder.
func TestAllocsTypedBatch(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets are not measured under -race (sync.Pool drops items)")
	}
	c := setup(t, conn.Options{})
	ctx := context.Background()
	var b pipeline.Batch
	var cb cmds.Builder
	hs := make([]pipeline.Reply[int64], 100)
	var fl pipeline.Reply[float64]
	var get pipeline.NullReply[string]
	want := int64(0)
	run := func() {
		b.Reset()
		for i := range hs {
			hs[i] = b.Int(cb.Incr("n").Build())
		}
		fl = b.Float(cb.Zincrby("z", 0.5, "m").Build())
		get = b.String(cb.Get("missing").Build())
		if err := b.Exec(ctx, c); err != nil {
			t.Fatal(err)
		}
		for _, h := range hs {
			want++
			if n, err := h.Value(); err != nil || n != want {
				t.Fatalf("INCR = %d, %v; want %d", n, err, want)
			}
		}
		if f, err := fl.Value(); err != nil || f <= 0 {
			t.Fatalf("ZINCRBY = %v, %v", f, err)
		}
		if _, ok, err := get.Value(); err != nil || ok {
			t.Fatalf("GET missing = %v, %v", ok, err)
		}
	}
	for range 20 {
		run()
	}
	if n := testing.AllocsPerRun(200, run); n != 0 {
		t.Fatalf("typed batch of 102 commands = %v allocs, want 0", n)
	}
}

// Adding to a Stream allocates nothing in steady state, its facts
// included: raw strings (inspected as they are added), a resp.Cmd (read
// once) and the chunks' submissions; nor does waiting for room, with a
// window of one chunk, where every chunk waits for the one before it (a
// wait made a channel each time: the test failed now and then on a
// loaded machine, with the wider window, when the server fell behind).
func TestAllocsStreamAdd(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets are not measured under -race (sync.Pool drops items)")
	}
	for _, opts := range []pipeline.StreamOptions{{Chunk: 50, Window: 200}, {Chunk: 50, Window: 50}} {
		c := setup(t, conn.Options{})
		ctx := context.Background()
		var got int64
		st := pipeline.NewStream(c, func(seq int64, v resp.Value, err error) {
			if err == nil && !v.IsError() {
				got++
			}
		}, opts)
		get := resp.Command(nil, "GET", "k")
		run := func() {
			for range 50 {
				if err := st.Add(ctx, "SET", "k", "v"); err != nil {
					t.Fatal(err)
				}
				if err := st.AddCmd(ctx, get); err != nil {
					t.Fatal(err)
				}
			}
		}
		for range 20 {
			run()
		}
		if n := testing.AllocsPerRun(100, run); n != 0 {
			t.Fatalf("window %d: Stream.Add allocates %v per 100 commands", opts.Window, n)
		}
		if err := st.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if want := int64(121 * 100); got != want {
			t.Fatalf("%d replies, want %d", got, want)
		}
	}
}

// A typed batch of integer, boolean and number replies, rebuilt each
// time through one cmds.Builder (Reset, 4 × 25 commands, Exec, every
// Value read), allocates nothing per command in steady state, RESP2 and
// RESP3: neither the builder, nor the handles, nor the decoders.
func TestAllocsTypedBatchNumeric(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets are not measured under -race (sync.Pool drops items)")
	}
	for _, proto := range []int{2, 3} {
		c := setup(t, conn.Options{Protocol: proto})
		ctx := context.Background()
		var b pipeline.Batch
		var cb cmds.Builder
		const each = 25
		ints := make([]pipeline.Reply[int64], each)
		bools := make([]pipeline.Reply[bool], each)
		floats := make([]pipeline.Reply[float64], each)
		oks := make([]pipeline.Reply[bool], each)
		var want int64
		run := func() {
			b.Reset()
			for i := range each {
				ints[i] = b.Int(cb.Incr("n").Build())
				bools[i] = b.Bool(cb.Expire("n", time.Hour).Build())
				floats[i] = b.Float(cb.Zincrby("z", 0.5, "m").Build())
				oks[i] = b.OK(cb.Set("k", "v").Ex(time.Minute).Build())
			}
			if err := b.Exec(ctx, c); err != nil {
				t.Fatal(err)
			}
			for i := range each {
				want++
				n, err1 := ints[i].Value()
				set, err2 := bools[i].Value()
				f, err3 := floats[i].Value()
				ok, err4 := oks[i].Value()
				if err := errors.Join(err1, err2, err3, err4); err != nil || n != want || !set || f != float64(want)/2 || !ok {
					t.Fatalf("RESP%d: %d %v %v %v, %v; want %d", proto, n, set, f, ok, err, want)
				}
			}
		}
		for range 20 {
			run()
		}
		if a := testing.AllocsPerRun(100, run); a != 0 {
			t.Fatalf("RESP%d: a typed batch of %d commands = %v allocs, want 0", proto, 4*each, a)
		}
	}
}

// Key parts the compiler cannot fold into constants.
var allocKeyPrefix, allocKeyID = "user:", "12345"

// TestAllocsAddConcatenated: raw Add of arguments built by concatenation
// allocates nothing: Add does not keep its arguments, so a key made of
// two strings stays on the caller's stack. Both for a Batch never sent
// and for one last sent to a Sender that reads facts (a user's Sender:
// Add then records each command's facts as it comes). Add used to leak
// its arguments' contents (escape analysis: "leaking param content:
// args"), so each concatenated argument was a heap allocation.
func TestAllocsAddConcatenated(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets are not measured under -race")
	}
	ctx := context.Background()
	var b pipeline.Batch
	add := func() {
		b.Reset()
		for range 10 {
			b.Add("SET", allocKeyPrefix+allocKeyID, "v:"+allocKeyID)
			b.Add("GET", allocKeyPrefix+allocKeyID)
		}
	}
	add()
	if n := testing.AllocsPerRun(100, add); n != 0 {
		t.Errorf("Reset and 20 × Add of concatenated arguments = %v allocs, want 0", n)
	}
	// A Sender that reads facts (any Sender outside the module).
	fake := conn.SendFunc(func(_ context.Context, cmds conn.Cmds, h conn.Handler) error {
		for i := range cmds.Len() {
			h.Reply(i, resp.Value{Type: resp.SimpleString, Str: []byte("OK")})
		}
		h.Done(nil)
		return nil
	})
	if err := b.Exec(ctx, fake); err != nil {
		t.Fatal(err)
	}
	add()
	if n := testing.AllocsPerRun(100, add); n != 0 {
		t.Errorf("after an Exec on a Sender that reads facts: Reset and 20 × Add of concatenated arguments = %v allocs, want 0", n)
	}
}

// TestAllocsTypedPeerPaths: the typed batches of the peer run's
// echomq-typed client (bench/peers) allocate nothing in steady state,
// rebuilt each time and every handle read: PING read as a status (with
// Decode and cmds.Status, and with Status), SET with OK, GET with
// String, and EVALSHA with Int whose keys and arguments are built by
// concatenation (the builder keeps nothing of them). PING's status was
// copied into a new string: one allocation per command.
func TestAllocsTypedPeerPaths(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets are not measured under -race (sync.Pool drops items)")
	}
	c := setup(t, conn.Options{})
	sha := loadScript(t, c, "return 1")
	ctx := context.Background()
	var b pipeline.Batch
	const each = 20
	pings := make([]pipeline.Reply[string], 0, 2*each)
	oks := make([]pipeline.Reply[bool], 0, each)
	ints := make([]pipeline.Reply[int64], 0, each)
	gets := make([]pipeline.NullReply[string], 0, each)
	run := func() {
		b.Reset()
		pings, oks, ints, gets = pings[:0], oks[:0], ints[:0], gets[:0]
		cb := b.Builder()
		for range each {
			pings = append(pings, pipeline.Decode(&b, cb.Ping().Build(), cmds.Status))
			pings = append(pings, b.Status(cb.Ping().Build()))
			oks = append(oks, b.OK(cb.Set(allocKeyPrefix+allocKeyID, "v:"+allocKeyID).Build()))
			gets = append(gets, b.String(cb.Get(allocKeyPrefix+allocKeyID).Build()))
			ints = append(ints, b.Int(cb.Evalsha(sha, allocKeyPrefix+allocKeyID, allocKeyPrefix+"pending").Arg(allocKeyID, "v:"+allocKeyID).Build()))
		}
		if err := b.Exec(ctx, c); err != nil {
			t.Fatal(err)
		}
		for _, h := range pings {
			if v, err := h.Value(); err != nil || v != "PONG" {
				t.Fatalf("PING = %q, %v", v, err)
			}
		}
		for _, h := range oks {
			if v, err := h.Value(); err != nil || !v {
				t.Fatalf("SET = %v, %v", v, err)
			}
		}
		for _, h := range ints {
			if v, err := h.Value(); err != nil || v != 1 {
				t.Fatalf("EVALSHA = %v, %v", v, err)
			}
		}
		for _, h := range gets {
			// The value's string is GET's one allocation: read it only
			// for a failure's message.
			if _, ok, err := h.Value(); err != nil || !ok {
				t.Fatalf("GET = %v, %v", ok, err)
			}
		}
	}
	for range 20 {
		run()
	}
	if n := testing.AllocsPerRun(100, run); n > each {
		t.Fatalf("typed batch of %d commands = %v allocs, want %d (GET's strings)", 5*each, n, each)
	}
}

// loadScript loads script on c's server (SCRIPT LOAD) and returns its
// SHA1.
func loadScript(t testing.TB, c *conn.Conn, script string) string {
	t.Helper()
	var b pipeline.Batch
	b.Add("SCRIPT", "LOAD", script)
	if err := b.Exec(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return b.Reply(0).String()
}
