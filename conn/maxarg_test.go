package conn_test

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
)

// TestArgOverMaxArgRefused: an argument longer than the server's
// proto-max-bulk-len made the server answer "Protocol error: invalid
// bulk length" and close the connection, failing every call in flight
// on it (their effects unknown). Options.MaxArg (the server's limit: 512
// MiB by default, 1 MiB here, the server started with the same) refuses
// such a command before anything is sent, with an *ArgTooLargeError
// that names it, matching ErrCommandRefused, whichever way it is sent;
// the callers beside it, sending all along on the same Client, see
// nothing; an argument of exactly MaxArg is sent.
func TestArgOverMaxArgRefused(t *testing.T) {
	require.Equal(t, 512<<20, conn.MaxArgOf(conn.Options{}), "the default is the servers' proto-max-bulk-len")
	require.Equal(t, -1, conn.MaxArgOf(conn.Options{MaxArg: -1}))
	const limit = 1 << 20
	s := startServer(t, servertest.Options{Args: []string{"--proto-max-bulk-len", "1048576"}})
	ctx := testCtx(t)
	cl, err := conn.NewClient(ctx, conn.Options{Addr: s.Addr, MaxArg: limit})
	require.NoError(t, err)
	defer cl.Close()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	counts := make([]int, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := cl.Do(ctx, "INCR", "bystander"); err != nil {
					errs <- err
					return
				}
				counts[g]++
			}
		}()
	}
	over := strings.Repeat("y", limit+1)
	check := func(what string, err error) {
		t.Helper()
		var ae *conn.ArgTooLargeError
		require.ErrorAs(t, err, &ae, what)
		require.ErrorIs(t, err, conn.ErrCommandRefused, what)
		require.Equal(t, "SET", ae.Command, what)
		require.Equal(t, limit+1, ae.Size, what)
		require.Equal(t, limit, ae.Max, what)
		require.Equal(t, "refused", conn.ErrorKind(err), what)
	}
	_, err = cl.Do(ctx, "SET", "huge", over)
	check("Do", err)
	var b pipeline.Batch
	b.Add("SET", "before", "1")
	b.Add("SET", "huge", over)
	b.Add("SET", "after", "1")
	check("Batch", b.Exec(ctx, cl))
	var derr error
	require.NoError(t, cl.Dedicated(ctx, func(d *conn.Conn) error {
		_, derr = d.Do(ctx, "SET", "huge", over)
		return nil
	}))
	check("Dedicated", derr)

	_, err = cl.Do(ctx, "SET", "exact", over[:limit])
	require.NoError(t, err, "an argument of exactly MaxArg")
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a bystander failed: %v", err)
	}
	for _, k := range []string{"huge", "before", "after"} {
		v, err := cl.Do(ctx, "EXISTS", k)
		require.NoError(t, err)
		require.Zero(t, v.Int, "%s was set: a refused batch sent something", k)
	}
	v, err := cl.Do(ctx, "STRLEN", "exact")
	require.NoError(t, err)
	require.EqualValues(t, limit, v.Int)
	n, err := cl.Do(ctx, "GET", "bystander")
	require.NoError(t, err)
	total := 0
	for _, c := range counts {
		total += c
	}
	require.Equal(t, strconv.Itoa(total), n.Text(), "every bystander INCR ran once")
	require.False(t, errors.Is(cl.Err(), conn.ErrBroken))
}
