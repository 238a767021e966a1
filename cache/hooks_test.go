package cache_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cache"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// seen records what a Hook is shown: "+NAME" at BeforeCommand (with the
// command's arguments) and "-NAME" at AfterCommand, and the pipelines.
type seen struct {
	mu  sync.Mutex
	got []string
}

func (s *seen) add(e string) {
	s.mu.Lock()
	s.got = append(s.got, e)
	s.mu.Unlock()
}

func (s *seen) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.got
	s.got = nil
	return g
}

func (s *seen) hook() conn.Hook {
	return conn.Hook{
		BeforeCommand: func(ctx context.Context, cmd conn.CommandInfo, raw conn.RawCommand) context.Context {
			s.add("+" + cmd.Name)
			return ctx
		},
		AfterCommand: func(_ context.Context, cmd conn.CommandInfo, v resp.Value, _ time.Duration, err error) {
			text := v.Text()
			if v.Type == resp.Integer {
				text = fmt.Sprint(v.Int)
			}
			s.add(fmt.Sprintf("-%s %s %v", cmd.Name, text, err))
		},
		BeforePipeline: func(ctx context.Context, p conn.PipelineInfo) context.Context {
			s.add(fmt.Sprintf("pipeline of %d", len(p.Commands)))
			return ctx
		},
	}
}

// Hooks see each command the caller sent through the Cache, once, with
// its own reply, and nothing of the Cache's housekeeping: not CLIENT
// TRACKING, nor the PTTL read beside each miss (nor OptIn's CLIENT
// CACHING), nor the PING after a write, the health check's PINGs or
// Sync's. A hit sends nothing and is not seen. Every mode, both
// protocols.
func TestHooksSeeOnlyTheCallersCommands(t *testing.T) {
	for _, mode := range []cache.Mode{cache.Default, cache.OptIn, cache.Broadcast} {
		protocols(t, func(t *testing.T, proto int) {
			t.Run(mode.String(), func(t *testing.T) {
				ctx := testCtx(t)
				rec := &seen{}
				o := cache.Options{Options: conn.Options{Protocol: proto, Hooks: []conn.Hook{rec.hook()}},
					Mode: mode, HealthInterval: 5 * time.Millisecond}
				if mode == cache.Broadcast {
					o.Prefixes = []string{"hk:"}
				}
				c := newCache(t, o)
				must(t, srv, "SET", "hk:a", "1")
				require.NoError(t, c.Sync(ctx)) // its invalidation (Broadcast) is in
				require.Empty(t, rec.take(), "dialing and Sync show nothing (CLIENT TRACKING, PING are the Cache's)")

				v, ok, err := c.Get(ctx, "hk:a", time.Minute) // a miss
				require.NoError(t, err)
				require.True(t, ok)
				require.Equal(t, "1", string(v))
				require.Equal(t, []string{"+GET", "-GET 1 <nil>"}, rec.take())
				_, _, err = c.Get(ctx, "hk:a", time.Minute) // a hit
				require.NoError(t, err)
				require.Empty(t, rec.take())

				_, err = c.Do(ctx, "SET", "hk:a", "2")
				require.NoError(t, err)
				require.Equal(t, []string{"+SET", "-SET OK <nil>"}, rec.take())
				require.NoError(t, c.Sync(ctx))

				err = c.DoCached(ctx, time.Minute, nil, "STRLEN", "hk:a")
				require.NoError(t, err)
				require.Equal(t, []string{"+STRLEN", "-STRLEN 1 <nil>"}, rec.take())

				// The health check runs every 5 ms; none of it is seen.
				checks := healthChecks(t, srv)
				waitFor(t, "three health checks", func() bool { return checks() >= 3 })
				for _, e := range rec.take() {
					require.False(t, strings.Contains(e, "PING"), "the hooks saw %s", e)
					t.Errorf("unexpected hook event %s", e)
				}
			})
		})
	}
}
