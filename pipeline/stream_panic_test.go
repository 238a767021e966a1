package pipeline_test

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// A Stream's ReplyFunc panicking on the reader goroutine, on a Conn and
// a Client, does not kill the process: the stream fails (Wait returns
// an error matching ErrStreamFailed and a *conn.PanicError naming
// "Stream.ReplyFunc"), every command still gets exactly one outcome in
// order (the panicking one and the rest of its chunk: the PanicError),
// 8 concurrent callers each get their own ECHO, and a PING works after.
// Before, the panic killed the test binary.
func TestStreamReplyFuncPanic(t *testing.T) {
	for _, target := range []string{"Conn", "Client"} {
		t.Run(target, func(t *testing.T) {
			ctx := testCtx(t)
			var s conn.Sender = setup(t, conn.Options{})
			if target == "Client" {
				cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr})
				require.NoError(t, err)
				t.Cleanup(func() { cl.Close() })
				s = cl
			}
			const n, boom = 40, 13
			var mu sync.Mutex
			var seqs []int64
			var perr []error
			st := pipeline.NewStream(s, func(seq int64, v resp.Value, err error) {
				mu.Lock()
				seqs = append(seqs, seq)
				perr = append(perr, err)
				mu.Unlock()
				if seq == boom && err == nil {
					panic("boom " + v.Text())
				}
			}, pipeline.StreamOptions{Chunk: 8, Window: 16})
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for g := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 5 {
						val := fmt.Sprint(g, "-", i)
						v, err := s.Do(ctx, "ECHO", val)
						if err == nil && v.Text() != val {
							err = fmt.Errorf("ECHO %s = %q", val, v.Text())
						}
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			var addErr error
			for i := range n {
				if addErr = st.Add(ctx, "ECHO", strconv.Itoa(i)); addErr != nil {
					break
				}
			}
			werr := st.Wait(ctx)
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			require.ErrorIs(t, werr, pipeline.ErrStreamFailed)
			var pe *conn.PanicError
			require.ErrorAs(t, werr, &pe)
			require.Equal(t, "Stream.ReplyFunc", pe.Func)
			require.Equal(t, "boom "+strconv.Itoa(boom), pe.Value)
			mu.Lock()
			defer mu.Unlock()
			for i, seq := range seqs {
				require.EqualValues(t, i, seq, "one outcome per command, in order")
			}
			require.GreaterOrEqual(t, len(seqs), 16, "the chunk of the panic ended")
			require.NoError(t, perr[boom])
			for i := boom + 1; i < 16; i++ {
				require.True(t, errors.As(perr[i], new(*conn.PanicError)), "seq %d: %v", i, perr[i])
			}
			v, err := s.Do(ctx, "PING")
			require.NoError(t, err)
			require.Equal(t, "PONG", v.Text())
		})
	}
}
