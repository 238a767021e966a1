package cmds

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/echomq/echomq-go/resp"
)

// TestHeaderSizes: the builder writes a command's array header in front
// of its arguments once their count is known, in room it kept, or (past
// 99999 arguments) in front of a copy. Across the counts where the
// header grows a digit, built in order and out of order (the arguments
// moved into place and written again) and with keys in a late run (XREAD's
// STREAMS), every command is the bytes resp.AppendCommand writes for the
// same arguments, and its keys are where they are in those bytes.
func TestHeaderSizes(t *testing.T) {
	var b Builder
	for _, n := range []int{1, 7, 8, 9, 10, 11, 98, 99, 100, 101, 9999, 99997, 99998, 99999, 100000, 100001} {
		keys := make([]string, n)
		for i := range keys {
			keys[i] = "key:" + strconv.Itoa(i)
		}
		// MGET: keys after the name, in order.
		check(t, b.Mget(keys...).Build(), append([]string{"MGET"}, keys...), positions(1, n, 1))

		// ZADD with its options out of order: members in a late run,
		// then CH before NX spills everything.
		members := make([]ScoreMember, n)
		want := []string{"ZADD", "z", "NX", "CH"}
		for i := range members {
			members[i] = ScoreMember{Score: float64(i), Member: keys[i]}
			want = append(want, strconv.Itoa(i), keys[i])
		}
		check(t, b.Zadd("z", members...).Ch().Nx().Build(), want, []int{1})

		// XREAD: its keys in a late run, the options out of order.
		ids := make([]string, n)
		for i := range ids {
			ids[i] = "0-" + strconv.Itoa(i)
		}
		tail := append(append([]string{"STREAMS"}, keys...), ids...)
		want = append([]string{"XREAD", "COUNT", "10", "BLOCK", "1000"}, tail...)
		check(t, b.Xread(keys, ids...).Block(time.Second).Count(10).Build(), want, positions(6, n, 1))
		// … and in order, without BLOCK.
		want = append([]string{"XREAD", "COUNT", "10"}, tail...)
		check(t, b.Xread(keys, ids...).Count(10).Build(), want, positions(4, n, 1))
	}
}

// positions returns n key positions from first, step apart.
func positions(first, n, step int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = first + i*step
	}
	return p
}

// check compares a built command with the encoding of want and its keys
// with the arguments at keyPos.
func check(t *testing.T, c Command, want []string, keyPos []int) {
	t.Helper()
	if err := c.Err(); err != nil {
		t.Fatalf("%s: %v", want[0], err)
	}
	enc := resp.AppendCommand(nil, want...)
	if got := c.Cmd().Bytes(); !bytes.Equal(got, enc) {
		t.Fatalf("%s of %d arguments: got %.60q…, want %.60q…", want[0], len(want), got, enc)
	}
	if c.Args() != len(want)-len(c.Info().Words) {
		t.Errorf("%s: Args %d, want %d", want[0], c.Args(), len(want)-len(c.Info().Words))
	}
	if c.Keys() != len(keyPos) {
		t.Fatalf("%s of %d arguments: %d keys, want %d", want[0], len(want), c.Keys(), len(keyPos))
	}
	for i, p := range keyPos {
		if c.KeyPos(i) != p || string(c.Key(i)) != want[p] {
			t.Fatalf("%s of %d arguments: key %d = %q at %d, want %q at %d", want[0], len(want), i, c.Key(i), c.KeyPos(i), want[p], p)
		}
	}
}
