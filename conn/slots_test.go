package conn_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// slotHandler is a wire.Slotted Handler, as a batch's: its replies land
// in slots, which the connection may fill itself; it counts the replies
// that came through Reply instead.
type slotHandler struct {
	wire.SlottedMark
	slots   []resp.Value
	arena   resp.Arena
	give    bool // Slots gives the slots (else nil: every reply through Reply)
	waits   bool
	replied int
	done    chan error
}

func newSlotHandler(n int, give, waits bool) *slotHandler {
	return &slotHandler{slots: make([]resp.Value, n), give: give, waits: waits, done: make(chan error, 1)}
}

func (h *slotHandler) Reply(i int, v resp.Value) {
	h.replied++
	h.slots[i] = h.arena.Retain(v)
}
func (h *slotHandler) Done(err error) { h.done <- err }
func (h *slotHandler) Waits() bool    { return h.waits }
func (h *slotHandler) Slots() ([]resp.Value, *resp.Arena) {
	if !h.give {
		return nil, nil
	}
	return h.slots, &h.arena
}

var _ wire.Slotted = (*slotHandler)(nil)

// lookalike has Slotted's exported methods but not its mark: a Handler
// of a user's, which the connection must never bypass.
type lookalike struct{ h *slotHandler }

func (l lookalike) Reply(i int, v resp.Value)          { l.h.Reply(i, v) }
func (l lookalike) Done(err error)                     { l.h.Done(err) }
func (l lookalike) Waits() bool                        { return l.h.Waits() }
func (l lookalike) Slots() ([]resp.Value, *resp.Arena) { return l.h.Slots() }

// TestSlottedRepliesInOrder: a submission whose Handler gives slots
// (wire.Slotted, as a pipeline.Batch's) gets every reply in its slot, in
// order, the same as a command sent alone gets: scalars (simple strings,
// errors, integers, bulks, an empty bulk) and what only Reply takes
// (arrays, a null), mixed; and most of a run of scalars goes straight
// into the slots, not through Reply. With slots refused (nil, as an
// abandoned batch's) every reply comes through Reply. Whether the caller
// reads its replies itself (Waits) or the reader goroutine does. A
// Handler of a user's with the same methods, but not the module's mark
// (wire.SlottedMark), gets every reply through Reply.
func TestSlottedRepliesInOrder(t *testing.T) {
	c := setup(t, conn.Options{})
	ctx := testCtx(t)
	var cmds resp.Cmds
	var args [][]string
	add := func(a ...string) {
		cmds.Add(a...)
		args = append(args, a)
	}
	for i := range 100 {
		add("PING")
		add("SET", "slot:"+strconv.Itoa(i), strconv.Itoa(i))
		add("INCR", "slot:n")
		add("GET", "slot:"+strconv.Itoa(i))
		switch i % 10 {
		case 3:
			add("RPUSH", "slot:list", "a", "b")
			add("LRANGE", "slot:list", "0", "1")
		case 5:
			add("GET", "slot:missing")
			add("SET", "slot:empty", "")
			add("GET", "slot:empty")
		case 7:
			add("INCR", "slot:0-not-an-int") // an error reply after the first
			add("LPUSH", "slot:0", "x")      // WRONGTYPE
		}
	}
	// The replies each command gets alone, one at a time.
	srv.Flush(t)
	want := make([]resp.Value, len(args))
	for i, a := range args {
		v, err := c.Do(ctx, anys(a)...)
		if se, ok := err.(*resp.ServerError); ok {
			v, err = resp.Value{Type: resp.Error, Str: []byte(se.Msg)}, nil
		}
		require.NoError(t, err, "command %d %q", i, a)
		want[i] = v.Clone()
	}
	w, err := conn.CmdsOfBatch(&cmds)
	require.NoError(t, err)
	n := w.Len()
	for _, tc := range []struct {
		name             string
		give, waits, own bool
	}{
		{"slots/caller reads", true, true, true},
		{"slots/reader goroutine", true, false, true},
		{"no slots/caller reads", false, true, true},
		// A user's Handler with a Slots method of its own is not
		// Slotted: every reply goes through its Reply.
		{"lookalike", true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.Flush(t)
			h := newSlotHandler(n, tc.give, tc.waits)
			var send conn.Handler = h
			if !tc.own {
				send = lookalike{h}
			}
			require.NoError(t, c.Send(ctx, w, send))
			require.NoError(t, <-h.done)
			for i, a := range args {
				require.Equal(t, want[i].String(), h.slots[i].String(), "command %d %q", i, a)
				require.Equal(t, want[i].Type, h.slots[i].Type, "command %d %q", i, a)
			}
			if tc.give && tc.own {
				require.Less(t, h.replied, n/2, "replies through Reply, of %d, with slots given", n)
			} else {
				require.Equal(t, n, h.replied, "replies through Reply with no slots")
			}
		})
	}
}
