package kv_test

import (
	"context"
	"testing"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// echoSender answers every command at once, in memory, with one fixed
// reply: what is left of a call is the client's own work (encoding,
// the call's plumbing, reading the reply), so a helper's overhead over
// the raw call shows in ns/op.
type echoSender struct{ reply resp.Value }

func (e *echoSender) Send(_ context.Context, _ wire.Cmds, h wire.Handler) error {
	h.Reply(0, e.reply)
	h.Done(nil)
	return nil
}

func (e *echoSender) Do(ctx context.Context, args ...any) (resp.Value, error) {
	return wire.Do(ctx, e, args...)
}

func (e *echoSender) DoFunc(ctx context.Context, cmd resp.Cmd, fn func(resp.Value) error) error {
	return wire.DoFunc(ctx, e, cmd, fn)
}

func (e *echoSender) DoInt(ctx context.Context, cmd resp.Cmd) (int64, error) {
	return wire.DoInt(ctx, e, cmd)
}

// BenchmarkOverhead: GET and SET through the helpers and through the raw
// calls, with no network: the helpers' own cost.
//
//	go test -run '^$' -bench Overhead -count 10 ./kv/ | tee o.txt; benchstat -col /via o.txt
func BenchmarkOverhead(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		cmd   string
		reply resp.Value
	}{
		{"GET", resp.Value{Type: resp.BulkString, Str: value64}},
		{"SET", resp.Value{Type: resp.SimpleString, Str: []byte("OK")}},
	} {
		var s conn.Sender = &echoSender{c.reply}
		for _, via := range []string{"helper", "dofunc", "call"} {
			b.Run(c.cmd+"/via="+via, func(b *testing.B) {
				f := ops[c.cmd][via]
				buf := make([]byte, 0, 256)
				b.ReportAllocs()
				for b.Loop() {
					if err := f(ctx, s, buf); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
