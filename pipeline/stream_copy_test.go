package pipeline_test

import (
	"os/exec"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// A Stream copied by value shares nothing with the original: every
// method of the copy is refused with ErrStreamCopied and sends nothing,
// and the original goes on with its own outcomes. go vet reports the copy
// (testdata/copystream). Before, the copy's Add appended into the
// original's gathered commands and its chunks freed the original's
// window: the original's Wait returned with replies still owed, or the
// copy's Wait never returned.
func TestStreamCopied(t *testing.T) {
	c := setup(t, conn.Options{})
	ctx := testCtx(t)
	var got []string
	st := pipeline.NewStream(c, func(seq int64, v resp.Value, err error) {
		require.NoError(t, err)
		got = append(got, v.Text())
	}, pipeline.StreamOptions{Chunk: 4, Window: 8})
	require.NoError(t, st.Add(ctx, "ECHO", "a"))

	cp := new(pipeline.Stream)
	reflect.ValueOf(cp).Elem().Set(reflect.ValueOf(st).Elem())
	require.ErrorIs(t, cp.Add(ctx, "ECHO", "copy"), pipeline.ErrStreamCopied)
	require.ErrorIs(t, cp.AddCmd(ctx, resp.Command(nil, "ECHO", "copy")), pipeline.ErrStreamCopied)
	require.ErrorIs(t, cp.Flush(ctx), pipeline.ErrStreamCopied)
	require.ErrorIs(t, cp.Wait(ctx), pipeline.ErrStreamCopied)
	var zero pipeline.Stream
	require.ErrorIs(t, zero.Add(ctx, "PING"), pipeline.ErrStreamCopied)

	require.NoError(t, st.Add(ctx, "ECHO", "b"))
	require.NoError(t, st.Wait(ctx))
	require.Equal(t, []string{"a", "b"}, got, "the original's commands only")

	if testing.Short() {
		return
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	out, err := exec.Command(goBin, "vet", "./testdata/copystream").CombinedOutput()
	require.Error(t, err, "go vet passed a copied Stream:\n%s", out)
	require.Contains(t, string(out), "main.go:13")
	require.Contains(t, string(out), "assignment copies lock value to cp")
}
