package resp_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/echomq/echomq-go/resp"
)

// TestSpansAsWritten (issue 24): the spans each encoder records as it
// writes (AppendCommandSpans, AppendCommandBytesSpans, Cmds.AddSpans,
// Args.AddSpan) are those the one reader finds (SplitCommand) and those
// CommandSpans computes, and each views its argument, for commands of
// up to 40 arguments of 0 to 200 bytes.
func TestSpansAsWritten(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var c resp.Cmds
	for round := range 300 {
		args := make([]string, 1+r.IntN(40))
		bargs := make([][]byte, len(args))
		for i := range args {
			args[i] = strings.Repeat(string(rune('a'+i%26)), r.IntN(200))
			bargs[i] = []byte(args[i])
		}
		prefix := []byte("*1\r\n$4\r\nPING\r\n")
		enc, spans := resp.AppendCommandSpans(slices.Clone(prefix), nil, args...)
		cmd := enc[len(prefix):]
		_, bspans := resp.AppendCommandBytesSpans(nil, nil, bargs...)
		read, size, ok := resp.SplitCommand(cmd, nil)
		computed, csize := resp.CommandSpans(nil, bargs)
		c.Reset()
		c.Add("PING")
		start := len(c.Bytes())
		added := c.AddSpans(nil, args...)
		if !ok || size != len(cmd) || csize != len(cmd) || string(c.Bytes()[start:]) != string(cmd) {
			t.Fatalf("round %d: SplitCommand %v, size %d, CommandSpans %d, of %d", round, ok, size, csize, len(cmd))
		}
		for _, other := range [][]resp.Span{bspans, read, computed, added} {
			if !slices.Equal(spans, other) {
				t.Fatalf("round %d: spans %v, another encoder or reader %v", round, spans, other)
			}
		}
		for i, sp := range spans {
			if string(sp.Of(cmd)) != args[i] {
				t.Fatalf("round %d: span %d views %q", round, i, sp.Of(cmd))
			}
		}
		var a resp.Args
		a.Add("x")
		at := a.AddSpan(args[0])
		if int(at.Off) != a.Size()-len(args[0])-2 || at.Len != uint32(len(args[0])) {
			t.Fatalf("round %d: Args.AddSpan %+v of a run of %d bytes", round, at, a.Size())
		}
	}
	if _, _, ok := resp.SplitCommand([]byte("*2\r\n$1\r\na\r\n"), nil); ok {
		t.Fatal("SplitCommand took a command missing an argument")
	}
}

// TestArrayHeaderInFront: PutArrayHeader writes what AppendArrayHeader
// writes, ending where it is told.
func TestArrayHeaderInFront(t *testing.T) {
	for _, n := range []int{0, 1, 9, 10, 99, 100, 12345, 99999} {
		b := make([]byte, 8)
		at := resp.PutArrayHeader(b, 8, n)
		if want := string(resp.AppendArrayHeader(nil, n)); string(b[at:]) != want {
			t.Errorf("PutArrayHeader(%d) = %q, want %q", n, b[at:], want)
		}
	}
	for _, i := range []int64{0, 7, -7, 10, 12345, -1 << 63} {
		sp, size := resp.BulkIntSpan(i)
		enc := resp.AppendBulkInt(nil, i)
		if size != len(enc) || string(sp.Of(enc)) != string(enc[sp.Off:int(sp.Off)+int(sp.Len)]) || resp.BulkAt(enc, 0) != sp {
			t.Errorf("BulkIntSpan(%d) = %+v, %d of %q", i, sp, size, enc)
		}
	}
}
