package pipeline_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// TestAddFactsOfLongCommands: a Batch last sent to a Sender that reads
// facts records each raw command's facts as it is added; one of more
// arguments than Add takes as they come (an MSET of 12 pairs, its last
// keys past the 16th argument) is read from its bytes, in its place, so
// the facts the Sender gets are one per command, in order, each key
// span naming its key.
func TestAddFactsOfLongCommands(t *testing.T) {
	ctx := context.Background()
	var got [][]string
	fake := conn.SendFunc(func(_ context.Context, w conn.Cmds, h conn.Handler) error {
		got = got[:0]
		b := w.Bytes()
		for _, f := range w.Facts() {
			var keys []string
			for _, k := range f.Keys {
				keys = append(keys, string(k.Of(b)))
			}
			got = append(got, keys)
			b = b[f.Size:]
		}
		if len(w.Facts()) != w.Len() {
			t.Errorf("%d facts for %d commands", len(w.Facts()), w.Len())
		}
		for i := range w.Len() {
			h.Reply(i, resp.Value{Type: resp.SimpleString, Str: []byte("OK")})
		}
		h.Done(nil)
		return nil
	})
	var b pipeline.Batch
	b.Add("PING")
	if err := b.Exec(ctx, fake); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	mset := []string{"MSET"}
	var want []string
	for i := range 12 {
		k := fmt.Sprintf("k%02d", i)
		mset = append(mset, k, "v")
		want = append(want, k)
	}
	b.Add("GET", "first")
	b.Add(mset...)
	b.Add("GET", "last")
	var cb cmds.Builder
	b.AddCommand(cb.Get("typed").Build())
	if err := b.Exec(ctx, fake); err != nil {
		t.Fatal(err)
	}
	wantAll := fmt.Sprint([][]string{{"first"}, want, {"last"}, {"typed"}})
	if fmt.Sprint(got) != wantAll {
		t.Fatalf("keys by the facts: %v, want %v", got, wantAll)
	}
}

// TestStreamAddLongCommand: a Stream's Add of a command that is not
// plain by its name (SUNION shares SELECT's shape) and of more arguments
// than its facts are taken from as they come (20 keys) gets its fact
// from its encoding, and its reply, on a real server.
func TestStreamAddLongCommand(t *testing.T) {
	c := setup(t, conn.Options{})
	ctx := testCtx(t)
	var replies []resp.Value
	st := pipeline.NewStream(c, func(_ int64, v resp.Value, err error) {
		if err != nil {
			t.Errorf("reply: %v", err)
		}
		replies = append(replies, v.Clone())
	}, pipeline.StreamOptions{})
	args := []string{"SUNION"}
	for i := range 20 {
		args = append(args, fmt.Sprintf("{s}:%02d", i))
	}
	if err := st.Add(ctx, "SADD", "{s}:19", "m"); err != nil {
		t.Fatal(err)
	}
	if err := st.Add(ctx, args...); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if len(replies) != 2 || len(replies[1].Elems) != 1 || replies[1].Elems[0].Text() != "m" {
		t.Fatalf("replies %v, want SUNION to answer [m]", replies)
	}
}
