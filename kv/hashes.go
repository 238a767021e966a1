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
	buf, b := command(4, "HSET")
	n, err := runInt(ctx, s, buf, arg(b.Arg(key).Arg(field), val))
	return n == 1, err
}

// HSetMap sets every field of m in the hash at key (HSET) and returns
// how many were new.
func HSetMap[V Value](ctx context.Context, s conn.Sender, key string, m map[string]V) (int64, error) {
	if len(m) == 0 {
		return 0, nil
	}
	buf, b := command(2+2*len(m), "HSET")
	b = b.Arg(key)
	for f, v := range m {
		b = arg(b.Arg(f), v)
	}
	return runInt(ctx, s, buf, b)
}

// HGet returns the value of field in the hash at key (HGET); ok is false
// when the field or the key does not exist.
func HGet(ctx context.Context, s conn.Sender, key, field string) (val string, ok bool, err error) {
	buf, b := command(3, "HGET")
	err = run(ctx, s, buf, b.Arg(key).Arg(field), func(v resp.Value) (err error) {
		val, ok, err = cmds.String(v)
		return err
	})
	return val, ok, err
}

// HGetAll returns every field and value of the hash at key (HGETALL);
// a missing key reads as an empty map. Under RESP2 and RESP3 alike.
func HGetAll(ctx context.Context, s conn.Sender, key string) (map[string]string, error) {
	buf, b := command(2, "HGETALL")
	var m map[string]string
	err := run(ctx, s, buf, b.Arg(key), func(v resp.Value) (err error) {
		m, err = cmds.StringMap(v)
		return err
	})
	return m, err
}

// HDel removes fields from the hash at key (HDEL) and returns how many
// existed.
func HDel(ctx context.Context, s conn.Sender, key string, fields ...string) (int64, error) {
	if len(fields) == 0 {
		return 0, nil
	}
	buf, b := command(2+len(fields), "HDEL")
	b = b.Arg(key)
	for _, f := range fields {
		b = b.Arg(f)
	}
	return runInt(ctx, s, buf, b)
}

// HIncrBy adds n to the integer in field of the hash at key (HINCRBY;
// a missing field counts as 0) and returns the result.
func HIncrBy(ctx context.Context, s conn.Sender, key, field string, n int64) (int64, error) {
	buf, b := command(4, "HINCRBY")
	return runInt(ctx, s, buf, b.Arg(key).Arg(field).ArgInt(n))
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
	buf, b := command(2+2*len(fields), "HSET")
	b = b.Arg(key)
	for _, f := range fields {
		b = b.Arg(f.Field).Arg(f.Value)
	}
	return runInt(ctx, s, buf, b)
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
