package cache_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/cache"
	"github.com/echomq/echomq-go/resp"
)

// Which reads the cache keeps follows from the generated command table
// (read-only, one key as argument 1, not Nondeterministic, not blocking,
// pub/sub or admin), not from a list of our own: every read the old
// hand-kept list had is still cacheable, the reads the table tags
// nondeterministic (TTL, SRANDMEMBER, HSCAN…) or that name another key,
// several keys or none are refused with a NotCacheableError, before
// anything is sent.
func TestCacheableFromTable(t *testing.T) {
	c := newCache(t, opts(3))
	ctx := testCtx(t)
	cached := [][]string{
		{"GET", "k"}, {"GETRANGE", "k", "0", "1"}, {"STRLEN", "k"}, {"EXISTS", "k"}, {"TYPE", "k"},
		{"GETBIT", "k", "0"}, {"BITCOUNT", "k"}, {"BITPOS", "k", "1"},
		{"HGET", "h", "f"}, {"HMGET", "h", "f", "g"}, {"HGETALL", "h"}, {"HEXISTS", "h", "f"}, {"HLEN", "h"},
		{"HKEYS", "h"}, {"HVALS", "h"}, {"HSTRLEN", "h", "f"},
		{"SMEMBERS", "s"}, {"SISMEMBER", "s", "m"}, {"SMISMEMBER", "s", "m"}, {"SCARD", "s"},
		{"ZRANGE", "z", "0", "-1"}, {"ZREVRANGE", "z", "0", "-1"}, {"ZRANGEBYSCORE", "z", "0", "1"},
		{"ZREVRANGEBYSCORE", "z", "1", "0"}, {"ZRANGEBYLEX", "z", "-", "+"}, {"ZREVRANGEBYLEX", "z", "+", "-"},
		{"ZSCORE", "z", "m"}, {"ZMSCORE", "z", "m"}, {"ZCARD", "z"}, {"ZRANK", "z", "m"}, {"ZREVRANK", "z", "m"},
		{"ZCOUNT", "z", "0", "1"}, {"ZLEXCOUNT", "z", "-", "+"},
		{"LRANGE", "l", "0", "-1"}, {"LINDEX", "l", "0"}, {"LLEN", "l"}, {"LPOS", "l", "a"},
		{"XLEN", "x"}, {"XRANGE", "x", "-", "+"}, {"XREVRANGE", "x", "+", "-"},
		// the table's, beyond the old list
		{"EXPIRETIME", "k"}, {"PEXPIRETIME", "k"}, {"GEOPOS", "g", "m"}, {"GEODIST", "g", "a", "b"},
		{"SUBSTR", "k", "0", "1"}, {"BITFIELD_RO", "k", "GET", "u8", "0"},
		{"get", "k"}, // any case
	}
	for _, args := range cached {
		err := c.DoCached(ctx, time.Minute, func(resp.Value) error { return nil }, args...)
		if err != nil {
			t.Errorf("%v: %v, want it cached", args, err)
		}
	}
	refused := map[string][]string{
		"TTL":           {"TTL", "k"},
		"PTTL":          {"PTTL", "k"},
		"SRANDMEMBER":   {"SRANDMEMBER", "s"},
		"HRANDFIELD":    {"HRANDFIELD", "h"},
		"ZRANDMEMBER":   {"ZRANDMEMBER", "z"},
		"HSCAN":         {"HSCAN", "h", "0"},
		"DUMP":          {"DUMP", "k"},
		"RANDOMKEY":     {"RANDOMKEY", "x"},
		"SET":           {"SET", "k", "v"},
		"GETEX":         {"GETEX", "k"},
		"LCS":           {"LCS", "a", "b"},
		"SORT_RO":       {"SORT_RO", "l"},
		"XINFO":         {"XINFO", "STREAM", "x"},
		"OBJECT":        {"OBJECT", "ENCODING", "k"},
		"BLPOP":         {"BLPOP", "l", "1"},
		"NOSUCHCOMMAND": {"NOSUCHCOMMAND", "k"},
	}
	for name, args := range refused {
		err := c.DoCached(ctx, time.Minute, func(resp.Value) error { return nil }, args...)
		var nc *cache.NotCacheableError
		if !errors.As(err, &nc) || nc.Command != name || !errors.Is(err, cache.ErrNotCacheable) {
			t.Errorf("%v: %v, want a NotCacheableError naming %s", args, err, name)
		}
	}
	err := c.DoCached(ctx, time.Minute, nil, "EXISTS", "a", "b")
	if !errors.Is(err, cache.ErrNotCacheable) || !strings.Contains(err.Error(), "EXISTS of 2 keys") {
		t.Errorf("EXISTS a b: %v", err)
	}
	// "get k" is the same read as "GET k": served from memory.
	if s := c.Stats(); s.Misses != uint64(len(cached)-1) || s.Hits != 1 {
		t.Errorf("%+v: every cacheable read went to the server once, and no refused one", s)
	}
}
