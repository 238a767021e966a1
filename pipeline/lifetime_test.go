package pipeline_test

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/stretchr/testify/require"
)

// TestReplyHandleGenerationsDoNotWrap (issue 23, finding 13): a reply
// handle kept through 2^32 Resets is stale; before, the 32-bit
// generation wrapped and the handle read the reply of another command.
func TestReplyHandleGenerationsDoNotWrap(t *testing.T) {
	c := setup(t, conn.Options{})
	ctx := testCtx(t)
	var b pipeline.Batch
	h := b.Int(b.Builder().Incr("wrap:a").Build())
	require.NoError(t, b.Exec(ctx, c))
	n, err := h.Value()
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	pipeline.AdvanceResets(&b, 1<<32-1)
	b.Reset()
	b.Int(b.Builder().Incrby("wrap:b", 100).Build())
	require.NoError(t, b.Exec(ctx, c))
	n, err = h.Value()
	require.ErrorIs(t, err, pipeline.ErrStale, "the kept handle read %d", n)
}

// copyBatch copies a Batch by value, as a caller who ignores go vet
// would, without tripping this package's own vet run.
func copyBatch(dst, src *pipeline.Batch) {
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src).Elem())
}

// TestBatchCopyRefused (issue 23, finding 14): a Batch copied by value
// after use shares nothing with the original: the copy's commands and
// Exec are refused (ErrCopied) and nothing is sent until its Reset,
// which gives it memory of its own; the original's handles read the
// original's replies. Before, the copy sent the original's commands
// again and its replies replaced the original's, which the original's
// handle read.
func TestBatchCopyRefused(t *testing.T) {
	c := setup(t, conn.Options{})
	ctx := testCtx(t)
	var orig pipeline.Batch
	h := orig.Int(orig.Builder().Incr("copy:a").Build())
	require.NoError(t, orig.Exec(ctx, c))

	var cp pipeline.Batch
	copyBatch(&cp, &orig)
	hc := cp.Int(cp.Builder().Incrby("copy:b", 100).Build())
	cp.Add("INCRBY", "copy:b", "1000")
	err := cp.Exec(ctx, c)
	require.ErrorIs(t, err, pipeline.ErrCopied)
	_, err = hc.Value()
	require.ErrorIs(t, err, pipeline.ErrCopied)
	require.Empty(t, cp.Replies(), "a copy reads no replies")
	n, err := h.Value()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the original's handle")
	for k, want := range map[string]string{"copy:a": "1", "copy:b": ""} {
		got, err := srv.Do("GET", k)
		require.NoError(t, err)
		require.Equal(t, want, got, "nothing sent by the copy (%s)", k)
	}

	// After Reset the copy is a Batch of its own.
	cp.Reset()
	hc = cp.Int(cp.Builder().Incrby("copy:b", 100).Build())
	require.NoError(t, cp.Exec(ctx, c))
	n, err = hc.Value()
	require.NoError(t, err)
	require.EqualValues(t, 100, n)
	n, err = h.Value()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the original's handle after the copy's Exec")
	require.Len(t, orig.Replies(), 1)
	n, err = orig.Reply(0).AsInt()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the original's reply 0")

	// A copy made between Begin and the arguments: its arguments go
	// nowhere the original's are; before, they overwrote the
	// original's, which sent SET copy:c x.
	orig.Reset()
	orig.Begin(3)
	orig.Arg("SET")
	var mid pipeline.Batch
	copyBatch(&mid, &orig)
	orig.Arg("copy:d")
	orig.Arg("y")
	mid.Arg("copy:c")
	mid.Arg("x")
	require.NoError(t, orig.Exec(ctx, c))
	require.ErrorIs(t, mid.Exec(ctx, c), pipeline.ErrCopied)
	for k, want := range map[string]string{"copy:c": "", "copy:d": "y"} {
		got, err := srv.Do("GET", k)
		require.NoError(t, err)
		require.Equal(t, want, got, "%s", k)
	}

	// The original goes on.
	orig.Reset()
	h2 := orig.Int(orig.Builder().Incr("copy:a").Build())
	require.NoError(t, orig.Exec(ctx, c))
	n, err = h2.Value()
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "INCR copy:a, sent once more by the original")
}

// TestBatchCopyVet (issue 23, finding 14): go vet's copylocks check
// reports a Batch copied by value (testdata/copybatch); before, vet was
// silent.
func TestBatchCopyVet(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go vet")
	}
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "go vet needs the go command on PATH")
	out, err := exec.Command(goBin, "vet", "./testdata/copybatch").CombinedOutput()
	require.Error(t, err, "go vet passed a copied Batch:\n%s", out)
	for _, want := range []string{"main.go:10", "assignment copies lock value to cp", "main.go:15", "passes lock by value"} {
		require.True(t, strings.Contains(string(out), want), "go vet output lacks %q:\n%s", want, out)
	}
}

// TestBatchCopyOnLeanPathRefused: a Batch copied after raw commands took
// Add's lean path (one test, fast) is still refused at its first use: the
// copy's Add writes nothing into the original's buffer (the original
// then sends exactly its own commands) and its Exec is ErrCopied.
func TestBatchCopyOnLeanPathRefused(t *testing.T) {
	c := setup(t, conn.Options{})
	ctx := testCtx(t)
	var orig pipeline.Batch
	for range 64 { // memory with room, kept by Reset: the copy shares it
		orig.Add("PING")
	}
	orig.Reset()
	orig.Add("SET", "lean:a", "1")
	orig.Add("SET", "lean:b", "2")
	var cp pipeline.Batch
	copyBatch(&cp, &orig)
	orig.Add("SET", "lean:d", "4")
	cp.Add("SET", "lean:c", "3") // where the original's last command is, in memory they share
	require.ErrorIs(t, cp.Exec(ctx, c), pipeline.ErrCopied)
	require.NoError(t, orig.Exec(ctx, c))
	require.Len(t, orig.Replies(), 3)
	for k, want := range map[string]string{"lean:a": "1", "lean:b": "2", "lean:c": "", "lean:d": "4"} {
		got, err := srv.Do("GET", k)
		require.NoError(t, err)
		require.Equal(t, want, got, "%s", k)
	}
	// The copy, Reset, is a Batch of its own on the lean path too.
	cp.Reset()
	cp.Add("SET", "lean:c", "5")
	require.NoError(t, cp.Exec(ctx, c))
	got, err := srv.Do("GET", "lean:c")
	require.NoError(t, err)
	require.Equal(t, "5", got)
}
