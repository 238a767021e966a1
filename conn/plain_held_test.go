package conn_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
	"github.com/echomq/echomq-go/submit"
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
// given by DoFunc) cannot be edited (no exported fields); one put
// together from its bytes by hand goes through submit.New and is read by
// a connection without hooks: a SUBSCRIBE joined to a PING is refused, a
// count that is not the commands in the bytes, or bytes that are not
// commands, are ErrMalformed (from New), with nothing sent. Once, when a
// Cmds had exported fields, CmdsOf's submission of a plain name was
// marked Plain and kept the mark through the edits, so the connection
// sent it unread: the SUBSCRIBE put the shared connection in subscriber
// mode, N 2 for one PING made it take the next caller's reply.
func TestHeldCmdsAreRead(t *testing.T) {
	ctx := testCtx(t)
	sub, err := conn.CmdsOf(resp.Command(nil, "SUBSCRIBE", "ch"))
	require.NoError(t, err)
	// The edits, of a submission of one PING.
	join := func(w conn.Cmds) (conn.Cmds, error) {
		return submit.New(append(append([]byte(nil), w.Bytes()...), sub.Bytes()...), w.Len()+sub.Len())
	}
	miscount := func(w conn.Cmds) (conn.Cmds, error) { return submit.New(w.Bytes(), 2) }
	garble := func(conn.Cmds) (conn.Cmds, error) { return submit.New([]byte("SUBSCRIBE ch\r\n"), 1) }
	// send sends the edit of w, or returns the error New refused it with.
	send := func(ctx context.Context, s conn.Sender, w conn.Cmds, edit func(conn.Cmds) (conn.Cmds, error), h conn.Handler) error {
		w, err := edit(w)
		if err != nil {
			return err
		}
		return s.Send(ctx, w, h)
	}
	for _, tc := range []struct {
		name string
		edit func(conn.Cmds) (conn.Cmds, error)
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
				err = send(ctx, s.s, w, tc.edit, newDoneHandler())
				require.ErrorIs(t, err, tc.want, "%s: nothing must be sent", s.name)
				got, err := echo(ctx, s.s, "after")
				require.NoError(t, err, s.name)
				require.Equal(t, "after", got, s.name)
			}
			// A wrapper given DoFunc's submission, edited the same way.
			wrapper := conn.SendFunc(func(ctx context.Context, w conn.Cmds, h conn.Handler) error {
				return send(ctx, c, w, tc.edit, h)
			})
			err = wrapper.DoFunc(ctx, resp.Command(nil, "PING"), nil)
			require.ErrorIs(t, err, tc.want, "wrapper: nothing must be sent")
			got, err := echo(ctx, c, "after")
			require.NoError(t, err, "wrapper")
			require.Equal(t, "after", got, "wrapper")
		})
	}
}
