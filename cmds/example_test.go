package cmds_test

import (
	"fmt"
	"time"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/resp"
)

// A builder knows, before anything is sent, what its command is: its
// encoded form, its kind, its timeout and where its keys are.
func Example() {
	var b cmds.Builder

	set := b.Set("user:1", "Ada").Ex(90 * time.Second).Nx().Build()
	fmt.Printf("%q\n", set.Cmd().Bytes())
	fmt.Println(set, "| write:", set.Kind().Has(cmds.Write), "| key at", set.KeyPos(0))

	pop := b.Blpop([]string{"jobs:high", "jobs:low"}, 2500*time.Millisecond).Build()
	fmt.Println(pop, "| blocking for", pop.Timeout(), "| keys at", pop.AppendKeyPos(nil))

	read := b.Xread([]string{"events"}, "$").Block(time.Second).Count(10).Build()
	fmt.Println(read, "| blocking:", read.Kind().Has(cmds.Blocking), "| key", string(read.Key(0)), "at", read.KeyPos(0))

	// XADD needs an ID choice: AutoId ("*") or Id.
	bad := b.Xadd("events", cmds.FieldValue{Field: "type", Value: "signup"}).Build()
	fmt.Println(bad.Err())
	// Output:
	// "*6\r\n$3\r\nSET\r\n$6\r\nuser:1\r\n$3\r\nAda\r\n$2\r\nNX\r\n$2\r\nEX\r\n$2\r\n90\r\n"
	// SET user:1 Ada NX EX 90 | write: true | key at 1
	// BLPOP jobs:high jobs:low 2.5 | blocking for 2.5s | keys at [1 2]
	// XREAD COUNT 10 BLOCK 1000 STREAMS events $ | blocking: true | key events at 6
	// cmds: command built without a required argument: xadd: id-selector
}

// The decoders read the RESP2 and the RESP3 form of a reply as the same
// Go value: here ZRANGE … WITHSCORES, a flat array of text under RESP2,
// pairs with doubles under RESP3.
func ExampleScored() {
	resp2 := "*4\r\n$5\r\nalice\r\n$4\r\n30.5\r\n$3\r\nbob\r\n$3\r\ninf\r\n"
	resp3 := "*2\r\n*2\r\n$5\r\nalice\r\n,30.5\r\n*2\r\n$3\r\nbob\r\n,inf\r\n"
	for _, wire := range []string{resp2, resp3} {
		v, _, err := resp.Parse([]byte(wire), resp.Limits{})
		if err != nil {
			panic(err)
		}
		z, err := cmds.Scored(v)
		fmt.Println(z, err)
	}
	// A score that is not a number is an error, not 0.
	v, _, err := resp.Parse([]byte("$6\r\nthirty\r\n"), resp.Limits{})
	if err != nil {
		panic(err)
	}
	_, err = cmds.Float(v)
	fmt.Println(err)
	// Output:
	// [{alice 30.5} {bob +Inf}] <nil>
	// [{alice 30.5} {bob +Inf}] <nil>
	// resp: not a number: "thirty"
}
