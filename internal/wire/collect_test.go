package wire

import (
	"context"
	"testing"

	"github.com/echomq/echomq-go/resp"
)

// heldSender holds every submission until released, then answers each
// command with its index in the submission, on its own goroutine, as a
// connection's reader goroutine would.
type heldSender struct {
	release chan struct{}
	done    chan struct{}
}

func (s *heldSender) Send(_ context.Context, cmds Cmds, h Handler) error {
	go func() {
		<-s.release
		for i := range cmds.Len() {
			h.Reply(i, resp.Value{Type: resp.Integer, Int: int64(i)})
		}
		h.Done(nil)
		s.done <- struct{}{}
	}()
	return nil
}

// Finding 3: after a round trip abandoned by its ctx, the next Exchange
// (a re-send of one call into slot 7, as dispatch.Batch does after
// NOSCRIPT) took fresh state sized for one reply, and the reader panicked
// with "index out of range [7] with length 1", taking the process down.
func TestCollectorAfterAbandon(t *testing.T) {
	s := &heldSender{release: make(chan struct{}), done: make(chan struct{}, 2)}
	var c Collector
	c.Begin(8)
	var cmds resp.Cmds
	for range 8 {
		cmds.Add("PING")
	}
	all, err := FromCmds(&cmds)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Exchange(ctx, s, all, nil); err != context.Canceled {
		t.Fatalf("abandoned Exchange = %v, want context.Canceled", err)
	}
	one, err := FromCmd(resp.Command(nil, "PING"))
	if err != nil {
		t.Fatal(err)
	}
	close(s.release) // the abandoned round trip's late replies arrive too
	if err := c.Exchange(context.Background(), s, one, []int{7}); err != nil {
		t.Fatal(err)
	}
	<-s.done
	<-s.done
	r := c.Replies()
	if len(r) != 8 || r[7].Type != resp.Integer || r[7].Int != 0 {
		t.Fatalf("after the re-send: %d slots, slot 7 = %v", len(r), r)
	}
	// A slot that Begin did not ready is refused before sending.
	if err := c.Exchange(context.Background(), s, one, []int{8}); err != errSlot {
		t.Fatalf("Exchange into slot 8 of 8 = %v, want errSlot", err)
	}
}

// slotSender fills the slots of a Slotted Handler itself when it gives
// them, as conn's bulk path does, and goes through Reply otherwise; it
// records which way each submission went.
type slotSender struct{ bulk []bool }

func (s *slotSender) Send(_ context.Context, cmds Cmds, h Handler) error {
	slots, a := h.(Slotted).Slots()
	s.bulk = append(s.bulk, slots != nil)
	for i := range cmds.Len() {
		v := resp.Value{Type: resp.BulkString, Str: []byte{'a' + byte(i)}}
		if slots != nil {
			slots[i] = a.Retain(v)
		} else {
			h.Reply(i, v)
		}
	}
	h.Done(nil)
	return nil
}

// TestCollectorSlots: the Collector's Handler gives its slots (and
// arena) to a Sender that fills them itself, and its replies are there
// after Exchange; when an index maps the replies to other slots it gives
// none, and the replies go through Reply to their slots.
func TestCollectorSlots(t *testing.T) {
	s := &slotSender{}
	var c Collector
	c.Begin(4)
	var cmds resp.Cmds
	for range 4 {
		cmds.Add("GET", "k")
	}
	all, err := FromCmds(&cmds)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Exchange(context.Background(), s, all, nil); err != nil {
		t.Fatal(err)
	}
	var pair resp.Cmds
	pair.Add("GET", "k")
	pair.Add("GET", "k")
	two, err := FromCmds(&pair)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Exchange(context.Background(), s, two, []int{3, 1}); err != nil {
		t.Fatal(err)
	}
	if len(s.bulk) != 2 || !s.bulk[0] || s.bulk[1] {
		t.Fatalf("slots given: %v, want [true false]", s.bulk)
	}
	got := ""
	for _, v := range c.Replies() {
		got += string(v.Str)
	}
	if got != "abca" { // the first round's a b c d, then a into 3 and b into 1
		t.Fatalf("replies %q, want %q", got, "abca")
	}
}
