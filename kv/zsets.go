package kv

import (
	"context"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// Z is a member of a sorted set and its score.
type Z struct {
	Member string
	Score  float64
}

// ZAdd adds members with their scores to the sorted set at key, or
// updates their scores (ZADD), and returns how many were new.
func ZAdd(ctx context.Context, s conn.Sender, key string, members ...Z) (int64, error) {
	if len(members) == 0 {
		return 0, nil
	}
	buf, b := command(2+2*len(members), "ZADD")
	b = b.Arg(key)
	for _, m := range members {
		b = argFloat(b, m.Score).Arg(m.Member)
	}
	return runInt(ctx, s, buf, b)
}

// ZRange returns the members ranked start to stop (inclusive; negative
// counts from the end) of the sorted set at key, lowest score first
// (ZRANGE).
func ZRange(ctx context.Context, s conn.Sender, key string, start, stop int64) ([]string, error) {
	buf, b := command(4, "ZRANGE")
	var out []string
	err := run(ctx, s, buf, b.Arg(key).ArgInt(start).ArgInt(stop), func(v resp.Value) (err error) {
		out, err = list(v)
		return err
	})
	return out, err
}

// ZRangeWithScores is ZRange with each member's score (ZRANGE …
// WITHSCORES), the same under RESP2 and RESP3.
func ZRangeWithScores(ctx context.Context, s conn.Sender, key string, start, stop int64) ([]Z, error) {
	buf, b := command(5, "ZRANGE")
	var out []Z
	err := run(ctx, s, buf, b.Arg(key).ArgInt(start).ArgInt(stop).Arg("WITHSCORES"), func(v resp.Value) (err error) {
		out, err = scored(v)
		return err
	})
	return out, err
}

// ZRem removes members from the sorted set at key (ZREM) and returns
// how many were in it.
func ZRem(ctx context.Context, s conn.Sender, key string, members ...string) (int64, error) {
	if len(members) == 0 {
		return 0, nil
	}
	buf, b := command(2+len(members), "ZREM")
	b = b.Arg(key)
	for _, m := range members {
		b = b.Arg(m)
	}
	return runInt(ctx, s, buf, b)
}

// ZScore returns the score of member in the sorted set at key (ZSCORE);
// ok is false when the member or the key does not exist.
func ZScore(ctx context.Context, s conn.Sender, key, member string) (f float64, ok bool, err error) {
	buf, b := command(3, "ZSCORE")
	err = run(ctx, s, buf, b.Arg(key).Arg(member), func(v resp.Value) (err error) {
		if v.IsNull() {
			return nil
		}
		f, err = score(v)
		ok = err == nil
		return err
	})
	return f, ok, err
}

// ZPopMin removes and returns up to count members with the lowest scores
// from the sorted set at key (ZPOPMIN), lowest first; an empty or
// missing set gives none.
func ZPopMin(ctx context.Context, s conn.Sender, key string, count int64) ([]Z, error) {
	if count <= 0 {
		return nil, invalid("ZPOPMIN of a count below 1")
	}
	buf, b := command(3, "ZPOPMIN")
	var out []Z
	err := run(ctx, s, buf, b.Arg(key).ArgInt(count), func(v resp.Value) (err error) {
		out, err = scored(v)
		return err
	})
	return out, err
}
