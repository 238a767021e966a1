package kv_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/kv"
	"github.com/echomq/echomq-go/resp"
)

// isInvalid checks an argument error: nothing was sent.
func isInvalid(t *testing.T, err error) { require.ErrorIs(t, err, kv.ErrInvalid) }

// isWrongType checks the server's WRONGTYPE error, byte for byte.
func isWrongType(t *testing.T, err error) {
	var se *resp.ServerError
	require.True(t, errors.As(err, &se), "got %v", err)
	require.Equal(t, "WRONGTYPE Operation against a key holding the wrong kind of value", se.Msg)
}

// within reports whether key's TTL is at most ttl and more than
// ttl - 500 ms: what a TTL of ttl set just before reads as.
func within(ctx context.Context, s conn.Sender, key string, ttl time.Duration) bool {
	d, ok, err := kv.TTL(ctx, s, key)
	return err == nil && ok && d <= ttl && d > ttl-500*time.Millisecond
}

func TestStrings(t *testing.T) {
	runTable(t, []tcase{
		{name: "Get of a missing key", call: func(ctx context.Context, s conn.Sender) (any, error) {
			v, ok, err := kv.Get(ctx, s, "k")
			return pair{v, ok}, err
		}, want: pair{"", false}},
		{name: "Get of an empty value", setup: [][]string{{"SET", "k", ""}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			v, ok, err := kv.Get(ctx, s, "k")
			return pair{v, ok}, err
		}, want: pair{"", true}},
		{name: "Get of a hash", setup: [][]string{{"HSET", "k", "f", "v"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			_, _, err := kv.Get(ctx, s, "k")
			return nil, err
		}, err: isWrongType},
		{name: "GetBytes appends", setup: [][]string{{"SET", "k", "\x00bin\xff"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			b, ok, err := kv.GetBytes(ctx, s, "k", []byte("pre:"))
			return pair{string(b), ok}, err
		}, want: pair{"pre:\x00bin\xff", true}},
		{name: "GetBytes of a missing key", call: func(ctx context.Context, s conn.Sender) (any, error) {
			b, ok, err := kv.GetBytes(ctx, s, "k", []byte("pre:"))
			return pair{string(b), ok}, err
		}, want: pair{"pre:", false}},
		{name: "Set a string", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return nil, kv.Set(ctx, s, "k", "v")
		}, after: [][2]string{{"GET k", "v"}, {"TTL k", "-1"}}},
		{name: "Set bytes, ints, uints and floats", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return nil, errors.Join(
				kv.Set(ctx, s, "b", []byte{0, 1}), kv.Set(ctx, s, "i", -42), kv.Set(ctx, s, "i64", int64(math.MinInt64)),
				kv.Set(ctx, s, "u64", uint64(math.MaxUint64)), kv.Set(ctx, s, "u32", uint32(7)), kv.Set(ctx, s, "f", 0.1),
				kv.Set(ctx, s, "inf", math.Inf(-1)), kv.Set(ctx, s, "e", ""))
		}, after: [][2]string{
			{"GET b", "\x00\x01"}, {"GET i", "-42"}, {"GET i64", "-9223372036854775808"},
			{"GET u64", "18446744073709551615"}, {"GET u32", "7"}, {"GET f", "0.1"}, {"GET inf", "-inf"},
			{"STRLEN e", "0"},
		}},
		{name: "Set replaces the TTL", setup: [][]string{{"SET", "k", "old", "EX", "100"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return nil, kv.Set(ctx, s, "k", "new")
		}, after: [][2]string{{"GET k", "new"}, {"TTL k", "-1"}}},
		{name: "SetWith a TTL in seconds", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.SetWith(ctx, s, "k", "v", kv.SetOptions{TTL: 100 * time.Second})
		}, want: true, after: [][2]string{{"TTL k", "100"}}},
		{name: "SetWith a TTL in ms", call: func(ctx context.Context, s conn.Sender) (any, error) {
			set, err := kv.SetWith(ctx, s, "k", "v", kv.SetOptions{TTL: 100500 * time.Millisecond})
			return pair{set, within(ctx, s, "k", 100500*time.Millisecond)}, err
		}, want: pair{true, true}},
		{name: "SetWith NX on an existing key", setup: [][]string{{"SET", "k", "old"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.SetWith(ctx, s, "k", "new", kv.SetOptions{NX: true})
		}, want: false, after: [][2]string{{"GET k", "old"}}},
		{name: "SetWith XX on a missing key", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.SetWith(ctx, s, "k", "new", kv.SetOptions{XX: true})
		}, want: false, after: [][2]string{{"EXISTS k", "0"}}},
		{name: "SetWith KEEPTTL XX", setup: [][]string{{"SET", "k", "old", "EX", "100"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.SetWith(ctx, s, "k", 5, kv.SetOptions{KeepTTL: true, XX: true})
		}, want: true, after: [][2]string{{"GET k", "5"}, {"TTL k", "100"}}},
		{name: "SetWith NX and XX", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.SetWith(ctx, s, "k", "v", kv.SetOptions{NX: true, XX: true})
		}, err: isInvalid},
		{name: "SetWith a negative TTL", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.SetWith(ctx, s, "k", "v", kv.SetOptions{TTL: -time.Second})
		}, err: isInvalid, after: [][2]string{{"EXISTS k", "0"}}},
		{name: "SetGet returns the old value", setup: [][]string{{"SET", "k", "old"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			v, ok, err := kv.SetGet(ctx, s, "k", "new", kv.SetOptions{})
			return pair{v, ok}, err
		}, want: pair{"old", true}, after: [][2]string{{"GET k", "new"}}},
		{name: "SetGet of a missing key", call: func(ctx context.Context, s conn.Sender) (any, error) {
			v, ok, err := kv.SetGet(ctx, s, "k", []byte("new"), kv.SetOptions{TTL: time.Minute})
			return pair{v, ok}, err
		}, want: pair{"", false}, after: [][2]string{{"GET k", "new"}, {"TTL k", "60"}}},
		{name: "MGet skips missing keys", setup: [][]string{{"MSET", "a", "1", "c", ""}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.MGet(ctx, s, "a", "b", "c")
		}, want: map[string]string{"a": "1", "c": ""}},
		{name: "MGet of nothing", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.MGet(ctx, s)
		}, want: map[string]string{}},
		{name: "MSet", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return nil, kv.MSet(ctx, s, map[string]int{"a": 1, "b": 2})
		}, after: [][2]string{{"MGET a b", "1\n2"}}},
		{name: "Incr of a missing key", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.Incr(ctx, s, "n")
		}, want: int64(1)},
		{name: "IncrBy a negative", setup: [][]string{{"SET", "n", "10"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.IncrBy(ctx, s, "n", -15)
		}, want: int64(-5)},
		{name: "Incr of text", setup: [][]string{{"SET", "n", "x"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.Incr(ctx, s, "n")
		}, err: func(t *testing.T, err error) {
			require.EqualError(t, err, "ERR value is not an integer or out of range")
		}},
		{name: "Del counts", setup: [][]string{{"MSET", "a", "1", "b", "2"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.Del(ctx, s, "a", "b", "c")
		}, want: int64(2)},
		{name: "Del of nothing", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.Del(ctx, s)
		}, want: int64(0)},
		{name: "Exists counts repeats", setup: [][]string{{"SET", "a", "1"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.Exists(ctx, s, "a", "a", "b")
		}, want: int64(2)},
		{name: "Expire in seconds", setup: [][]string{{"SET", "k", "v"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.Expire(ctx, s, "k", time.Hour)
		}, want: true, after: [][2]string{{"TTL k", "3600"}}},
		{name: "Expire in ms", setup: [][]string{{"SET", "k", "v"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			set, err := kv.Expire(ctx, s, "k", 2500*time.Millisecond)
			return pair{set, within(ctx, s, "k", 2500*time.Millisecond)}, err
		}, want: pair{true, true}},
		{name: "Expire of a missing key", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.Expire(ctx, s, "k", time.Hour)
		}, want: false},
		{name: "Expire of zero removes", setup: [][]string{{"SET", "k", "v"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.Expire(ctx, s, "k", 0)
		}, want: true, after: [][2]string{{"EXISTS k", "0"}}},
		{name: "TTL of a missing key", call: func(ctx context.Context, s conn.Sender) (any, error) {
			d, ok, err := kv.TTL(ctx, s, "k")
			return pair{d, ok}, err
		}, want: pair{time.Duration(0), false}},
		{name: "TTL of a key that never expires", setup: [][]string{{"SET", "k", "v"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			d, ok, err := kv.TTL(ctx, s, "k")
			return pair{d, ok}, err
		}, want: pair{kv.NoTTL, true}},
		{name: "TTL to the ms", setup: [][]string{{"SET", "k", "v", "PX", "100000000"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			d, ok, err := kv.TTL(ctx, s, "k")
			// Time passes between the SET and the PTTL: round to minutes.
			return pair{d.Round(time.Minute), ok && d <= 100000*time.Second && d%time.Millisecond == 0}, err
		}, want: pair{(100000 * time.Second).Round(time.Minute), true}},
	})
}
