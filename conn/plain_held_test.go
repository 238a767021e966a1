package conn_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// doneHandler is a Handler that records how its submission ended.
type doneHandler struct {
	replies int
	done    chan error
}

func newDoneHandler() *doneHandler { return &doneHandler{done: make(chan error, 1)} }

func (h *doneHandler) Reply(int, resp.Value) { h.replies++ }
func (h *doneHandler) Done(err error)        { h.done <- err }
func (h *doneHandler) Waits() bool           { return false }

// TestHeldCmdsAreRead: a Cmds a user holds (CmdsOf's, or one a wrapper is
// given by DoFunc) and edits as conn.Cmds says a submission is joined (B
// appended, N added, Facts left nil) is read by a connection without
// hooks, as any Cmds put together by hand: a SUBSCRIBE joined to a PING
// is refused, a count that is not the commands in B, or bytes that are
// not commands, are ErrMalformed, with nothing sent. CmdsOf's submission
// of a plain name was marked Plain and kept the mark through the edits,
// so the connection sent it unread: the SUBSCRIBE put the shared
// connection in subscriber mode, N 2 for one PING made it take the next
// caller's reply.
func TestHeldCmdsAreRead(t *testing.T) {
	ctx := testCtx(t)
	sub, err := conn.CmdsOf(resp.Command(nil, "SUBSCRIBE", "ch"))
	require.NoError(t, err)
	// The edits, of a submission of one PING.
	join := func(w *conn.Cmds) {
		w.B = append(append([]byte(nil), w.B...), sub.B...)
		w.N += sub.N
	}
	miscount := func(w *conn.Cmds) { w.N = 2 }
	garble := func(w *conn.Cmds) { w.B = []byte("SUBSCRIBE ch\r\n") }
	for _, tc := range []struct {
		name string
		edit func(*conn.Cmds)
		want error
	}{
		{"joined SUBSCRIBE", join, conn.ErrCommandRefused},
		{"N over the commands", miscount, conn.ErrMalformed},
		{"bytes not commands", garble, conn.ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, conn.Options{})
			cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr})
			require.NoError(t, err)
			defer cl.Close()
			for _, s := range []struct {
				name string
				s    conn.Sender
			}{{"Conn", c}, {"Client", cl}} {
				w, err := conn.CmdsOf(resp.Command(nil, "PING"))
				require.NoError(t, err)
				tc.edit(&w)
				err = s.s.Send(ctx, w, newDoneHandler())
				require.ErrorIs(t, err, tc.want, "%s: nothing must be sent", s.name)
				got, err := echo(ctx, s.s, "after")
				require.NoError(t, err, s.name)
				require.Equal(t, "after", got, s.name)
			}
			// A wrapper given DoFunc's submission, edited the same way
			// (its Facts, if any, left nil, as conn.Cmds allows).
			wrapper := conn.SendFunc(func(ctx context.Context, w conn.Cmds, h conn.Handler) error {
				tc.edit(&w)
				w.Facts = nil
				return c.Send(ctx, w, h)
			})
			err = wrapper.DoFunc(ctx, resp.Command(nil, "PING"), nil)
			require.ErrorIs(t, err, tc.want, "wrapper: nothing must be sent")
			got, err := echo(ctx, c, "after")
			require.NoError(t, err, "wrapper")
			require.Equal(t, "after", got, "wrapper")
		})
	}
}
