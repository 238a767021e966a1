package kv_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/kv"
	"github.com/echomq/echomq-go/resp"
)

// The helpers issue 16 found missing, on RESP2 and RESP3, Conn and Client.

func TestStringsAdded(t *testing.T) {
	runTable(t, []tcase{
		{name: "Decr of a missing key", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.Decr(ctx, s, "n")
		}, want: int64(-1)},
		{name: "DecrBy", setup: [][]string{{"SET", "n", "10"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.DecrBy(ctx, s, "n", 4)
		}, want: int64(6)},
		{name: "IncrByFloat", setup: [][]string{{"SET", "f", "10.5"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.IncrByFloat(ctx, s, "f", 0.25)
		}, want: 10.75, after: [][2]string{{"GET f", "10.75"}}},
		{name: "IncrByFloat of text", setup: [][]string{{"SET", "f", "x"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			_, err := kv.IncrByFloat(ctx, s, "f", 1)
			return nil, err
		}, err: isServerError("ERR value is not a valid float")},
		{name: "GetDel", setup: [][]string{{"SET", "k", "v"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			v, ok, err := kv.GetDel(ctx, s, "k")
			return pair{v, ok}, err
		}, want: pair{"v", true}, after: [][2]string{{"EXISTS k", "0"}}},
		{name: "GetDel of a missing key", call: func(ctx context.Context, s conn.Sender) (any, error) {
			v, ok, err := kv.GetDel(ctx, s, "k")
			return pair{v, ok}, err
		}, want: pair{"", false}},
		{name: "Persist", setup: [][]string{{"SET", "k", "v", "EX", "100"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.Persist(ctx, s, "k")
		}, want: true, after: [][2]string{{"TTL k", "-1"}}},
		{name: "Persist of a key without TTL", setup: [][]string{{"SET", "k", "v"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.Persist(ctx, s, "k")
		}, want: false},
	})
}

func TestHashesAdded(t *testing.T) {
	runTable(t, []tcase{
		{name: "HSetFields of mixed types", setup: [][]string{{"HSET", "h", "name", "x"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.HSetFields(ctx, s, "h", kv.F("name", "Ada"), kv.F("visits", 3), kv.F("score", 4.5), kv.F("raw", []byte{0, 1}), kv.F("big", uint64(math.MaxUint64)))
		}, want: int64(4), after: [][2]string{{"HMGET h name visits score big", "Ada\n3\n4.5\n18446744073709551615"}, {"HSTRLEN h raw", "2"}}},
		{name: "HLen", setup: [][]string{{"HSET", "h", "a", "1", "b", "2"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.HLen(ctx, s, "h")
		}, want: int64(2)},
		{name: "HExists", setup: [][]string{{"HSET", "h", "a", "1"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			a, err := kv.HExists(ctx, s, "h", "a")
			if err != nil {
				return nil, err
			}
			b, err := kv.HExists(ctx, s, "h", "b")
			return [2]bool{a, b}, err
		}, want: [2]bool{true, false}},
		{name: "HMGet keeps the fields that exist", setup: [][]string{{"HSET", "h", "a", "1", "c", ""}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.HMGet(ctx, s, "h", "a", "b", "c")
		}, want: map[string]string{"a": "1", "c": ""}},
		{name: "HMGet of a missing key", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.HMGet(ctx, s, "h", "a")
		}, want: map[string]string{}},
		{name: "HMGet of a string", setup: [][]string{{"SET", "h", "v"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.HMGet(ctx, s, "h", "a")
		}, err: isWrongType},
		{name: "HIncrByFloat", setup: [][]string{{"HSET", "h", "f", "1"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.HIncrByFloat(ctx, s, "h", "f", -2.5)
		}, want: -1.5},
	})
}

func TestListsSetsAdded(t *testing.T) {
	runTable(t, []tcase{
		{name: "LLen", setup: [][]string{{"RPUSH", "l", "a", "b"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.LLen(ctx, s, "l")
		}, want: int64(2)},
		{name: "BRPop pops the last", setup: [][]string{{"RPUSH", "l2", "a", "b"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			k, v, ok, err := kv.BRPop(ctx, s, time.Second, "l1", "l2")
			return []any{k, v, ok}, err
		}, want: []any{"l2", "b", true}, after: [][2]string{{"LRANGE l2 0 -1", "a"}}},
		{name: "BRPop times out", call: func(ctx context.Context, s conn.Sender) (any, error) {
			k, v, ok, err := kv.BRPop(ctx, s, 20*time.Millisecond, "l")
			return []any{k, v, ok}, err
		}, want: []any{"", "", false}},
		{name: "BRPop with a negative timeout", call: func(ctx context.Context, s conn.Sender) (any, error) {
			_, _, _, err := kv.BRPop(ctx, s, -time.Second, "l")
			return nil, err
		}, err: isInvalid},
		{name: "SCard", setup: [][]string{{"SADD", "s", "a", "b", "c"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.SCard(ctx, s, "s")
		}, want: int64(3)},
		{name: "SPop", setup: [][]string{{"SADD", "s", "only"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			v, ok, err := kv.SPop(ctx, s, "s")
			return pair{v, ok}, err
		}, want: pair{"only", true}, after: [][2]string{{"EXISTS s", "0"}}},
		{name: "SPop of a missing set", call: func(ctx context.Context, s conn.Sender) (any, error) {
			v, ok, err := kv.SPop(ctx, s, "s")
			return pair{v, ok}, err
		}, want: pair{"", false}},
		{name: "SPopN takes them all", setup: [][]string{{"SADD", "s", "a", "b"}}, call: func(ctx context.Context, s conn.Sender) (any, error) {
			v, err := kv.SPopN(ctx, s, "s", 5)
			return len(v), err
		}, want: 2, after: [][2]string{{"SCARD s", "0"}}},
	})
}

func TestSortedSetsAdded(t *testing.T) {
	board := [][]string{{"ZADD", "z", "30.5", "ada", "12", "bob", "12", "cy", "-inf", "dee"}}
	runTable(t, []tcase{
		{name: "ZCard", setup: board, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.ZCard(ctx, s, "z")
		}, want: int64(4)},
		{name: "ZIncrBy", setup: board, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.ZIncrBy(ctx, s, "z", 0.25, "ada")
		}, want: 30.75},
		{name: "ZRank and ZRevRank", setup: board, call: func(ctx context.Context, s conn.Sender) (any, error) {
			r, ok, err := kv.ZRank(ctx, s, "z", "ada")
			if err != nil || !ok {
				return nil, err
			}
			rr, ok, err := kv.ZRevRank(ctx, s, "z", "ada")
			return []any{r, rr, ok}, err
		}, want: []any{int64(3), int64(0), true}},
		{name: "ZRank of a missing member", setup: board, call: func(ctx context.Context, s conn.Sender) (any, error) {
			r, ok, err := kv.ZRank(ctx, s, "z", "eve")
			return pair{r, ok}, err
		}, want: pair{int64(0), false}},
		{name: "ZRevRange", setup: board, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.ZRevRange(ctx, s, "z", 0, 1)
		}, want: []string{"ada", "cy"}},
		{name: "ZRevRangeWithScores", setup: board, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.ZRevRangeWithScores(ctx, s, "z", 0, -1)
		}, want: []kv.Z{{Member: "ada", Score: 30.5}, {Member: "cy", Score: 12}, {Member: "bob", Score: 12}, {Member: "dee", Score: math.Inf(-1)}}},
		{name: "ZRangeByScore, exclusive", setup: board, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.ZRangeByScore(ctx, s, "z", kv.ScoreRange{Min: 12, MinExclusive: true, Max: math.Inf(1)})
		}, want: []kv.Z{{Member: "ada", Score: 30.5}}},
		{name: "ZRangeByScore with a limit", setup: board, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.ZRangeByScore(ctx, s, "z", kv.ScoreRange{Min: math.Inf(-1), Max: 30.5, Offset: 1, Count: 2})
		}, want: []kv.Z{{Member: "bob", Score: 12}, {Member: "cy", Score: 12}}},
		{name: "ZRevRangeByScore, Offset alone", setup: board, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.ZRevRangeByScore(ctx, s, "z", kv.ScoreRange{Min: 0, Max: 100, Offset: 1})
		}, want: []kv.Z{{Member: "cy", Score: 12}, {Member: "bob", Score: 12}}},
		{name: "ZRangeByScore of NaN", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.ZRangeByScore(ctx, s, "z", kv.ScoreRange{Min: math.NaN()})
		}, err: isInvalid},
	})
}

func TestStreamsAdded(t *testing.T) {
	entries := [][]string{
		{"XADD", "st", "1-1", "a", "1"}, {"XADD", "st", "1-2", "b", "2"}, {"XADD", "st", "2-0", "c", "3"},
	}
	group := append(entries, []string{"XGROUP", "CREATE", "st", "g", "0"}, []string{"XREADGROUP", "GROUP", "g", "c1", "COUNT", "2", "STREAMS", "st", ">"})
	e := func(id, f, v string) kv.XEntry {
		return kv.XEntry{ID: id, Fields: []cmds.FieldValue{{Field: f, Value: v}}}
	}
	runTable(t, []tcase{
		{name: "XRange", setup: entries, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XRange(ctx, s, "st", "(1-1", "+", 0)
		}, want: []kv.XEntry{e("1-2", "b", "2"), e("2-0", "c", "3")}},
		{name: "XRevRange with a count", setup: entries, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XRevRange(ctx, s, "st", "+", "-", 1)
		}, want: []kv.XEntry{e("2-0", "c", "3")}},
		{name: "XRange of a missing stream", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XRange(ctx, s, "st", "-", "+", 0)
		}, want: []kv.XEntry{}},
		{name: "XRead", setup: entries, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XRead(ctx, s, kv.XReadArgs{Streams: []string{"st", "none"}, IDs: []string{"1-2", "0"}})
		}, want: []kv.XStream{{Key: "st", Entries: []kv.XEntry{e("2-0", "c", "3")}}}},
		{name: "XRead blocks, then times out", setup: entries, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XRead(ctx, s, kv.XReadArgs{Streams: []string{"st"}, IDs: []string{"$"}, Block: 20 * time.Millisecond})
		}, want: []kv.XStream(nil)},
		{name: "XRead with an id missing", call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XRead(ctx, s, kv.XReadArgs{Streams: []string{"st"}})
		}, err: isInvalid},
		{name: "XDel", setup: entries, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XDel(ctx, s, "st", "1-1", "9-9")
		}, want: int64(1), after: [][2]string{{"XLEN st", "2"}}},
		{name: "XPending", setup: group, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XPending(ctx, s, "st", "g")
		}, want: kv.XPendingSummary{Count: 2, Lowest: "1-1", Highest: "1-2", Consumers: []kv.XPendingConsumer{{Name: "c1", Count: 2}}}},
		{name: "XPending of none", setup: append(entries, []string{"XGROUP", "CREATE", "st", "g", "0"}), call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XPending(ctx, s, "st", "g")
		}, want: kv.XPendingSummary{}},
		{name: "XPendingRange", setup: group, call: func(ctx context.Context, s conn.Sender) (any, error) {
			p, err := kv.XPendingRange(ctx, s, kv.XPendingArgs{Stream: "st", Group: "g", Count: 10, Consumer: "c1"})
			var ids []string
			for _, x := range p {
				if x.Consumer != "c1" || x.Deliveries != 1 {
					return p, nil
				}
				ids = append(ids, x.ID)
			}
			return ids, err
		}, want: []string{"1-1", "1-2"}},
		{name: "XPendingRange idle for an hour", setup: group, call: func(ctx context.Context, s conn.Sender) (any, error) {
			return kv.XPendingRange(ctx, s, kv.XPendingArgs{Stream: "st", Group: "g", Count: 10, MinIdle: time.Hour})
		}, want: []kv.XPendingEntry{}},
	})
}

// isServerError checks the server's error text, byte for byte.
func isServerError(msg string) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		var se *resp.ServerError
		require.ErrorAs(t, err, &se)
		require.Equal(t, msg, se.Msg)
	}
}
