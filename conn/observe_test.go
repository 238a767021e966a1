package conn_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// observation is one call to an Observer.
type observation struct {
	end  bool
	cmd  conn.CommandInfo
	took time.Duration
	err  error
}

// recorder is an Observer that records every call, in order.
type recorder struct {
	mu  sync.Mutex
	log []observation
}

func (r *recorder) CommandStart(c conn.CommandInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, observation{cmd: c})
}

func (r *recorder) CommandEnd(c conn.CommandInfo, took time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, observation{end: true, cmd: c, took: took, err: err})
}

// len returns how many calls were recorded.
func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.log)
}

// take returns the calls so far and forgets them.
func (r *recorder) take() []observation {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.log
	r.log = nil
	return out
}

// names renders calls as "+NAME" (start) and "-NAME" (end).
func names(obs []observation) string {
	var b strings.Builder
	for _, o := range obs {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		if o.end {
			b.WriteByte('-')
		} else {
			b.WriteByte('+')
		}
		b.WriteString(o.cmd.Name)
		if o.cmd.Script != "" {
			b.WriteString("(" + o.cmd.Script + ")")
		}
	}
	return b.String()
}

// TestObserverReplies: each command starts, then ends with its reply:
// nil, or the server's error; a pipeline's commands start together and
// end in order.
func TestObserverReplies(t *testing.T) {
	rec := &recorder{}
	c := setup(t, conn.Options{Observer: rec})
	ctx := testCtx(t)
	rec.take() // nothing of the handshake is observed, but be sure

	_, err := c.Do(ctx, "set", "k", "v")
	require.NoError(t, err)
	_, err = c.Do(ctx, "HGET", "k", "f")
	require.ErrorContains(t, err, "WRONGTYPE")
	obs := rec.take()
	require.Equal(t, "+SET -SET +HGET -HGET", names(obs))
	require.NoError(t, obs[1].err)
	var se *resp.ServerError
	require.ErrorAs(t, obs[3].err, &se)
	require.True(t, se.HasCode("WRONGTYPE"))
	require.GreaterOrEqual(t, obs[3].took, time.Duration(0))

	var b pipeline.Batch
	b.Add("PING")
	b.Add("EVALSHA", strings.Repeat("ab", 20), "0")
	b.Add("GET", "k")
	require.NoError(t, b.Exec(ctx, c))
	obs = rec.take()
	sha := strings.Repeat("ab", 20)
	require.Equal(t, "+PING +EVALSHA("+sha+") +GET -PING -EVALSHA("+sha+") -GET", names(obs))
	require.ErrorAs(t, obs[4].err, &se)
	require.True(t, se.HasCode("NOSCRIPT"))
	require.NoError(t, obs[5].err)
	require.LessOrEqual(t, obs[3].took, obs[5].took, "replies end in order")
}

// TestObserverRefusedAndFaults: a command refused before sending, or one
// ended by the connection's end, still starts and ends once, with why.
func TestObserverRefusedAndFaults(t *testing.T) {
	rec := &recorder{}
	c := setup(t, conn.Options{Observer: rec})

	_, err := c.Do(testCtx(t), "SUBSCRIBE", "news")
	require.ErrorIs(t, err, conn.ErrCommandRefused)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Do(done, "PING")
	require.ErrorIs(t, err, context.Canceled)
	obs := rec.take()
	require.Equal(t, "+SUBSCRIBE -SUBSCRIBE +PING -PING", names(obs))
	require.ErrorIs(t, obs[1].err, conn.ErrCommandRefused)
	require.ErrorIs(t, obs[3].err, context.Canceled)

	// A blocking command in flight when the connection closes ends with
	// ErrClosed.
	errc := make(chan error, 1)
	go func() {
		_, err := c.Do(context.Background(), "BLPOP", "nothing", "0")
		errc <- err
	}()
	waitFor(t, "BLPOP to start", func() bool { return rec.len() > 0 })
	require.NoError(t, c.Close())
	require.ErrorIs(t, <-errc, conn.ErrClosed)
	obs = rec.take()
	require.Equal(t, "+BLPOP -BLPOP", names(obs))
	require.ErrorIs(t, obs[1].err, conn.ErrClosed)
}

// TestObserverClient: a Client passes its Observer to its connections,
// and reports what it refuses itself.
func TestObserverClient(t *testing.T) {
	needServer(t)
	rec := &recorder{}
	cl, err := conn.NewClient(testCtx(t), conn.Options{Addr: srv.Addr, Observer: rec})
	require.NoError(t, err)
	_, err = cl.Do(testCtx(t), "ECHO", "x")
	require.NoError(t, err)
	_, err = cl.Do(testCtx(t), "BLPOP", "nothing", "0.01") // on a dedicated connection
	require.NoError(t, err)
	require.NoError(t, cl.Close())
	_, err = cl.Do(testCtx(t), "PING")
	require.ErrorIs(t, err, conn.ErrClosed)
	obs := rec.take()
	require.Equal(t, "+ECHO -ECHO +BLPOP -BLPOP +PING -PING", names(obs))
	require.ErrorIs(t, obs[5].err, conn.ErrClosed)
}

// TestAllocsObserved: observing costs no allocation per command in
// steady state, names and SHAs being interned.
func TestAllocsObserved(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets are not measured under -race (sync.Pool drops items)")
	}
	c := setup(t, conn.Options{Observer: nopObserver{}})
	ctx := context.Background()
	ping := resp.Command(nil, "PING")
	run := func() {
		if err := c.DoFunc(ctx, ping, nil); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		run()
	}
	if n := testing.AllocsPerRun(1000, run); n != 0 {
		t.Errorf("observed DoFunc(PING) = %v allocs per call, want 0", n)
	}
}

type nopObserver struct{}

func (nopObserver) CommandStart(conn.CommandInfo)                     {}
func (nopObserver) CommandEnd(conn.CommandInfo, time.Duration, error) {}
