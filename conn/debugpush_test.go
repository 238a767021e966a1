package conn_test

import (
	"strconv"
	"sync"
	"testing"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// DEBUG PROTOCOL push answers with a push frame and the command's own
// reply, in an order that depends on the server: Redis 7.0 sends the push
// first, Valkey 8 the reply first. Either way, with other calls in flight
// on the connection, the reply goes to its caller and the push to OnPush,
// each exactly once.
func TestDebugProtocolPushEitherOrder(t *testing.T) {
	var log pushLog
	c := setup(t, conn.Options{OnPush: log.add})
	ctx := testCtx(t)
	const rounds, echoers = 20, 4
	var wg sync.WaitGroup
	for g := range echoers {
		wg.Go(func() {
			for i := range rounds {
				want := "bg" + strconv.Itoa(g) + "-" + strconv.Itoa(i)
				if got, err := echo(ctx, c, want); err != nil || got != want {
					t.Errorf("background ECHO %q = %q, %v", want, got, err)
					return
				}
			}
		})
	}
	for i := range rounds {
		v, err := c.Do(ctx, "DEBUG", "PROTOCOL", "push")
		if err != nil || v.Type != resp.BulkString || v.Text() != "Some real reply following the push reply" {
			t.Fatalf("round %d: DEBUG PROTOCOL push = %v, %v; want its own reply", i, v, err)
		}
	}
	wg.Wait()
	// A push sent after its command's reply is read before the reply to
	// a later command: after this PING, every push has been handed over.
	if v := mustDo(t, c, "PING"); v.Text() != "PONG" {
		t.Fatalf("PING = %v", v)
	}
	frames := log.snapshot()
	if len(frames) != rounds {
		t.Fatalf("OnPush got %d pushes, want %d", len(frames), rounds)
	}
	for _, f := range frames {
		if f.Type != resp.Push || f.Len() != 2 || f.Elems[0].Text() != "server-cpu-usage" ||
			f.Elems[1].Type != resp.Integer || f.Elems[1].Int != 42 {
			t.Fatalf("push = %v, want [server-cpu-usage 42]", f)
		}
	}
}
