package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/kv"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// keyRecorder records every hook call as text, in order: "+NAME[keys]"
// (with the Script for EVALSHA), "-NAME" or "-NAME!kind" for an error,
// "bpN" and "apN".
type keyRecorder struct {
	mu  sync.Mutex
	evs []string
}

func (r *keyRecorder) add(e string) {
	r.mu.Lock()
	r.evs = append(r.evs, e)
	r.mu.Unlock()
}

func (r *keyRecorder) take() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := strings.Join(r.evs, " ")
	r.evs = nil
	return s
}

func errKind(err error) string {
	var ce *conn.CommandError
	var se *resp.ServerError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &ce):
		return "!refused"
	case errors.As(err, &se):
		return "!" + se.Code()
	}
	return "!" + err.Error()
}

func (r *keyRecorder) hook() conn.Hook {
	return conn.Hook{
		BeforeCommand: func(ctx context.Context, cmd conn.CommandInfo, raw conn.RawCommand) context.Context {
			var keys []string
			for i := range raw.Keys() {
				keys = append(keys, string(raw.Key(i)))
			}
			e := "+" + cmd.Name + "[" + strings.Join(keys, ",") + "]"
			if cmd.Script != "" {
				e += "@" + cmd.Script
			}
			r.add(e)
			return ctx
		},
		AfterCommand: func(_ context.Context, cmd conn.CommandInfo, _ resp.Value, _ time.Duration, err error) {
			r.add("-" + cmd.Name + errKind(err))
		},
		BeforePipeline: func(ctx context.Context, p conn.PipelineInfo) context.Context {
			r.add("bp" + string(rune('0'+len(p.Commands))))
			return ctx
		},
		AfterPipeline: func(_ context.Context, p conn.PipelineInfo, _ time.Duration, err error) {
			r.add("ap" + string(rune('0'+len(p.Commands))) + errKind(err))
		},
	}
}

// TestHooksSeeNamesAndKeys: the hooks of a Client see every command
// exactly once, in order, with its name and its keys (read from the
// facts its encoder knew: a builder's key positions), for single
// commands, pipelines, refusals, error replies and unknown commands.
func TestHooksSeeNamesAndKeys(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	ctx := testCtx(t)
	rec := &keyRecorder{}
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr, Hooks: []conn.Hook{rec.hook()}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rec.take() // the handshake, if any

	// Keys of commands given raw come from the key specs (cmds' findKeys,
	// from the h-keys branch): until it is merged, raw commands name none.
	_, probe := cmds.Inspect([][]byte{[]byte("GET"), []byte("k")}, nil)
	raw := func(keys string) string {
		if len(probe) == 0 {
			return ""
		}
		return keys
	}
	check := func(what, want string) {
		t.Helper()
		if got := rec.take(); got != want {
			t.Errorf("%s:\n got %s\nwant %s", what, got, want)
		}
	}

	// A builder's single command (kv.HLen builds HLEN), and a raw one
	// (kv.Get encodes GET itself).
	if _, err := kv.HLen(ctx, cl, "h1"); err != nil {
		t.Fatal(err)
	}
	check("kv.HLen", "+HLEN[h1] -HLEN")
	if _, _, err := kv.Get(ctx, cl, "k1"); err != nil {
		t.Fatal(err)
	}
	check("kv.Get", "+GET["+raw("k1")+"] -GET")

	// A pipeline of builders and raw commands, with an error reply.
	var b cmds.Builder
	var bt pipeline.Batch
	bt.AddCommand(b.Set("k2", "v").Build())
	bt.AddCommand(b.Mset(cmds.KeyValue{Key: "a", Value: "1"}, cmds.KeyValue{Key: "{a}b", Value: "2"}).Build())
	bt.AddCommand(b.Incr("k2").Build())
	bt.Add("GET", "k3")
	if err := bt.Exec(ctx, cl); err != nil {
		t.Fatal(err)
	}
	check("batch", "bp4 +SET[k2] +MSET[a,{a}b] +INCR[k2] +GET["+raw("k3")+"] -SET -MSET -INCR!ERR -GET ap4")

	// A pipeline of raw commands only, all plain: it reaches the Client
	// without facts, which the hooks read from its bytes.
	bt.Reset()
	bt.Add("SET", "k5", "1")
	bt.Begin(2)
	bt.Arg("GET")
	bt.Arg("k5")
	if err := bt.Exec(ctx, cl); err != nil {
		t.Fatal(err)
	}
	check("plain batch", "bp2 +SET["+raw("k5")+"] +GET["+raw("k5")+"] -SET -GET ap2")

	// A refused pipeline: every command ends once with the refusal.
	bt.Reset()
	bt.AddCommand(b.Get("x").Build())
	bt.Add("SUBSCRIBE", "ch")
	if err := bt.Exec(ctx, cl); !errors.Is(err, conn.ErrCommandRefused) {
		t.Fatalf("SUBSCRIBE in a batch: %v", err)
	}
	check("refused batch", "bp2 +GET[x] +SUBSCRIBE[] -GET!refused -SUBSCRIBE!refused ap2!refused")

	// Raw commands: EVALSHA names its script; an unknown command its name.
	sha := "0123456789012345678901234567890123456789"
	if _, err := cl.Do(ctx, "evalsha", sha, 1, "sk"); err == nil {
		t.Fatal("EVALSHA of no script succeeded")
	}
	check("EVALSHA", "+EVALSHA["+raw("sk")+"]@"+sha+" -EVALSHA!NOSCRIPT")
	if _, err := cl.Do(ctx, "nosuch.cmd", "x"); err == nil {
		t.Fatal("an unknown command succeeded")
	}
	check("unknown", "+NOSUCH.CMD[] -NOSUCH.CMD!ERR")

	// A literal Cmds (facts read from its bytes) and a blocking builder.
	var two resp.Cmds
	two.Add("SET", "k4", "1")
	two.Add("get", "k4")
	w, _ := conn.CmdsOfBatch(&two)
	if err := sendWait(ctx, cl, w); err != nil {
		t.Fatal(err)
	}
	check("CmdsOfBatch", "bp2 +SET["+raw("k4")+"] +GET["+raw("k4")+"] -SET -GET ap2")
	bt.Reset()
	bt.AddCommand(b.Blpop([]string{"q1", "q2"}, time.Millisecond).Build())
	if err := bt.Exec(ctx, cl); err != nil {
		t.Fatal(err)
	}
	check("BLPOP", "+BLPOP[q1,q2] -BLPOP")
}
