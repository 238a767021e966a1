package readers

import (
	"context"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/drain"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/replica"
	"github.com/echomq/echomq-go/resp"
)

// ended is a Handler whose reply and end come on channels.
type ended struct {
	reply chan string
	done  chan error
}

func (e *ended) Waits() bool               { return false }
func (e *ended) Reply(_ int, v resp.Value) { e.reply <- v.Text() }
func (e *ended) Done(err error)            { e.done <- err }

// A replica taken off the read set while a read is in flight on it
// takes no new read at once, but its connection stays open until the
// read has its reply, and is closed then, however many Sets come
// meanwhile. (Before, it was closed at the next Set: two topology reads
// in a row cut the read with conn: closed.) The read here is held by a
// DEBUG SLEEP sent before it on the same connection.
func TestRetiredMemberDrains(t *testing.T) {
	s, err := servertest.Start(servertest.Options{Debug: true})
	if err != nil {
		if servertest.InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Cleanup(func() { s.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := New(conn.Options{}, false, replica.Options{Route: replica.Random})
	defer p.Close()
	p.Set([]string{s.Addr})
	p.Probe(ctx, 10*time.Second)
	m := p.Pick(nil, nil)
	if m == nil {
		t.Fatal("the replica was not picked")
	}
	c := m.Client()
	if !m.Gate().Enter() {
		t.Fatal("a member of the set refused a read")
	}
	var b resp.Cmds
	b.Add("DEBUG", "SLEEP", "1")
	b.Add("ECHO", "the reply")
	w, err := conn.CmdsOfBatch(&b)
	if err != nil {
		t.Fatal(err)
	}
	h := &ended{reply: make(chan string, 2), done: make(chan error, 1)}
	if err := c.Send(ctx, w, drain.Track(h, m.Gate())); err != nil {
		t.Fatal(err)
	}
	p.Set(nil)
	p.Set(nil) // a second topology read: the read is still in flight
	if m.Gate().Enter() {
		t.Error("a member off the set took a new read")
	}
	if p.Pick(nil, nil) != nil {
		t.Error("a member off the set was picked")
	}
	select {
	case err := <-h.done:
		t.Fatalf("the read in flight ended before the server woke: %v", err)
	default:
	}
	if err := <-h.done; err != nil {
		t.Fatalf("the read in flight on the retired member: %v", err)
	}
	if got := [2]string{<-h.reply, <-h.reply}; got != [2]string{"OK", "the reply"} {
		t.Errorf("replies %q", got)
	}
	select {
	case <-c.Done():
	case <-ctx.Done():
		t.Fatal("the drained member's connection was not closed")
	}
	if _, err := wire.Do(ctx, c, "PING"); err == nil {
		t.Error("the drained member's connection still answers")
	}
}
