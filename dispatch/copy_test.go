package dispatch_test

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/dispatch"
)

// copyBatch copies src into dst by value, unseen by go vet.
func copyBatch(dst, src *dispatch.Batch) {
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src).Elem())
}

// A dispatch.Batch copied by value after use shares nothing with the
// original (as pipeline.Batch, issue 23 finding 14): the copy's
// EvalBatch is refused with ErrCopied and sends nothing, it holds no
// calls or replies, and after its Reset it is a Batch of its own; the
// original's replies stay its own. Before, the copy's EvalBatch wrote its
// replies into the original's slots (the original read the copy's
// reply), and its Add overwrote the original's calls.
func TestBatchCopyRefused(t *testing.T) {
	for _, name := range []string{"Scripted", "Native"} {
		t.Run(name, func(t *testing.T) {
			c := ready(t)
			ctx := testCtx(t)
			var x dispatch.Executor = dispatch.NewScripted(c)
			if name == "Native" {
				// Native sends EMQ.* names the server does not know: the
				// refusal must come before anything is sent.
				x = dispatch.NewNative(c)
			}
			sx := dispatch.NewScripted(c)
			var orig dispatch.Batch
			var a dispatch.Args
			a.Arg("orig")
			orig.Add(echo, &a)
			require.NoError(t, sx.EvalBatch(ctx, &orig))
			require.Equal(t, "orig", orig.Reply(0).Text())

			var cp dispatch.Batch
			copyBatch(&cp, &orig)
			a.Reset()
			a.Arg("copy")
			cp.Add(echo, &a)
			calls := srv.CommandCalls(t, "evalsha")
			require.ErrorIs(t, x.EvalBatch(ctx, &cp), dispatch.ErrCopied)
			require.Equal(t, calls, srv.CommandCalls(t, "evalsha"), "the copy sent nothing")
			require.Empty(t, cp.Replies(), "a copy reads no replies")
			require.Equal(t, 1, orig.Len())
			require.Equal(t, "orig", orig.Reply(0).Text(), "the original's reply")

			// After Reset the copy is a Batch of its own.
			cp.Reset()
			cp.Add(echo, &a)
			cp.Add(echo, &a)
			require.NoError(t, sx.EvalBatch(ctx, &cp))
			require.Len(t, cp.Replies(), 2)
			require.Equal(t, "copy", cp.Reply(1).Text())
			require.Equal(t, 1, orig.Len())
			require.Equal(t, "orig", orig.Reply(0).Text(), "the original's reply after the copy's EvalBatch")
			require.NoError(t, sx.EvalBatch(ctx, &orig))
			require.Equal(t, "orig", orig.Reply(0).Text())
		})
	}
}

// go vet's copylocks check reports a dispatch.Batch copied by value
// (testdata/copybatch).
func TestBatchCopyVet(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go vet")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	out, err := exec.Command(goBin, "vet", "./testdata/copybatch").CombinedOutput()
	require.Error(t, err, "go vet passed a copied Batch:\n%s", out)
	for _, want := range []string{"main.go:10", "assignment copies lock value to cp", "main.go:15", "passes lock by value"} {
		require.True(t, strings.Contains(string(out), want), "go vet output lacks %q:\n%s", want, out)
	}
}
