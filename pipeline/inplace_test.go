package pipeline_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// The batch's own Builder builds a typed command where the batch's next
// command goes: queueing it copies nothing (issue 24), the queued bytes
// are the built Command's own.
func TestTypedBuiltInPlace(t *testing.T) {
	var b pipeline.Batch
	cb := b.Builder()
	b.Int(cb.Incr("first").Build()) // the first may be copied (no room before it)
	for i := range 50 {
		k := "emq:{b}:job:" + strconv.Itoa(i)
		c := cb.Evalsha("0123456789012345678901234567890123456789", k, "emq:{b}:pending").Arg(k[12:], "payload").Build()
		want := c.Cmd().Bytes()
		at := len(b.Encoded())
		b.Int(c)
		got := b.Encoded()[at:]
		require.Equal(t, want, got, "command %d", i)
		require.Same(t, &want[0], &got[0], "command %d was copied into the batch", i)
	}
}

// Whatever else is written to the batch while its Builder has a command
// open, built or queued there moves that command out of the way first:
// every command is sent as built, and a Command stays valid as long as
// before.
func TestTypedBuiltInPlaceMixed(t *testing.T) {
	ctx := testCtx(t)
	c := setup(t, conn.Options{})
	var b pipeline.Batch
	var other cmds.Builder
	cb := b.Builder()

	// Built, then a raw command, then queued.
	x := cb.Set("a", "1").Build()
	b.Add("SET", "b", "2")
	okA := b.OK(x)
	// Open, then another Builder's command queued, then built.
	open := cb.Get("a")
	inc := b.Int(other.Incr("n").Build())
	getA := b.String(open.Build())
	// Open across Begin and its arguments, and AddBytes, AddCmd.
	open2 := cb.Get("b")
	b.Begin(2)
	b.Arg("GET")
	b.Arg("a")
	b.AddBytes([]byte("GET"), []byte("b"))
	b.AddCmd(resp.Command(nil, "GET", "a"))
	getB := b.String(open2.Build())
	// Ten arguments and more: a longer header than the room lent in
	// front of them.
	del := b.Int(cb.Del("d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10").Build())
	// Queued twice.
	y := cb.Incr("n").Build()
	n1, n2 := b.Int(y), b.Int(y)
	require.NoError(t, b.Exec(ctx, c))

	v, err := okA.Value()
	require.NoError(t, err)
	require.True(t, v)
	require.Equal(t, []string{"OK", "OK", "1", "1", "2", "1", "2"}, []string{
		b.Reply(0).String(), b.Reply(1).String(), b.Reply(3).String(),
		b.Reply(4).String(), b.Reply(5).String(), b.Reply(6).String(), b.Reply(7).String(),
	})
	s, ok, err := getA.Value()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "1", s)
	s, ok, err = getB.Value()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "2", s)
	d, err := del.Value()
	require.NoError(t, err)
	require.Zero(t, d)
	for i, h := range []pipeline.Reply[int64]{inc, n1, n2} {
		n, err := h.Value()
		require.NoError(t, err)
		require.Equal(t, int64(i+1), n)
	}

	// A Command built and queued, the batch Reset and refilled: the
	// Command still holds its own bytes.
	z := cb.Set("key:after", "value").Build()
	want := string(z.Cmd().Bytes())
	b.OK(z)
	b.Reset()
	for range 20 {
		b.Add("PING")
	}
	require.Equal(t, want, string(z.Cmd().Bytes()))
	require.Equal(t, "key:after", string(z.Key(0)))
}

// A command queued twice is copied the second time; the command the
// Builder builds next goes after that copy, not over it: the batch's
// bytes are each queued command's, in order.
func TestTypedBuiltAfterCopy(t *testing.T) {
	var b pipeline.Batch
	cb := b.Builder()
	var want []byte
	queue := func(c cmds.Command) {
		want = append(want, c.Cmd().Bytes()...)
		b.Int(c)
	}
	queue(cb.Incr("a").Build())
	y := cb.Incr("n").Build()
	queue(y)
	queue(y)
	queue(cb.Incrby("n", 10).Build())
	queue(cb.Incr("b").Build())
	require.Equal(t, string(want), string(b.Encoded()))
}
