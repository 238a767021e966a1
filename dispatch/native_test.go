package dispatch_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

// TestNative: the native executor sends EMQ.<NAME> with the same keys and
// args, byte for byte, loads nothing, and hands back the replies, errors
// included.
func TestNative(t *testing.T) {
	p := startPeer(t, func(args []string) string {
		switch {
		case args[0] != "EMQ.ENQUEUE" || args[1] != "2" || len(args) != 6:
			return "-ERR unexpected command\r\n"
		case !strings.HasPrefix(args[4], "JOB"):
			return "-EMQKIND job id must be JOB-namespaced\r\n"
		}
		return ":1\r\n"
	})
	x := dispatch.NewNative(dialPeer(t, p.addr))
	ctx := testCtx(t)
	var a dispatch.Args
	fill := func(id string) {
		a.Reset()
		a.Key("emq:{q}:job:" + id)
		a.Key("emq:{q}:pending")
		a.Arg(id)
		a.Arg("payload")
	}
	want := func(id string) string {
		return wantCommand("EMQ.ENQUEUE", "2", "emq:{q}:job:"+id, "emq:{q}:pending", id, "payload")
	}
	fill(jobID(1))
	if got, err := evalText(ctx, x, enqueue, &a); err != nil || got != "1" {
		t.Fatalf("Eval = %q, %v", got, err)
	}
	fill("ABC0000000001")
	err := x.Eval(ctx, enqueue, &a, nil)
	var se *resp.ServerError
	if !errors.As(err, &se) || se.Msg != "EMQKIND job id must be JOB-namespaced" {
		t.Fatalf("Eval = %v, want the EMQKIND reply", err)
	}
	var b dispatch.Batch
	for _, id := range []string{jobID(2), "ABC0000000002", jobID(3)} {
		fill(id)
		b.Add(enqueue, &a)
	}
	if err := x.EvalBatch(ctx, &b); err != nil {
		t.Fatal(err)
	}
	got := []string{b.Reply(0).String(), b.Reply(1).String(), b.Reply(2).String()}
	if got[0] != "1" || got[1] != "(error) EMQKIND job id must be JOB-namespaced" || got[2] != "1" {
		t.Fatalf("batch replies %q", got)
	}
	wire := want(jobID(1)) + want("ABC0000000001") + want(jobID(2)) + want("ABC0000000002") + want(jobID(3))
	if p.bytes() != wire {
		t.Fatalf("wire:\n%q\nwant\n%q", p.bytes(), wire)
	}
	if n := p.count("SCRIPT LOAD") + p.count("EVALSHA"); n != 0 {
		t.Fatalf("native executor sent %d EVALSHA/SCRIPT LOAD", n)
	}
}
