package resp_test

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/echomq/echomq-go/resp"
)

// countCommands parses b as back-to-back commands (arrays of bulk
// strings) and returns how many there are, failing on anything else.
func countCommands(t *testing.T, b []byte) int {
	t.Helper()
	n := 0
	for len(b) > 0 {
		v, used, err := resp.Parse(b, resp.Limits{})
		if err != nil || v.Type != resp.Array || v.Len() == 0 {
			t.Fatalf("command %d: %v %v", n, v, err)
		}
		for _, e := range v.Elems {
			if e.Type != resp.BulkString {
				t.Fatalf("command %d has a %v argument", n, e.Type)
			}
		}
		b = b[used:]
		n++
	}
	return n
}

// Finding 2: Send trusted a caller's count, and two ECHOs sent as one
// made the next caller receive "A-surplus". Now a count travels with its
// bytes and only the encoders make either: whatever sequence of builder
// calls a user makes, a Cmds without Err holds exactly Len commands, and
// one with Err is never sent.
func TestCmdsCountMatchesBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 2000 {
		var c resp.Cmds
		broken := false
		for range rng.IntN(6) {
			switch rng.IntN(6) {
			case 0:
				args := make([]string, rng.IntN(3))
				for i := range args {
					args[i] = "a" + strconv.Itoa(i)
				}
				broken = broken || len(args) == 0
				c.Add(args...)
			case 1:
				c.AddBytes([]byte("ECHO"), []byte("x"))
			case 2:
				cmd := resp.Command(nil, "ECHO", "y")
				if rng.IntN(4) == 0 {
					cmd = resp.BuildCommand(nil, 3).Arg("SET").Arg("k").Cmd()
					broken = true
				}
				c.AddCmd(cmd)
			default:
				want := rng.IntN(4)
				give := want
				if rng.IntN(3) == 0 {
					give = rng.IntN(4)
				}
				broken = broken || want == 0 || give != want
				c.Begin(want)
				for i := range give {
					switch i % 3 {
					case 0:
						c.Arg("s")
					case 1:
						c.ArgBytes([]byte("b"))
					default:
						c.ArgInt(int64(i))
					}
				}
			}
		}
		err := c.Err()
		if broken != (err != nil) {
			t.Fatalf("round %d: broken=%v but Err=%v", round, broken, err)
		}
		if err != nil {
			if !errors.Is(err, resp.ErrEmptyCommand) && !errors.Is(err, resp.ErrArgCount) {
				t.Fatalf("round %d: Err = %v", round, err)
			}
			continue
		}
		if got := countCommands(t, c.Bytes()); got != c.Len() {
			t.Fatalf("round %d: Len %d, bytes hold %d commands", round, c.Len(), got)
		}
	}
}

// A Cmd holds exactly one command or says why it cannot be sent.
func TestCmdOneCommand(t *testing.T) {
	var zero resp.Cmd
	if !errors.Is(zero.Err(), resp.ErrEmptyCommand) {
		t.Fatalf("zero Cmd: %v", zero.Err())
	}
	if err := resp.Command(nil).Err(); !errors.Is(err, resp.ErrEmptyCommand) {
		t.Fatalf("Command(): %v", err)
	}
	if err := resp.BuildCommand(nil, 2).Arg("GET").Cmd().Err(); !errors.Is(err, resp.ErrArgCount) {
		t.Fatalf("short builder: %v", err)
	}
	var a resp.Args
	a.Add("k")
	a.AddInt(-5)
	cmd := resp.BuildCommand(nil, 3).Arg("INCRBY").Args(&a).Cmd()
	if cmd.Err() != nil || countCommands(t, cmd.Bytes()) != 1 {
		t.Fatalf("builder with Args: %q %v", cmd.Bytes(), cmd.Err())
	}
}
