package kv_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/kv"
	"github.com/echomq/echomq-go/resp"
)

// A fake Sender for tests, as the README's "Hooks and tracing" has it:
// it sees each command's arguments and answers OK.
func Example_fakeSender() {
	ctx := context.Background()
	fake := conn.SendFunc(func(ctx context.Context, cmds conn.Cmds, h conn.Handler) error {
		for i, args := range cmds.All() { // each command's arguments
			fmt.Printf("%s\n", bytes.Join(args, []byte(" ")))
			h.Reply(i, resp.Value{Type: resp.SimpleString, Str: []byte("OK")})
		}
		h.Done(nil)
		return nil
	})
	err := kv.Set(ctx, fake, "k", 42)
	fmt.Println(err)
	// Output:
	// SET k 42
	// <nil>
}
