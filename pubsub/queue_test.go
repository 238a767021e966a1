package pubsub

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/resp"
)

func never() bool { return false }

func noteWait(bool) {}

// Gaps keep their place between messages, merge when nothing came
// between them, and do not count against the bound; the ring grows for
// them past the bound.
func TestQueueGapsInOrder(t *testing.T) {
	ctx := context.Background()
	q := newQueue(2)
	stop := make(chan struct{})
	require.True(t, q.pushMessage(Message{Channel: "a"}, stop, never, noteWait))
	q.pushGap(&GapError{Losses: 1})
	q.pushGap(&GapError{Losses: 1, Cause: errors.New("second")})
	require.True(t, q.pushMessage(Message{Channel: "b"}, stop, never, noteWait))
	q.pushGap(&GapError{Losses: 1})
	q.pushGap(&GapError{Losses: 1})
	q.pushGap(&GapError{Losses: 1})
	require.Equal(t, 4, q.len())

	it, err := q.pop(ctx)
	require.NoError(t, err)
	require.Equal(t, "a", it.msg.Channel)
	it, _ = q.pop(ctx)
	require.Equal(t, 2, it.gap.Losses)
	require.EqualError(t, it.gap.Cause, "second")
	it, _ = q.pop(ctx)
	require.Equal(t, "b", it.msg.Channel)
	it, _ = q.pop(ctx)
	require.Equal(t, 3, it.gap.Losses)
	require.Contains(t, it.gap.Error(), "3 connections lost in a row")
}

// A full queue makes the producer wait (a stall) until a consumer takes
// a message; overflow lets it through; stop and close end the wait.
func TestQueueBackpressure(t *testing.T) {
	ctx := context.Background()
	q := newQueue(1)
	stop := make(chan struct{})
	require.True(t, q.pushMessage(Message{Channel: "1"}, stop, never, noteWait))
	pushed := make(chan bool, 1)
	waiting := make(chan bool, 2)
	go func() {
		pushed <- q.pushMessage(Message{Channel: "2"}, stop, never, func(w bool) { waiting <- w })
	}()
	require.True(t, <-waiting, "the producer waits")
	require.Empty(t, pushed)
	it, err := q.pop(ctx)
	require.NoError(t, err)
	require.Equal(t, "1", it.msg.Channel)
	require.False(t, <-waiting)
	require.True(t, <-pushed)
	require.EqualValues(t, 1, q.stalls.Load())

	// Overflow: a command waits for its reply.
	owing := true
	require.True(t, q.pushMessage(Message{Channel: "3"}, stop, func() bool { return owing }, noteWait))
	require.Equal(t, 2, q.len())

	go func() { pushed <- q.pushMessage(Message{}, stop, never, noteWait) }()
	close(stop)
	require.False(t, <-pushed, "stop ends the wait")
	q.close()
	_, err = q.pop(ctx)
	require.ErrorIs(t, err, ErrClosed)
	require.False(t, q.pushMessage(Message{}, make(chan struct{}), never, noteWait))
	q.pushGap(&GapError{}) // after close: dropped, no panic
}

// pop honours ctx, and several consumers each get their own items.
func TestQueueConsumers(t *testing.T) {
	q := newQueue(8)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := q.pop(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	got := make(chan string, 4)
	for range 4 {
		go func() {
			it, err := q.pop(context.Background())
			if err != nil {
				got <- err.Error()
				return
			}
			got <- it.msg.Channel
		}()
	}
	stop := make(chan struct{})
	for _, c := range []string{"a", "b", "c"} {
		require.True(t, q.pushMessage(Message{Channel: c}, stop, never, noteWait))
	}
	seen := map[string]bool{}
	for range 3 {
		seen[<-got] = true
	}
	require.Equal(t, map[string]bool{"a": true, "b": true, "c": true}, seen)
	q.close()
	require.Equal(t, ErrClosed.Error(), <-got)
}

// classify tells messages, confirmations and replies apart under both
// protocols.
func TestClassify(t *testing.T) {
	bulk := func(s string) resp.Value { return resp.Value{Type: resp.BulkString, Str: []byte(s)} }
	arr := func(typ resp.Type, e ...resp.Value) resp.Value { return resp.Value{Type: typ, Elems: e} }
	n := resp.Value{Type: resp.Integer, Int: 1}
	for _, c := range []struct {
		name  string
		v     resp.Value
		proto int
		want  frame
		word  string
	}{
		{"RESP3 message", arr(resp.Push, bulk("message"), bulk("c"), bulk("p")), 3, frameMessage, ""},
		{"RESP3 pmessage", arr(resp.Push, bulk("pmessage"), bulk("c*"), bulk("c"), bulk("p")), 3, frameMessage, ""},
		{"RESP3 smessage", arr(resp.Push, bulk("smessage"), bulk("c"), bulk("p")), 3, frameMessage, ""},
		{"RESP3 subscribe", arr(resp.Push, bulk("subscribe"), bulk("c"), n), 3, frameConfirm, "subscribe"},
		{"RESP3 sunsubscribe", arr(resp.Push, bulk("sunsubscribe"), bulk("c"), n), 3, frameConfirm, "sunsubscribe"},
		{"RESP3 invalidate", arr(resp.Push, bulk("invalidate"), arr(resp.Array, bulk("k"))), 3, frameOther, ""},
		{"RESP3 empty push", arr(resp.Push), 3, frameOther, ""},
		{"RESP3 PONG", resp.Value{Type: resp.SimpleString, Str: []byte("PONG")}, 3, frameReply, ""},
		{"RESP3 array reply", arr(resp.Array, bulk("message"), bulk("c"), bulk("p")), 3, frameReply, ""},
		{"error", resp.Value{Type: resp.Error, Str: []byte("NOPERM")}, 2, frameReply, ""},
		{"RESP2 message", arr(resp.Array, bulk("message"), bulk("c"), bulk("p")), 2, frameMessage, ""},
		{"RESP2 pmessage", arr(resp.Array, bulk("pmessage"), bulk("c*"), bulk("c"), bulk("p")), 2, frameMessage, ""},
		{"RESP2 punsubscribe", arr(resp.Array, bulk("punsubscribe"), bulk("c*"), n), 2, frameConfirm, "punsubscribe"},
		{"RESP2 pong", arr(resp.Array, bulk("pong"), bulk("")), 2, frameReply, ""},
		{"RESP2 PONG", resp.Value{Type: resp.SimpleString, Str: []byte("PONG")}, 2, frameReply, ""},
		{"RESP2 other triple", arr(resp.Array, bulk("x"), bulk("y"), bulk("z")), 2, frameReply, ""},
	} {
		f, w := classify(c.v, c.proto)
		require.Equal(t, c.want, f, c.name)
		require.Equal(t, c.word, w, c.name)
	}
}
