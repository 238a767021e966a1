package kv

import (
	"context"
	"math"
	"strconv"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
)

// Z is a member of a sorted set and its score (package cmds' Z).
type Z = cmds.Z

// ZAdd adds members with their scores to the sorted set at key, or
// updates their scores (ZADD), and returns how many were new. A NaN
// score is ErrInvalid, and none of the members is added.
func ZAdd(ctx context.Context, s conn.Sender, key string, members ...Z) (int64, error) {
	if len(members) == 0 {
		return 0, nil
	}
	for _, m := range members {
		if math.IsNaN(m.Score) {
			return 0, invalid("ZADD with a NaN score")
		}
	}
	b := builder()
	for _, m := range members {
		b.sms = append(b.sms, cmds.ScoreMember{Score: m.Score, Member: m.Member})
	}
	return call(ctx, s, b, b.Zadd(key, b.sms...).Build(), cmds.Int)
}

// ZRange returns the members ranked start to stop (inclusive; negative
// counts from the end) of the sorted set at key, lowest score first
// (ZRANGE).
func ZRange(ctx context.Context, s conn.Sender, key string, start, stop int64) ([]string, error) {
	b := builder()
	return call(ctx, s, b, zrange(b, key, start, stop).Build(), cmds.Strings)
}

// ZRangeWithScores is ZRange with each member's score (ZRANGE …
// WITHSCORES), the same under RESP2 and RESP3.
func ZRangeWithScores(ctx context.Context, s conn.Sender, key string, start, stop int64) ([]Z, error) {
	b := builder()
	return call(ctx, s, b, zrange(b, key, start, stop).Withscores().Build(), cmds.Scored)
}

// ZRem removes members from the sorted set at key (ZREM) and returns
// how many were in it.
func ZRem(ctx context.Context, s conn.Sender, key string, members ...string) (int64, error) {
	if len(members) == 0 {
		return 0, nil
	}
	b := builder()
	return call(ctx, s, b, b.Zrem(key, members...).Build(), cmds.Int)
}

// ZScore returns the score of member in the sorted set at key (ZSCORE);
// ok is false when the member or the key does not exist.
func ZScore(ctx context.Context, s conn.Sender, key, member string) (f float64, ok bool, err error) {
	b := builder()
	return callOK(ctx, s, b, b.Zscore(key, member).Build(), cmds.FloatOrNil)
}

// ZPopMin removes and returns up to count members with the lowest scores
// from the sorted set at key (ZPOPMIN), lowest first; an empty or
// missing set gives none.
func ZPopMin(ctx context.Context, s conn.Sender, key string, count int64) ([]Z, error) {
	if count <= 0 {
		return nil, invalid("ZPOPMIN of a count below 1")
	}
	b := builder()
	return call(ctx, s, b, b.Zpopmin(key).Count(count).Build(), cmds.Scored)
}

// ZCard returns the number of members of the sorted set at key (ZCARD);
// 0 for a missing key.
func ZCard(ctx context.Context, s conn.Sender, key string) (int64, error) {
	b := builder()
	return call(ctx, s, b, b.Zcard(key).Build(), cmds.Int)
}

// ZIncrBy adds incr to the score of member in the sorted set at key
// (ZINCRBY; a new member starts at 0) and returns the new score. A NaN
// incr is ErrInvalid.
func ZIncrBy(ctx context.Context, s conn.Sender, key string, incr float64, member string) (float64, error) {
	if math.IsNaN(incr) {
		return 0, invalid("ZINCRBY by NaN")
	}
	b := builder()
	return call(ctx, s, b, b.Zincrby(key, incr, member).Build(), cmds.Float)
}

// ZRank returns the rank of member in the sorted set at key, lowest
// score first from 0 (ZRANK); ok is false when the member or the key
// does not exist.
func ZRank(ctx context.Context, s conn.Sender, key, member string) (rank int64, ok bool, err error) {
	b := builder()
	return callOK(ctx, s, b, b.Zrank(key, member).Build(), cmds.IntOrNil)
}

// ZRevRank is ZRank counted from the highest score (ZREVRANK).
func ZRevRank(ctx context.Context, s conn.Sender, key, member string) (rank int64, ok bool, err error) {
	b := builder()
	return callOK(ctx, s, b, b.Zrevrank(key, member).Build(), cmds.IntOrNil)
}

// ZRevRange returns the members ranked start to stop of the sorted set
// at key, highest score first (ZRANGE … REV): the leaderboard order.
func ZRevRange(ctx context.Context, s conn.Sender, key string, start, stop int64) ([]string, error) {
	b := builder()
	return call(ctx, s, b, zrange(b, key, start, stop).Rev().Build(), cmds.Strings)
}

// ZRevRangeWithScores is ZRevRange with each member's score (ZRANGE …
// REV WITHSCORES), the same under RESP2 and RESP3.
func ZRevRangeWithScores(ctx context.Context, s conn.Sender, key string, start, stop int64) ([]Z, error) {
	b := builder()
	return call(ctx, s, b, zrange(b, key, start, stop).Rev().Withscores().Build(), cmds.Scored)
}

func zrange(b *kb, key string, start, stop int64) cmds.Zrange {
	return b.Zrange(key, argText(b, start), argText(b, stop))
}

// ScoreRange is a range of scores for ZRangeByScore: from Min to Max,
// both included unless MinExclusive or MaxExclusive (math.Inf(-1) and
// math.Inf(1) for no bound), and, when Count is positive or Offset is,
// only Count members (all when Count is 0) after skipping Offset.
type ScoreRange struct {
	Min, Max                   float64
	MinExclusive, MaxExclusive bool
	Offset, Count              int64
}

// bound writes a score bound as ZRANGE BYSCORE reads it: "(" for an
// exclusive one, +inf and -inf for the infinities.
func bound(f float64, exclusive bool) string {
	var s string
	switch {
	case math.IsInf(f, 1):
		s = "+inf"
	case math.IsInf(f, -1):
		s = "-inf"
	default:
		s = strconv.FormatFloat(f, 'g', -1, 64)
	}
	if exclusive {
		s = "(" + s
	}
	return s
}

// ZRangeByScore returns the members of the sorted set at key whose
// scores are in r, lowest first, with their scores (ZRANGE … BYSCORE
// [LIMIT] WITHSCORES).
func ZRangeByScore(ctx context.Context, s conn.Sender, key string, r ScoreRange) ([]Z, error) {
	return zrangeByScore(ctx, s, key, r, false)
}

// ZRevRangeByScore is ZRangeByScore highest score first (ZRANGE …
// BYSCORE REV); r means the same (Min is the lower bound).
func ZRevRangeByScore(ctx context.Context, s conn.Sender, key string, r ScoreRange) ([]Z, error) {
	return zrangeByScore(ctx, s, key, r, true)
}

func zrangeByScore(ctx context.Context, s conn.Sender, key string, r ScoreRange, rev bool) ([]Z, error) {
	if math.IsNaN(r.Min) || math.IsNaN(r.Max) || r.Offset < 0 || r.Count < 0 {
		return nil, invalid("ZRANGE BYSCORE with a NaN bound or a negative offset or count")
	}
	lo, hi := bound(r.Min, r.MinExclusive), bound(r.Max, r.MaxExclusive)
	b := builder()
	var z cmds.Zrange
	if rev {
		z = b.Zrange(key, hi, lo).Byscore().Rev()
	} else {
		z = b.Zrange(key, lo, hi).Byscore()
	}
	if r.Count > 0 || r.Offset > 0 {
		count := r.Count
		if count == 0 {
			count = -1 // the rest
		}
		z = z.Limit(r.Offset, count)
	}
	return call(ctx, s, b, z.Withscores().Build(), cmds.Scored)
}
