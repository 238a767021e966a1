package wire_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// TestTimeoutUnitsMatchCmds: the table BuildArgs reads durations from is
// the generated command table's, for every command it names, and it
// names every blocking command of the generated table that has a unit.
func TestTimeoutUnitsMatchCmds(t *testing.T) {
	for name, u := range wire.TimeoutUnits {
		in := cmds.Lookup(name)
		if in == nil {
			t.Fatalf("%s: not in cmds", name)
		}
		if cmds.Unit(u) != in.Timeout || in.Timeout == cmds.NoUnit {
			t.Errorf("%s: unit %d, cmds has %d", name, u, in.Timeout)
		}
	}
	for _, name := range []string{"blpop", "brpop", "blmove", "blmpop", "brpoplpush", "bzpopmin", "bzpopmax", "bzmpop", "xread", "xreadgroup", "wait", "waitaof"} {
		if _, ok := wire.TimeoutUnits[name]; !ok {
			t.Errorf("%s missing", name)
		}
	}
	for _, name := range []string{"get", "expire", "set", "pexpire", "client|pause"} {
		if in := cmds.Lookup(name); in != nil && in.Timeout != cmds.NoUnit {
			t.Errorf("%s has a timeout unit in cmds: add it", name)
		}
	}
}

// TestBuildArgs: every kind of value is written as the server reads it.
func TestBuildArgs(t *testing.T) {
	for _, tc := range []struct {
		args []any
		want []string
	}{
		{[]any{"SET", []byte("k"), "v"}, []string{"SET", "k", "v"}},
		{[]any{"INCRBY", "n", 5}, []string{"INCRBY", "n", "5"}},
		{[]any{"X", int8(-8), int16(-16), int32(-32), int64(math.MinInt64), uint(7), uint8(8), uint16(16), uint32(32), uint64(math.MaxUint64)},
			[]string{"X", "-8", "-16", "-32", "-9223372036854775808", "7", "8", "16", "32", "18446744073709551615"}},
		{[]any{"ZADD", "z", 30.5, "a", 1e21, "b", 0.1, "c", float32(0.1), "d"}, []string{"ZADD", "z", "30.5", "a", "1000000000000000000000", "b", "0.1", "c", "0.1", "d"}},
		{[]any{"ZADD", "z", math.Inf(1), "a", math.Inf(-1), "b"}, []string{"ZADD", "z", "inf", "a", "-inf", "b"}},
		{[]any{"BLPOP", "q", 1500 * time.Millisecond}, []string{"BLPOP", "q", "1.5"}},
		{[]any{"blpop", "q", 2 * time.Second}, []string{"blpop", "q", "2"}},
		{[]any{"BZPOPMIN", "q", 1250 * time.Microsecond}, []string{"BZPOPMIN", "q", "0.002"}},
		{[]any{"BRPOP", "q", time.Duration(0)}, []string{"BRPOP", "q", "0"}},
		{[]any{"XREAD", "BLOCK", 1500*time.Microsecond + 1, "STREAMS", "s", "$"}, []string{"XREAD", "BLOCK", "2", "STREAMS", "s", "$"}},
		{[]any{"WAIT", 1, 250 * time.Millisecond}, []string{"WAIT", "1", "250"}},
	} {
		cmd, err := wire.BuildArgs(nil, tc.args)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got, want := string(cmd.Bytes()), string(resp.AppendCommand(nil, tc.want...)); got != want {
			t.Errorf("%v: got %q, want %q", tc.args, got, want)
		}
	}
	blocking, _ := wire.BuildArgs(nil, []any{"BLPOP", "q", time.Second})
	var facts wire.Facts
	if err := facts.Encoded(blocking.Bytes(), 1); err != nil {
		t.Fatal(err)
	}
	if f := facts.List()[0]; !f.Kind.Has(cmds.Blocking) || f.Timeout != time.Second {
		t.Errorf("BLPOP given as values: kind %b, timeout %v", f.Kind, f.Timeout)
	}
}

// TestBuildArgsRefused: what BuildArgs cannot write is an ErrBadArg
// naming the argument.
func TestBuildArgsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"EXPIRE", "k", time.Second}, "argument 2: this command takes no time.Duration"},
		{[]any{"SET", "k", "v", "EX", 10 * time.Second}, "argument 4: this command takes no time.Duration"},
		{[]any{"BLPOP", "q", -time.Second}, "argument 2: a negative"},
		{[]any{"SET", "k", true}, "argument 2: cannot write a bool"},
		{[]any{"ZADD", "z", math.NaN(), "a"}, "argument 2: NaN"},
		{[]any{"SET", "k", struct{}{}}, "cannot write a struct {}"},
		{[]any{42, "k"}, "argument 0: the command's name must be a string"},
	} {
		_, err := wire.BuildArgs(nil, tc.args)
		if !errors.Is(err, wire.ErrBadArg) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want ErrBadArg with %q", tc.args, err, tc.want)
		}
	}
	if cmd, err := wire.BuildArgs(nil, nil); err != nil || !errors.Is(cmd.Err(), resp.ErrEmptyCommand) {
		t.Errorf("no arguments: %v, %v", err, cmd.Err())
	}
}

// TestBuildArgsHugeDuration: a blocking timeout up to math.MaxInt64 is
// written as the server reads it (BLPOP's 9223372036.855, XREAD BLOCK's
// 9223372036855), where rounding up overflowed: BLPOP went out with a
// negative number of non-digit bytes after its point (the server refused
// it as "not a float"), XREAD BLOCK with a negative timeout.
func TestBuildArgsHugeDuration(t *testing.T) {
	for _, tc := range []struct {
		args []any
		want string // argument 2
	}{
		{[]any{"BLPOP", "q", time.Duration(math.MaxInt64)}, "9223372036.855"},
		{[]any{"BLPOP", "q", time.Duration(math.MaxInt64 - 500000)}, "9223372036.855"},
		{[]any{"XREAD", "BLOCK", time.Duration(math.MaxInt64), "STREAMS", "s", "$"}, "9223372036855"},
		{[]any{"WAIT", 1, time.Duration(math.MaxInt64 - 1)}, "9223372036855"},
	} {
		cmd, err := wire.BuildArgs(nil, tc.args)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		v, _, err := resp.Parse(cmd.Bytes(), resp.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if got := v.Elems[2].Text(); got != tc.want {
			t.Errorf("%v: sent %q, want %s", tc.args, cmd.Bytes(), tc.want)
		}
	}
}

// TestArgOver finds the first argument longer than the limit, in any
// command of a submission, with its command's offset, and nothing in
// bytes that are not commands.
func TestArgOver(t *testing.T) {
	var c resp.Cmds
	c.Add("SET", "k", "12345")
	c.Add("GET", "k")
	first := len(c.Bytes())
	c.Add("SET", "k2", "123456")
	c.Add("SET", "k3", "1234567")
	b := c.Bytes()
	for _, tc := range []struct {
		max, at, size int
		over          bool
	}{
		{7, 0, 0, false},
		{6, first + len(resp.AppendCommand(nil, "SET", "k2", "123456")), 7, true},
		{5, first, 6, true},
		{4, 0, 5, true},
		{0, 0, 3, true},
	} {
		at, size, over := wire.ArgOver(b, tc.max)
		if at != tc.at || size != tc.size || over != tc.over {
			t.Errorf("max %d: (%d, %d, %v), want (%d, %d, %v)", tc.max, at, size, over, tc.at, tc.size, tc.over)
		}
	}
	for _, bad := range []string{"+OK\r\n", "*2\r\n$1\r\na\r\n", "*1\r\n$x\r\n", "*1\r\n$1\r\n"} {
		if _, _, over := wire.ArgOver([]byte(bad), 1); over {
			t.Errorf("%q: over", bad)
		}
	}
}
