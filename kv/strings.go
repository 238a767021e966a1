package kv

import (
	"context"
	"math"
	"time"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// Get returns the value of key (GET); ok is false when the key does not
// exist. The string is the one allocation.
func Get(ctx context.Context, s conn.Sender, key string) (val string, ok bool, err error) {
	b := builder()
	return callOK(ctx, s, b, b.Get(key).Build(), cmds.String)
}

// GetBytes appends the value of key to dst (GET) and returns the
// extended slice; ok is false, and dst is returned as it was, when the
// key does not exist. With a dst of room enough it allocates nothing.
func GetBytes(ctx context.Context, s conn.Sender, key string, dst []byte) (out []byte, ok bool, err error) {
	out = dst
	b := builder()
	err = do(ctx, s, b, b.Get(key).Build(), func(v resp.Value) error {
		if v.IsNull() {
			return nil
		}
		if !isText(v) {
			return &resp.TypeError{Want: "string", Got: v.Type}
		}
		out, ok = append(dst, v.Str...), true
		return nil
	})
	return out, ok, err
}

// Set sets key to val (SET), with no expiry, replacing any value and
// TTL the key had.
func Set[V Value](ctx context.Context, s conn.Sender, key string, val V) error {
	b := builder()
	return do(ctx, s, b, b.Set(key, argText(b, val)).Build(), nil)
}

// SetOptions are SET's options. The zero value sets the key
// unconditionally, with no expiry.
type SetOptions struct {
	// TTL, when positive, expires the key after it: EX in whole
	// seconds, else PX in milliseconds (rounded up). 0 and NoTTL (what
	// TTL returns for a key that never expires) set no expiry; any
	// other negative TTL is ErrInvalid.
	TTL time.Duration
	// KeepTTL keeps the key's current TTL (KEEPTTL); not with TTL.
	KeepTTL bool
	// NX sets the key only if it does not exist, XX only if it does.
	NX, XX bool
}

// check says why the options are invalid, or returns nil.
func (o SetOptions) check() error {
	switch {
	case o.NX && o.XX:
		return invalid("SET with both NX and XX")
	case o.TTL < 0 && o.TTL != NoTTL:
		return invalid("SET with a negative TTL")
	case o.KeepTTL && o.TTL > 0:
		return invalid("SET with both a TTL and KEEPTTL")
	}
	return nil
}

// set gives c the options: EX in whole seconds, else PX in
// milliseconds rounded up (as package cmds writes them).
func (o SetOptions) set(c cmds.Set) cmds.Set {
	switch {
	case o.TTL > 0 && seconds(o.TTL):
		c = c.Ex(o.TTL)
	case o.TTL > 0:
		c = c.Px(o.TTL)
	case o.KeepTTL:
		c = c.Keepttl()
	}
	switch {
	case o.NX:
		c = c.Nx()
	case o.XX:
		c = c.Xx()
	}
	return c
}

// SetWith sets key to val with options (SET … EX|PX|KEEPTTL NX|XX). It
// returns false when NX or XX kept the key from being set.
func SetWith[V Value](ctx context.Context, s conn.Sender, key string, val V, o SetOptions) (bool, error) {
	if err := o.check(); err != nil {
		return false, err
	}
	b := builder()
	set := false
	err := do(ctx, s, b, o.set(b.Set(key, argText(b, val))).Build(), func(v resp.Value) error {
		set = !v.IsNull()
		return nil
	})
	return set, err
}

// SetGet sets key to val with options and returns the value it had
// (SET … GET); ok is false when the key did not exist. With NX (Redis
// 7), the key is set only when ok is false.
func SetGet[V Value](ctx context.Context, s conn.Sender, key string, val V, o SetOptions) (old string, ok bool, err error) {
	if err := o.check(); err != nil {
		return "", false, err
	}
	b := builder()
	return callOK(ctx, s, b, o.set(b.Set(key, argText(b, val))).Get().Build(), cmds.String)
}

// MGet returns the values of keys (MGET) as a map holding the keys that
// exist: a missing key is absent from it.
func MGet(ctx context.Context, s conn.Sender, keys ...string) (map[string]string, error) {
	if len(keys) == 0 {
		return map[string]string{}, nil
	}
	b := builder()
	var out map[string]string
	err := do(ctx, s, b, b.Mget(keys...).Build(), func(v resp.Value) error {
		if v.Type != resp.Array || len(v.Elems) != len(keys) {
			return &resp.TypeError{Want: "array of one value per key", Got: v.Type}
		}
		out = make(map[string]string, len(keys))
		for i, e := range v.Elems {
			val, ok, err := cmds.String(e)
			if err != nil {
				return err
			}
			if ok {
				out[keys[i]] = val
			}
		}
		return nil
	})
	return out, err
}

// MSet sets every key of m to its value (MSET), atomically.
func MSet[V Value](ctx context.Context, s conn.Sender, m map[string]V) error {
	if len(m) == 0 {
		return nil
	}
	b := builder()
	for k, v := range m {
		b.kvs = append(b.kvs, cmds.KeyValue{Key: k, Value: argText(b, v)})
	}
	return do(ctx, s, b, b.Mset(b.kvs...).Build(), nil)
}

// Incr adds 1 to the integer at key (INCR; a missing key counts as 0)
// and returns the result.
func Incr(ctx context.Context, s conn.Sender, key string) (int64, error) {
	b := builder()
	return call(ctx, s, b, b.Incr(key).Build(), cmds.Int)
}

// IncrBy adds n (which may be negative) to the integer at key (INCRBY)
// and returns the result.
func IncrBy(ctx context.Context, s conn.Sender, key string, n int64) (int64, error) {
	b := builder()
	return call(ctx, s, b, b.Incrby(key, n).Build(), cmds.Int)
}

// Del removes keys (DEL) and returns how many existed.
func Del(ctx context.Context, s conn.Sender, keys ...string) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	b := builder()
	return call(ctx, s, b, b.Del(keys...).Build(), cmds.Int)
}

// Exists returns how many of keys exist (EXISTS; a key named twice
// counts twice).
func Exists(ctx context.Context, s conn.Sender, keys ...string) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	b := builder()
	return call(ctx, s, b, b.Exists(keys...).Build(), cmds.Int)
}

// Expire sets key's TTL (EXPIRE in whole seconds, else PEXPIRE in
// milliseconds, rounded up; zero or negative removes the key). It
// returns false when the key does not exist. NoTTL, which TTL returns
// for a key that never expires, is ErrInvalid rather than a removal
// (use Persist to take a TTL away).
func Expire(ctx context.Context, s conn.Sender, key string, ttl time.Duration) (bool, error) {
	if ttl == NoTTL {
		return false, invalid("EXPIRE with NoTTL: Persist keeps a key for ever, a negative TTL other than NoTTL removes it")
	}
	b := builder()
	var c cmds.Command
	if ttl <= 0 || seconds(ttl) {
		c = b.Expire(key, ttl).Build()
	} else {
		c = b.Pexpire(key, ttl).Build() // milliseconds, rounded up
	}
	n, err := call(ctx, s, b, c, cmds.Int)
	return n == 1, err
}

// NoTTL is what TTL returns for a key that exists and never expires.
const NoTTL time.Duration = -1

// TTL returns how long key has to live, to the millisecond (PTTL), or
// NoTTL when it never expires; ok is false when the key does not exist.
func TTL(ctx context.Context, s conn.Sender, key string) (ttl time.Duration, ok bool, err error) {
	b := builder()
	ms, err := call(ctx, s, b, b.Pttl(key).Build(), cmds.Int)
	switch {
	case err != nil || ms == -2:
		return 0, false, err
	case ms == -1:
		return NoTTL, true, nil
	}
	return time.Duration(ms) * time.Millisecond, true, nil
}

// Decr subtracts 1 from the integer at key (DECR; a missing key counts
// as 0) and returns the result.
func Decr(ctx context.Context, s conn.Sender, key string) (int64, error) {
	b := builder()
	return call(ctx, s, b, b.Decr(key).Build(), cmds.Int)
}

// DecrBy subtracts n from the integer at key (DECRBY) and returns the
// result.
func DecrBy(ctx context.Context, s conn.Sender, key string, n int64) (int64, error) {
	b := builder()
	return call(ctx, s, b, b.Decrby(key, n).Build(), cmds.Int)
}

// IncrByFloat adds f to the number at key (INCRBYFLOAT; a missing key
// counts as 0) and returns the result, read back as a float64 under
// RESP2 and RESP3 alike. A NaN f is ErrInvalid.
func IncrByFloat(ctx context.Context, s conn.Sender, key string, f float64) (float64, error) {
	if math.IsNaN(f) {
		return 0, invalid("INCRBYFLOAT by NaN")
	}
	b := builder()
	return call(ctx, s, b, b.Incrbyfloat(key, f).Build(), cmds.Float)
}

// GetDel returns the value of key and deletes the key (GETDEL); ok is
// false when it did not exist.
func GetDel(ctx context.Context, s conn.Sender, key string) (val string, ok bool, err error) {
	b := builder()
	return callOK(ctx, s, b, b.Getdel(key).Build(), cmds.String)
}

// Persist removes the TTL of key (PERSIST) and reports whether it had
// one; false too for a missing key.
func Persist(ctx context.Context, s conn.Sender, key string) (bool, error) {
	b := builder()
	return call(ctx, s, b, b.Persist(key).Build(), cmds.Bool)
}
