package kv_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/kv"
)

// TestNaNNeverSent: a NaN score or increment is refused with ErrInvalid
// before anything is sent (a hook counts what is), as a NaN score bound
// already was, and a ZADD of several members with one NaN adds none.
// Before, ZAdd sent "NaN" for the server to refuse, and ZIncrBy,
// IncrByFloat and HIncrByFloat returned package cmds' error, not
// ErrInvalid.
func TestNaNNeverSent(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	var sent atomic.Int64
	hook := conn.Hook{BeforeCommand: func(ctx context.Context, _ conn.CommandInfo, _ conn.RawCommand) context.Context {
		sent.Add(1)
		return ctx
	}}
	ctx := testCtx(t)
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr, Hooks: []conn.Hook{hook}})
	require.NoError(t, err)
	defer cl.Close()
	nan := math.NaN()
	for name, call := range map[string]func() error{
		"ZAdd": func() error {
			_, err := kv.ZAdd(ctx, cl, "z", kv.Z{Member: "a", Score: 1}, kv.Z{Member: "b", Score: nan})
			return err
		},
		"ZIncrBy":      func() error { _, err := kv.ZIncrBy(ctx, cl, "z", nan, "a"); return err },
		"IncrByFloat":  func() error { _, err := kv.IncrByFloat(ctx, cl, "f", nan); return err },
		"HIncrByFloat": func() error { _, err := kv.HIncrByFloat(ctx, cl, "h", "f", nan); return err },
		"ZRangeByScore": func() error {
			_, err := kv.ZRangeByScore(ctx, cl, "z", kv.ScoreRange{Min: nan, Max: 1})
			return err
		},
	} {
		if err := call(); !errors.Is(err, kv.ErrInvalid) {
			t.Errorf("%s with NaN: %v, want ErrInvalid", name, err)
		}
	}
	require.Zero(t, sent.Load(), "commands sent")
	n, err := kv.ZCard(ctx, cl, "z")
	require.NoError(t, err)
	require.Zero(t, n, "members added")
	// Infinities are numbers the server takes.
	_, err = kv.ZAdd(ctx, cl, "z", kv.Z{Member: "top", Score: math.Inf(1)})
	require.NoError(t, err)
	f, ok, err := kv.ZScore(ctx, cl, "z", "top")
	require.NoError(t, err)
	require.True(t, ok && math.IsInf(f, 1), "ZSCORE top = %v, %t", f, ok)
}

// TestNoTTLRoundTrip: the NoTTL that TTL returns for a key that never
// expires can be given back: SetWith with it sets no expiry (it was
// ErrInvalid, "a negative TTL"), and Expire with it is ErrInvalid with
// nothing sent, where it removed the key (PEXPIRE 0).
func TestNoTTLRoundTrip(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	ctx := testCtx(t)
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr})
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, kv.Set(ctx, cl, "forever", "v"))
	ttl, ok, err := kv.TTL(ctx, cl, "forever")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, kv.NoTTL, ttl)

	set, err := kv.SetWith(ctx, cl, "copy", "v", kv.SetOptions{TTL: ttl})
	require.NoError(t, err)
	require.True(t, set)
	got, ok, err := kv.TTL(ctx, cl, "copy")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, kv.NoTTL, got)

	_, err = kv.Expire(ctx, cl, "copy", ttl)
	require.ErrorIs(t, err, kv.ErrInvalid)
	n, err := kv.Exists(ctx, cl, "copy")
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "Expire with NoTTL removed the key")

	_, err = kv.SetWith(ctx, cl, "copy", "v", kv.SetOptions{TTL: -2 * time.Second})
	require.ErrorIs(t, err, kv.ErrInvalid, "other negative TTLs stay invalid")
}

// TestBlockForeverBLPop: BLPop and BRPop take BlockForever as they take
// 0 (sent as 0, waiting for ever), where they refused it as a negative
// timeout; any other negative timeout is still ErrInvalid, nothing sent.
func TestBlockForeverBLPop(t *testing.T) {
	servertest.Need(t, srv)
	srv.Flush(t)
	var mu sync.Mutex
	var sent []string
	hook := conn.Hook{BeforeCommand: func(ctx context.Context, _ conn.CommandInfo, raw conn.RawCommand) context.Context {
		mu.Lock()
		sent = append(sent, string(raw.Bytes()))
		mu.Unlock()
		return ctx
	}}
	ctx := testCtx(t)
	cl, err := conn.NewClient(ctx, conn.Options{Addr: srv.Addr, Hooks: []conn.Hook{hook}})
	require.NoError(t, err)
	defer cl.Close()
	_, err = kv.RPush(ctx, cl, "l", "a", "b")
	require.NoError(t, err)
	key, val, ok, err := kv.BLPop(ctx, cl, kv.BlockForever, "l")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "l", key)
	require.Equal(t, "a", val)
	_, val, ok, err = kv.BRPop(ctx, cl, kv.BlockForever, "l")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "b", val)
	_, _, _, err = kv.BLPop(ctx, cl, -2, "l")
	require.ErrorIs(t, err, kv.ErrInvalid)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{
		"*4\r\n$5\r\nRPUSH\r\n$1\r\nl\r\n$1\r\na\r\n$1\r\nb\r\n",
		"*3\r\n$5\r\nBLPOP\r\n$1\r\nl\r\n$1\r\n0\r\n",
		"*3\r\n$5\r\nBRPOP\r\n$1\r\nl\r\n$1\r\n0\r\n",
	}, sent)
}
