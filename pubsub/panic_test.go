package pubsub_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pubsub"
	"github.com/echomq/echomq-go/resp"
)

// records keeps the "func" attribute of each record logged to it.
type records struct {
	mu    sync.Mutex
	funcs []string
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "func" {
			r.mu.Lock()
			r.funcs = append(r.funcs, a.Value.String())
			r.mu.Unlock()
		}
		return true
	})
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

func (r *records) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.funcs...)
}

// A subscription's hooks run on its reader goroutine (AfterCommand) and
// on the callers' (BeforeCommand): a panic in either is recovered. A
// BeforeCommand's panic refuses its command (nothing is subscribed, the
// error is the *conn.PanicError); an AfterCommand's is logged (the
// command ran: the subscription follows the server). Messages go on
// arriving either way.
func TestHookPanicSubscription(t *testing.T) {
	for _, proto := range []int{3, 2} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			ctx := testCtx(t)
			logs := &records{}
			h := conn.Hook{
				BeforeCommand: func(ctx context.Context, cmd conn.CommandInfo, raw conn.RawCommand) context.Context {
					if strings.Contains(string(raw.Bytes()), "before-boom") {
						panic("before")
					}
					return ctx
				},
				AfterCommand: func(_ context.Context, cmd conn.CommandInfo, v resp.Value, _ time.Duration, err error) {
					if cmd.Name == "SUBSCRIBE" && err == nil {
						panic(errors.New("after"))
					}
				},
			}
			sub := newSub(t, pubsub.Options{Options: conn.Options{Protocol: proto, Hooks: []conn.Hook{h}, Logger: slog.New(logs)}})
			err := sub.Subscribe(ctx, "before-boom")
			var pe *conn.PanicError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, "BeforeCommand", pe.Func)

			require.NoError(t, sub.Subscribe(ctx, "ch"))
			require.Equal(t, []string{"AfterCommand"}, logs.got())
			pub := newClient(t, srv.Addr)
			for i := range 3 {
				n, err := pubsub.Publish(ctx, pub, "ch", fmt.Sprint(i))
				require.NoError(t, err)
				require.EqualValues(t, 1, n, "subscribed to ch only, not to before-boom")
				m := receive(t, sub)
				require.Equal(t, "ch", m.Channel)
				require.Equal(t, fmt.Sprint(i), string(m.Payload))
			}
			n, err := pubsub.Publish(ctx, pub, "before-boom", "x")
			require.NoError(t, err)
			require.Zero(t, n)
		})
	}
}

// A pubsub dial error names the address once (the dialer's error says
// "dial tcp <addr>" itself).
func TestDialErrorMessage(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	_, err = pubsub.New(testCtx(t), pubsub.Options{Options: conn.Options{Addr: addr, DialTimeout: time.Second}})
	require.Error(t, err)
	require.Equal(t, 1, strings.Count(err.Error(), "dial tcp"), "%v", err)
	require.Equal(t, 1, strings.Count(err.Error(), addr), "%v", err)
	require.True(t, strings.HasPrefix(err.Error(), "pubsub: "), "%v", err)
}
