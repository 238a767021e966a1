package kv_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/kv"
)

func TestHashes(t *testing.T) {
	runTable(t, []tcase{
		{name: "HSet a new field", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.HSet(ctx, s, "h", "f", 42)
		}, want: true, after: [][2]string{{"HGET h f", "42"}}},
		{name: "HSet an existing field", setup: [][]string{{"HSET", "h", "f", "1"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.HSet(ctx, s, "h", "f", []byte("2"))
		}, want: false, after: [][2]string{{"HGET h f", "2"}}},
		{name: "HSetMap counts new fields", setup: [][]string{{"HSET", "h", "a", "0"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.HSetMap(ctx, s, "h", map[string]string{"a": "1", "b": "2", "c": ""})
		}, want: int64(2), after: [][2]string{{"HLEN h", "3"}}},
		{name: "HGet", setup: [][]string{{"HSET", "h", "f", "v"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			v, ok, err := kv.HGet(ctx, s, "h", "f")
			return pair{v, ok}, err
		}, want: pair{"v", true}},
		{name: "HGet of a missing field", setup: [][]string{{"HSET", "h", "f", "v"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			v, ok, err := kv.HGet(ctx, s, "h", "g")
			return pair{v, ok}, err
		}, want: pair{"", false}},
		{name: "HGet of a missing key", call: func(ctx context.Context, s conn.Sender) (any, error) {
			v, ok, err := kv.HGet(ctx, s, "h", "f")
			return pair{v, ok}, err
		}, want: pair{"", false}},
		{name: "HGet of a string", setup: [][]string{{"SET", "h", "v"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			_, _, err := kv.HGet(ctx, s, "h", "f")
			return nil, err
		}, err: isWrongType},
		{name: "HGetAll is a map", setup: [][]string{{"HSET", "h", "a", "1", "b", "", "c", "3"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.HGetAll(ctx, s, "h")
		}, want: map[string]string{"a": "1", "b": "", "c": "3"}},
		{name: "HGetAll of a missing key", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.HGetAll(ctx, s, "h")
		}, want: map[string]string{}},
		{name: "HDel", setup: [][]string{{"HSET", "h", "a", "1", "b", "2"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.HDel(ctx, s, "h", "a", "z")
		}, want: int64(1), after: [][2]string{{"HKEYS h", "b"}}},
		{name: "HIncrBy", setup: [][]string{{"HSET", "h", "n", "5"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.HIncrBy(ctx, s, "h", "n", 10)
		}, want: int64(15)},
	})
}

func TestLists(t *testing.T) {
	runTable(t, []tcase{
		{name: "LPush puts the last first", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.LPush(ctx, s, "l", "a", "b", "c")
		}, want: int64(3), after: [][2]string{{"LRANGE l 0 -1", "c\nb\na"}}},
		{name: "RPush ints", setup: [][]string{{"RPUSH", "l", "x"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.RPush(ctx, s, "l", 1, 2)
		}, want: int64(3), after: [][2]string{{"LRANGE l 0 -1", "x\n1\n2"}}},
		{name: "RPush of nothing", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.RPush[string](ctx, s, "l")
		}, err: isInvalid},
		{name: "LPop", setup: [][]string{{"RPUSH", "l", "a", "b"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			v, ok, err := kv.LPop(ctx, s, "l")
			return pair{v, ok}, err
		}, want: pair{"a", true}},
		{name: "RPop", setup: [][]string{{"RPUSH", "l", "a", "b"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			v, ok, err := kv.RPop(ctx, s, "l")
			return pair{v, ok}, err
		}, want: pair{"b", true}},
		{name: "LPop of a missing list", call: func(ctx context.Context, s conn.Sender) (any, error) {
			v, ok, err := kv.LPop(ctx, s, "l")
			return pair{v, ok}, err
		}, want: pair{"", false}},
		{name: "LRange", setup: [][]string{{"RPUSH", "l", "a", "b", "c", "d"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.LRange(ctx, s, "l", 1, -2)
		}, want: []string{"b", "c"}},
		{name: "LRange of a missing list", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.LRange(ctx, s, "l", 0, -1)
		}, want: []string{}},
		{name: "BLPop takes the first non-empty list", setup: [][]string{{"RPUSH", "l2", "x", "y"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			k, v, ok, err := kv.BLPop(ctx, s, time.Second, "l1", "l2")
			return []any{k, v, ok}, err
		}, want: []any{"l2", "x", true}},
		{name: "BLPop times out", call: func(ctx context.Context, s conn.Sender) (any, error) {
			k, v, ok, err := kv.BLPop(ctx, s, 50*time.Millisecond, "l1")
			return []any{k, v, ok}, err
		}, want: []any{"", "", false}},
		{name: "BLPop of no keys", call: func(ctx context.Context, s conn.Sender) (any, error) {
			_, _, _, err := kv.BLPop(ctx, s, time.Second)
			return nil, err
		}, err: isInvalid},
	})
}

func TestSets(t *testing.T) {
	runTable(t, []tcase{
		{name: "SAdd counts new members", setup: [][]string{{"SADD", "s", "a"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.SAdd(ctx, s, "s", "a", "b", "c", "c")
		}, want: int64(2), after: [][2]string{{"SCARD s", "3"}}},
		{name: "SRem", setup: [][]string{{"SADD", "s", "1", "2"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.SRem(ctx, s, "s", 1, 3)
		}, want: int64(1), after: [][2]string{{"SMEMBERS s", "2"}}},
		{name: "SMembers", setup: [][]string{{"SADD", "s", "b", "a"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			m, err := kv.SMembers(ctx, s, "s")
			return len(m) == 2 && (m[0] == "a" && m[1] == "b" || m[0] == "b" && m[1] == "a"), err
		}, want: true},
		{name: "SMembers of a missing set", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.SMembers(ctx, s, "s")
		}, want: []string{}},
		{name: "SIsMember", setup: [][]string{{"SADD", "s", "a"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			in, err := kv.SIsMember(ctx, s, "s", "a")
			out, err2 := kv.SIsMember(ctx, s, "s", []byte("b"))
			if err == nil {
				err = err2
			}
			return []bool{in, out}, err
		}, want: []bool{true, false}},
	})
}

func TestSortedSets(t *testing.T) {
	runTable(t, []tcase{
		{name: "ZAdd", setup: [][]string{{"ZADD", "z", "1", "a"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.ZAdd(ctx, s, "z", kv.Z{Member: "a", Score: 5}, kv.Z{Member: "b", Score: -0.5}, kv.Z{Member: "c", Score: math.Inf(1)})
		}, want: int64(2), after: [][2]string{{"ZRANGE z 0 -1 WITHSCORES", "b\n-0.5\na\n5\nc\ninf"}}},
		{name: "ZRange", setup: [][]string{{"ZADD", "z", "2", "b", "1", "a", "3", "c"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.ZRange(ctx, s, "z", 0, 1)
		}, want: []string{"a", "b"}},
		{name: "ZRangeWithScores", setup: [][]string{{"ZADD", "z", "2.5", "b", "1", "a", "-inf", "c"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.ZRangeWithScores(ctx, s, "z", 0, -1)
		}, want: []kv.Z{{Member: "c", Score: math.Inf(-1)}, {Member: "a", Score: 1}, {Member: "b", Score: 2.5}}},
		{name: "ZRangeWithScores of a missing set", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.ZRangeWithScores(ctx, s, "z", 0, -1)
		}, want: []kv.Z{}},
		{name: "ZRem", setup: [][]string{{"ZADD", "z", "1", "a", "2", "b"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.ZRem(ctx, s, "z", "a", "x")
		}, want: int64(1)},
		{name: "ZScore", setup: [][]string{{"ZADD", "z", "0.1", "a"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			f, ok, err := kv.ZScore(ctx, s, "z", "a")
			return pair{f, ok}, err
		}, want: pair{0.1, true}},
		{name: "ZScore of a missing member", setup: [][]string{{"ZADD", "z", "1", "a"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			f, ok, err := kv.ZScore(ctx, s, "z", "b")
			return pair{f, ok}, err
		}, want: pair{0.0, false}},
		{name: "ZPopMin", setup: [][]string{{"ZADD", "z", "3", "c", "1", "a", "2", "b"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.ZPopMin(ctx, s, "z", 2)
		}, want: []kv.Z{{Member: "a", Score: 1}, {Member: "b", Score: 2}}, after: [][2]string{{"ZRANGE z 0 -1", "c"}}},
		{name: "ZPopMin of one", setup: [][]string{{"ZADD", "z", "3", "c"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.ZPopMin(ctx, s, "z", 1)
		}, want: []kv.Z{{Member: "c", Score: 3}}},
		{name: "ZPopMin of a missing set", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.ZPopMin(ctx, s, "z", 1)
		}, want: []kv.Z{}},
		{name: "ZPopMin of zero", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.ZPopMin(ctx, s, "z", 0)
		}, err: isInvalid},
	})
}
