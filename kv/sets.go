package kv

import (
	"context"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
)

// SAdd adds members to the set at key (SADD) and returns how many were
// new.
func SAdd[V Value](ctx context.Context, s conn.Sender, key string, members ...V) (int64, error) {
	if len(members) == 0 {
		return 0, nil
	}
	b := builder()
	return call(ctx, s, b, b.Sadd(key, texts(b, members)...).Build(), cmds.Int)
}

// SRem removes members from the set at key (SREM) and returns how many
// were in it.
func SRem[V Value](ctx context.Context, s conn.Sender, key string, members ...V) (int64, error) {
	if len(members) == 0 {
		return 0, nil
	}
	b := builder()
	return call(ctx, s, b, b.Srem(key, texts(b, members)...).Build(), cmds.Int)
}

// SMembers returns the members of the set at key (SMEMBERS), in no
// particular order; a missing key reads as an empty set.
func SMembers(ctx context.Context, s conn.Sender, key string) ([]string, error) {
	b := builder()
	return call(ctx, s, b, b.Smembers(key).Build(), cmds.Strings)
}

// SIsMember reports whether member is in the set at key (SISMEMBER).
func SIsMember[V Value](ctx context.Context, s conn.Sender, key string, member V) (bool, error) {
	b := builder()
	n, err := call(ctx, s, b, b.Sismember(key, argText(b, member)).Build(), cmds.Int)
	return n == 1, err
}

// SCard returns the number of members of the set at key (SCARD); 0 for
// a missing key.
func SCard(ctx context.Context, s conn.Sender, key string) (int64, error) {
	b := builder()
	return call(ctx, s, b, b.Scard(key).Build(), cmds.Int)
}

// SPop removes and returns a random member of the set at key (SPOP); ok
// is false when the set is empty or missing.
func SPop(ctx context.Context, s conn.Sender, key string) (member string, ok bool, err error) {
	b := builder()
	return callOK(ctx, s, b, b.Spop(key).Build(), cmds.String)
}

// SPopN removes and returns up to count random members of the set at key
// (SPOP key count); none for an empty or missing set.
func SPopN(ctx context.Context, s conn.Sender, key string, count int64) ([]string, error) {
	if count < 0 {
		return nil, invalid("SPOP with a negative count")
	}
	b := builder()
	return call(ctx, s, b, b.Spop(key).Count(count).Build(), cmds.Strings)
}
