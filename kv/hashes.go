package kv

import (
	"context"
	"math"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// HSet sets field of the hash at key to val (HSET) and returns true
// when the field is new.
func HSet[V Value](ctx context.Context, s conn.Sender, key, field string, val V) (bool, error) {
	b := builder()
	n, err := call(ctx, s, b, b.Hset(key, cmds.FieldValue{Field: field, Value: argText(b, val)}).Build(), cmds.Int)
	return n == 1, err
}

// HSetMap sets every field of m in the hash at key (HSET) and returns
// how many were new.
func HSetMap[V Value](ctx context.Context, s conn.Sender, key string, m map[string]V) (int64, error) {
	if len(m) == 0 {
		return 0, nil
	}
	b := builder()
	for f, v := range m {
		b.fvs = append(b.fvs, cmds.FieldValue{Field: f, Value: argText(b, v)})
	}
	return call(ctx, s, b, b.Hset(key, b.fvs...).Build(), cmds.Int)
}

// HGet returns the value of field in the hash at key (HGET); ok is false
// when the field or the key does not exist.
func HGet(ctx context.Context, s conn.Sender, key, field string) (val string, ok bool, err error) {
	b := builder()
	return callOK(ctx, s, b, b.Hget(key, field).Build(), cmds.String)
}

// HGetAll returns every field and value of the hash at key (HGETALL);
// a missing key reads as an empty map. Under RESP2 and RESP3 alike.
func HGetAll(ctx context.Context, s conn.Sender, key string) (map[string]string, error) {
	b := builder()
	return call(ctx, s, b, b.Hgetall(key).Build(), cmds.StringMap)
}

// HDel removes fields from the hash at key (HDEL) and returns how many
// existed.
func HDel(ctx context.Context, s conn.Sender, key string, fields ...string) (int64, error) {
	if len(fields) == 0 {
		return 0, nil
	}
	b := builder()
	return call(ctx, s, b, b.Hdel(key, fields...).Build(), cmds.Int)
}

// HIncrBy adds n to the integer in field of the hash at key (HINCRBY;
// a missing field counts as 0) and returns the result.
func HIncrBy(ctx context.Context, s conn.Sender, key, field string, n int64) (int64, error) {
	b := builder()
	return call(ctx, s, b, b.Hincrby(key, field, n).Build(), cmds.Int)
}

// F is one field and value for HSetFields, the value formatted as Value
// says (text as is, integers in decimal, a float64 the shortest way that
// reads back the same), so that one call may mix value types:
//
//	kv.HSetFields(ctx, c, "user:1", kv.F("name", "Ada"), kv.F("visits", 3), kv.F("score", 4.5))
func F[V Value](field string, v V) FieldValue {
	return FieldValue{Field: field, Value: format(v)}
}

// HSetFields sets the fields of the hash at key (HSET) and returns how
// many were new. Unlike HSetMap, its values may be of different types
// (see F), and it sets them in the order given.
func HSetFields(ctx context.Context, s conn.Sender, key string, fields ...FieldValue) (int64, error) {
	if len(fields) == 0 {
		return 0, nil
	}
	b := builder()
	for _, f := range fields {
		b.fvs = append(b.fvs, cmds.FieldValue(f))
	}
	return call(ctx, s, b, b.Hset(key, b.fvs...).Build(), cmds.Int)
}

// HLen returns the number of fields of the hash at key (HLEN); 0 for a
// missing key.
func HLen(ctx context.Context, s conn.Sender, key string) (int64, error) {
	b := builder()
	return call(ctx, s, b, b.Hlen(key).Build(), cmds.Int)
}

// HExists reports whether field exists in the hash at key (HEXISTS).
func HExists(ctx context.Context, s conn.Sender, key, field string) (bool, error) {
	b := builder()
	return call(ctx, s, b, b.Hexists(key, field).Build(), cmds.Bool)
}

// HMGet returns the values of fields in the hash at key (HMGET), as a map
// that holds only the fields that exist (as MGet does for keys).
func HMGet(ctx context.Context, s conn.Sender, key string, fields ...string) (map[string]string, error) {
	if len(fields) == 0 {
		return map[string]string{}, nil
	}
	b := builder()
	vals, err := call(ctx, s, b, b.Hmget(key, fields...).Build(), cmds.NullStrings)
	if err != nil {
		return nil, err
	}
	if len(vals) != len(fields) {
		return nil, &resp.TypeError{Want: "one value per field", Got: resp.Array}
	}
	m := make(map[string]string, len(vals))
	for i, v := range vals {
		if v.OK {
			m[fields[i]] = v.String
		}
	}
	return m, nil
}

// HIncrByFloat adds f to the number in field of the hash at key
// (HINCRBYFLOAT) and returns the result. A NaN f is ErrInvalid.
func HIncrByFloat(ctx context.Context, s conn.Sender, key, field string, f float64) (float64, error) {
	if math.IsNaN(f) {
		return 0, invalid("HINCRBYFLOAT by NaN")
	}
	b := builder()
	return call(ctx, s, b, b.Hincrbyfloat(key, field, f).Build(), cmds.Float)
}
