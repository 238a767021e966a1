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
	buf, b := command(2, "GET")
	err = run(ctx, s, buf, b.Arg(key), func(v resp.Value) (err error) {
		val, ok, err = cmds.String(v)
		return err
	})
	return val, ok, err
}

// GetBytes appends the value of key to dst (GET) and returns the
// extended slice; ok is false, and dst is returned as it was, when the
// key does not exist. With a dst of room enough it allocates nothing.
func GetBytes(ctx context.Context, s conn.Sender, key string, dst []byte) (out []byte, ok bool, err error) {
	out = dst
	buf, b := command(2, "GET")
	err = run(ctx, s, buf, b.Arg(key), func(v resp.Value) error {
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
	buf, b := command(3, "SET")
	return run(ctx, s, buf, arg(b.Arg(key), val), nil)
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

// args counts the arguments the options add, or says why they are
// invalid.
func (o SetOptions) args() (int, error) {
	switch {
	case o.NX && o.XX:
		return 0, invalid("SET with both NX and XX")
	case o.TTL < 0 && o.TTL != NoTTL:
		return 0, invalid("SET with a negative TTL")
	case o.KeepTTL && o.TTL > 0:
		return 0, invalid("SET with both a TTL and KEEPTTL")
	}
	n := 0
	if o.TTL > 0 {
		n += 2
	}
	if o.KeepTTL {
		n++
	}
	if o.NX || o.XX {
		n++
	}
	return n, nil
}

// append appends the options' arguments.
func (o SetOptions) append(b resp.CmdBuilder) resp.CmdBuilder {
	switch {
	case o.TTL > 0 && seconds(o.TTL):
		b = b.Arg("EX").ArgInt(int64(o.TTL / time.Second))
	case o.TTL > 0:
		b = argMillis(b.Arg("PX"), o.TTL)
	case o.KeepTTL:
		b = b.Arg("KEEPTTL")
	}
	switch {
	case o.NX:
		b = b.Arg("NX")
	case o.XX:
		b = b.Arg("XX")
	}
	return b
}

// SetWith sets key to val with options (SET … EX|PX|KEEPTTL NX|XX). It
// returns false when NX or XX kept the key from being set.
func SetWith[V Value](ctx context.Context, s conn.Sender, key string, val V, o SetOptions) (bool, error) {
	n, err := o.args()
	if err != nil {
		return false, err
	}
	buf, b := command(3+n, "SET")
	set := false
	err = run(ctx, s, buf, o.append(arg(b.Arg(key), val)), func(v resp.Value) error {
		set = !v.IsNull()
		return nil
	})
	return set, err
}

// SetGet sets key to val with options and returns the value it had
// (SET … GET); ok is false when the key did not exist. With NX (Redis
// 7), the key is set only when ok is false.
func SetGet[V Value](ctx context.Context, s conn.Sender, key string, val V, o SetOptions) (old string, ok bool, err error) {
	n, err := o.args()
	if err != nil {
		return "", false, err
	}
	buf, b := command(4+n, "SET")
	err = run(ctx, s, buf, o.append(arg(b.Arg(key), val)).Arg("GET"), func(v resp.Value) (err error) {
		old, ok, err = cmds.String(v)
		return err
	})
	return old, ok, err
}

// MGet returns the values of keys (MGET) as a map holding the keys that
// exist: a missing key is absent from it.
func MGet(ctx context.Context, s conn.Sender, keys ...string) (map[string]string, error) {
	if len(keys) == 0 {
		return map[string]string{}, nil
	}
	buf, b := command(1+len(keys), "MGET")
	for _, k := range keys {
		b = b.Arg(k)
	}
	var out map[string]string
	err := run(ctx, s, buf, b, func(v resp.Value) error {
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
	buf, b := command(1+2*len(m), "MSET")
	for k, v := range m {
		b = arg(b.Arg(k), v)
	}
	return run(ctx, s, buf, b, nil)
}

// Incr adds 1 to the integer at key (INCR; a missing key counts as 0)
// and returns the result.
func Incr(ctx context.Context, s conn.Sender, key string) (int64, error) {
	buf, b := command(2, "INCR")
	return runInt(ctx, s, buf, b.Arg(key))
}

// IncrBy adds n (which may be negative) to the integer at key (INCRBY)
// and returns the result.
func IncrBy(ctx context.Context, s conn.Sender, key string, n int64) (int64, error) {
	buf, b := command(3, "INCRBY")
	return runInt(ctx, s, buf, b.Arg(key).ArgInt(n))
}

// Del removes keys (DEL) and returns how many existed.
func Del(ctx context.Context, s conn.Sender, keys ...string) (int64, error) {
	return keysInt(ctx, s, "DEL", keys)
}

// Exists returns how many of keys exist (EXISTS; a key named twice
// counts twice).
func Exists(ctx context.Context, s conn.Sender, keys ...string) (int64, error) {
	return keysInt(ctx, s, "EXISTS", keys)
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
	var n int64
	var err error
	if ttl <= 0 || seconds(ttl) {
		buf, b := command(3, "EXPIRE")
		n, err = runInt(ctx, s, buf, b.Arg(key).ArgInt(int64(ttl/time.Second)))
	} else {
		buf, b := command(3, "PEXPIRE")
		n, err = runInt(ctx, s, buf, argMillis(b.Arg(key), ttl))
	}
	return n == 1, err
}

// NoTTL is what TTL returns for a key that exists and never expires.
const NoTTL time.Duration = -1

// TTL returns how long key has to live, to the millisecond (PTTL), or
// NoTTL when it never expires; ok is false when the key does not exist.
func TTL(ctx context.Context, s conn.Sender, key string) (ttl time.Duration, ok bool, err error) {
	buf, b := command(2, "PTTL")
	ms, err := runInt(ctx, s, buf, b.Arg(key))
	switch {
	case err != nil || ms == -2:
		return 0, false, err
	case ms == -1:
		return NoTTL, true, nil
	}
	return time.Duration(ms) * time.Millisecond, true, nil
}

// keysInt sends a command of keys whose reply is an integer.
func keysInt(ctx context.Context, s conn.Sender, name string, keys []string) (int64, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	buf, b := command(1+len(keys), name)
	for _, k := range keys {
		b = b.Arg(k)
	}
	return runInt(ctx, s, buf, b)
}

// runInt sends a command whose reply is an integer.
func runInt(ctx context.Context, s conn.Sender, buf bufT, b resp.CmdBuilder) (n int64, err error) {
	err = run(ctx, s, buf, b, func(v resp.Value) (err error) {
		n, err = v.AsInt()
		return err
	})
	return n, err
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
