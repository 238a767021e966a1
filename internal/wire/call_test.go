package wire

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/echomq/echomq-go/resp"
)

// bufSender answers each command, on its own goroutine as a connection's
// reader does, with a bulk string viewing a buffer that it overwrites as
// soon as Reply returns (as the reader's next read would), then Done.
// Before Reply it waits for go; log records what happened, in order.
type bufSender struct {
	reply string
	go_   chan struct{}
	mu    sync.Mutex
	log   []string
}

func (s *bufSender) note(e string) { s.mu.Lock(); s.log = append(s.log, e); s.mu.Unlock() }

func (s *bufSender) Send(_ context.Context, _ Cmds, h Handler) error {
	go func() {
		<-s.go_
		buf := []byte(s.reply)
		h.Reply(0, resp.Value{Type: resp.BulkString, Str: buf})
		s.note("reply returned")
		for i := range buf {
			buf[i] = 'x'
		}
		h.Done(nil)
	}()
	return nil
}

// TestInReplyDecodesAsRead: with a ctx marked by InReply, DoFuncInReply's fn runs
// in Reply, before Reply returns, on the reply as read (the buffer is
// overwritten right after), and DoFuncInReply returns what fn returned; without
// the mark fn runs after Done, on the call's copy.
func TestInReplyDecodesAsRead(t *testing.T) {
	for _, marked := range []bool{true, false} {
		s := &bufSender{reply: "settled", go_: make(chan struct{})}
		close(s.go_)
		ctx := context.Background()
		if marked {
			ctx = InReply(ctx)
		}
		var got string
		errFn := errors.New("fn's error")
		err := DoFuncInReply(ctx, s, resp.Command(nil, "GET", "k"), func(v resp.Value) error {
			got = string(v.Str)
			s.note("fn")
			return errFn
		})
		if !errors.Is(err, errFn) || got != "settled" {
			t.Fatalf("marked %v: DoFunc = %v, fn saw %q", marked, err, got)
		}
		s.mu.Lock()
		first := s.log[0]
		s.mu.Unlock()
		if want := map[bool]string{true: "fn", false: "reply returned"}[marked]; first != want {
			t.Fatalf("marked %v: first %q, want %q (log %q)", marked, first, want, s.log)
		}
	}
}

// TestInReplyServerError: a server error reply is DoFunc's error, fn not
// called, as without the mark.
func TestInReplyServerError(t *testing.T) {
	h := make(chan Handler, 1)
	s := SendFunc(func(_ context.Context, _ Cmds, hd Handler) error { h <- hd; return nil })
	done := make(chan error)
	called := false
	go func() {
		done <- DoFuncInReply(InReply(context.Background()), s, resp.Command(nil, "GET", "k"), func(resp.Value) error {
			called = true
			return nil
		})
	}()
	hd := <-h
	hd.Reply(0, resp.Value{Type: resp.Error, Str: []byte("ERR no")})
	hd.Done(nil)
	err := <-done
	var se *resp.ServerError
	if !errors.As(err, &se) || se.Msg != "ERR no" || called {
		t.Fatalf("err %v, fn called %v", err, called)
	}
}

// TestInReplyAbandon: a caller whose ctx ends before the reply gives up
// at once, and fn never runs on the late reply; one whose ctx ends while
// fn runs waits for fn and gets its result.
func TestInReplyAbandon(t *testing.T) {
	h := make(chan Handler, 1)
	s := SendFunc(func(_ context.Context, _ Cmds, hd Handler) error { h <- hd; return nil })

	ctx, cancel := context.WithCancel(context.Background())
	called := make(chan struct{}, 1)
	done := make(chan error)
	go func() {
		done <- DoFuncInReply(InReply(ctx), s, resp.Command(nil, "GET", "k"), func(resp.Value) error {
			called <- struct{}{}
			return nil
		})
	}()
	hd := <-h
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned: %v", err)
	}
	hd.Reply(0, resp.Value{Type: resp.BulkString, Str: []byte("late")})
	hd.Done(nil)
	select {
	case <-called:
		t.Fatal("fn ran on the reply of an abandoned call")
	default:
	}

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	inFn, leave := make(chan struct{}), make(chan struct{})
	go func() {
		done <- DoFuncInReply(InReply(ctx), s, resp.Command(nil, "GET", "k"), func(resp.Value) error {
			close(inFn)
			<-leave
			return errors.New("decoded")
		})
	}()
	hd = <-h
	go func() {
		hd.Reply(0, resp.Value{Type: resp.BulkString, Str: []byte("v")})
		hd.Done(nil)
	}()
	<-inFn
	cancel()
	select {
	case err := <-done:
		t.Fatalf("returned while fn ran: %v", err)
	default:
	}
	close(leave)
	if err := <-done; err == nil || err.Error() != "decoded" {
		t.Fatalf("ctx ended during fn: %v, want fn's result", err)
	}
}

// TestInReplyPanic: fn's panic, caught in Reply, is raised again on the
// caller's goroutine; the reader's goroutine goes on.
func TestInReplyPanic(t *testing.T) {
	s := &bufSender{reply: "v", go_: make(chan struct{})}
	close(s.go_)
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want boom", r)
		}
	}()
	DoFuncInReply(InReply(context.Background()), s, resp.Command(nil, "GET", "k"), func(resp.Value) error { panic("boom") })
	t.Fatal("no panic")
}

// SendFunc is a Sender made of its Send.
type SendFunc func(ctx context.Context, cmds Cmds, h Handler) error

func (f SendFunc) Send(ctx context.Context, cmds Cmds, h Handler) error { return f(ctx, cmds, h) }
