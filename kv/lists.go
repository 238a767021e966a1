package kv

import (
	"context"
	"time"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
)

// LPush inserts vals at the head of the list at key (LPUSH; the last
// one ends up first) and returns the list's length.
func LPush[V Value](ctx context.Context, s conn.Sender, key string, vals ...V) (int64, error) {
	if len(vals) == 0 {
		return 0, invalid("LPUSH of no values")
	}
	b := builder()
	return call(ctx, s, b, b.Lpush(key, texts(b, vals)...).Build(), cmds.Int)
}

// RPush appends vals to the list at key (RPUSH) and returns the list's
// length.
func RPush[V Value](ctx context.Context, s conn.Sender, key string, vals ...V) (int64, error) {
	if len(vals) == 0 {
		return 0, invalid("RPUSH of no values")
	}
	b := builder()
	return call(ctx, s, b, b.Rpush(key, texts(b, vals)...).Build(), cmds.Int)
}

// LPop removes and returns the first element of the list at key (LPOP);
// ok is false when the list is empty or does not exist.
func LPop(ctx context.Context, s conn.Sender, key string) (string, bool, error) {
	b := builder()
	return callOK(ctx, s, b, b.Lpop(key).Build(), cmds.String)
}

// RPop removes and returns the last element of the list at key (RPOP);
// ok is false when the list is empty or does not exist.
func RPop(ctx context.Context, s conn.Sender, key string) (string, bool, error) {
	b := builder()
	return callOK(ctx, s, b, b.Rpop(key).Build(), cmds.String)
}

// LRange returns the elements start to stop (inclusive; negative counts
// from the end, -1 the last) of the list at key (LRANGE).
func LRange(ctx context.Context, s conn.Sender, key string, start, stop int64) ([]string, error) {
	b := builder()
	return call(ctx, s, b, b.Lrange(key, start, stop).Build(), cmds.Strings)
}

// BLPop removes and returns the first element of the first non-empty
// list of keys, waiting up to timeout for one (BLPOP; 0 and BlockForever
// wait for ever, any other negative timeout is ErrInvalid; the timeout
// is sent in seconds with up to three decimals, rounded up to the
// millisecond). key names the list it came from; ok is false when the
// timeout passed. A conn.Client sends it on a
// connection of its own, so it never holds up other calls; when ctx
// ends first the Client unblocks it on the server (CLIENT UNBLOCK)
// before BLPop returns, and an element that was popped meanwhile is
// returned with a nil error rather than lost (see conn's doc, "The
// guarantee", for the one case where the server cannot be told).
func BLPop(ctx context.Context, s conn.Sender, timeout time.Duration, keys ...string) (key, val string, ok bool, err error) {
	if len(keys) == 0 {
		return "", "", false, invalid("BLPOP of no keys")
	}
	if timeout == BlockForever {
		timeout = 0
	}
	if timeout < 0 {
		return "", "", false, invalid("BLPOP with a negative timeout other than BlockForever")
	}
	b := builder()
	p, ok, err := callOK(ctx, s, b, b.Blpop(keys, timeout).Build(), cmds.PoppedOrNil)
	return p.Key, p.Element, ok, err
}

// LLen returns the length of the list at key (LLEN); 0 for a missing
// key.
func LLen(ctx context.Context, s conn.Sender, key string) (int64, error) {
	b := builder()
	return call(ctx, s, b, b.Llen(key).Build(), cmds.Int)
}

// BRPop removes and returns the last element of the first non-empty
// list of keys, waiting up to timeout for one (BRPOP; 0 and BlockForever
// wait for ever, any other negative timeout is ErrInvalid;
// the timeout is sent in seconds with up to three decimals, rounded up
// to the millisecond). key names the list it came from; ok is false when
// the timeout passed. On a conn.Client it runs on a connection of its
// own, as BLPop does.
func BRPop(ctx context.Context, s conn.Sender, timeout time.Duration, keys ...string) (key, val string, ok bool, err error) {
	if len(keys) == 0 {
		return "", "", false, invalid("BRPOP of no keys")
	}
	if timeout == BlockForever {
		timeout = 0
	}
	if timeout < 0 {
		return "", "", false, invalid("BRPOP with a negative timeout other than BlockForever")
	}
	b := builder()
	p, ok, err := callOK(ctx, s, b, b.Brpop(keys, timeout).Build(), cmds.PoppedOrNil)
	return p.Key, p.Element, ok, err
}
