package kv_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/kv"
	"github.com/echomq/echomq-go/resp"
)

// fakeStore is a Sender written as a user would write one, with only the
// public conn API: it answers a few commands from a map and records them.
type fakeStore struct {
	mu   sync.Mutex
	m    map[string]string
	sent []string
}

func (f *fakeStore) sender() conn.Sender { return conn.SendFunc(f.send) }

func (f *fakeStore) send(_ context.Context, cmds conn.Cmds, h conn.Handler) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, args := range cmds.All() {
		words := make([]string, len(args))
		for j, a := range args {
			words[j] = string(a)
		}
		f.sent = append(f.sent, strings.Join(words, " "))
		h.Reply(i, f.answer(words))
	}
	h.Done(nil)
	return nil
}

func bulk(s string) resp.Value { return resp.Value{Type: resp.BulkString, Str: []byte(s)} }

func (f *fakeStore) answer(a []string) resp.Value {
	switch a[0] {
	case "GET":
		if v, ok := f.m[a[1]]; ok {
			return bulk(v)
		}
		return resp.Value{Type: resp.Null}
	case "SET":
		f.m[a[1]] = a[2]
		return resp.Value{Type: resp.SimpleString, Str: []byte("OK")}
	case "INCR", "INCRBY":
		if a[0] == "INCR" {
			a = append(a, "1")
		}
		n, err := strconv.ParseInt(f.m[a[1]], 10, 64)
		if _, ok := f.m[a[1]]; ok && err != nil {
			return resp.Value{Type: resp.Error, Str: []byte("ERR value is not an integer or out of range")}
		}
		d, _ := strconv.ParseInt(a[2], 10, 64)
		f.m[a[1]] = strconv.FormatInt(n+d, 10)
		return resp.Value{Type: resp.Integer, Int: n + d}
	case "DEL":
		var n int64
		for _, k := range a[1:] {
			if _, ok := f.m[k]; ok {
				delete(f.m, k)
				n++
			}
		}
		return resp.Value{Type: resp.Integer, Int: n}
	}
	return resp.Value{Type: resp.Error, Str: []byte("ERR unknown command '" + a[0] + "'")}
}

// TestKVOnFake: kv runs on a Sender implemented outside the module's
// internal packages, with its conventions intact (ok false for a missing
// key, numbers without strconv, server errors as *resp.ServerError).
func TestKVOnFake(t *testing.T) {
	ctx := context.Background()
	f := &fakeStore{m: map[string]string{}}
	s := f.sender()

	_, ok, err := kv.Get(ctx, s, "missing")
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, kv.Set(ctx, s, "n", 40))
	n, err := kv.IncrBy(ctx, s, "n", 2)
	require.NoError(t, err)
	require.EqualValues(t, 42, n)
	v, ok, err := kv.Get(ctx, s, "n")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "42", v)
	require.NoError(t, kv.Set(ctx, s, "word", "x"))
	_, err = kv.Incr(ctx, s, "word")
	var se *resp.ServerError
	require.ErrorAs(t, err, &se)
	require.Contains(t, se.Msg, "not an integer")
	d, err := kv.Del(ctx, s, "n", "word", "missing")
	require.NoError(t, err)
	require.EqualValues(t, 2, d)
	_, _, err = kv.HGet(ctx, s, "h", "f")
	require.ErrorAs(t, err, &se, "a command the fake does not know is its error reply")
	require.Equal(t, []string{
		"GET missing", "SET n 40", "INCRBY n 2", "GET n", "SET word x", "INCR word", "DEL n word missing", "HGET h f",
	}, f.sent)
}
