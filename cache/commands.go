package cache

import (
	"strconv"
	"strings"
)

// cacheable lists the read-only commands whose reply depends on one key,
// its argument 1, and on nothing else: no clock (TTL, PTTL), no chance
// (SRANDMEMBER, HRANDFIELD), no other key. The server tracks the key of
// every such command, so a change to it brings an invalidation.
var cacheable = names(
	"GET", "GETRANGE", "STRLEN", "EXISTS", "TYPE",
	"GETBIT", "BITCOUNT", "BITPOS",
	"HGET", "HMGET", "HGETALL", "HEXISTS", "HLEN",
	"HKEYS", "HVALS", "HSTRLEN",
	"SMEMBERS", "SISMEMBER", "SMISMEMBER", "SCARD",
	"ZRANGE", "ZREVRANGE", "ZRANGEBYSCORE", "ZREVRANGEBYSCORE",
	"ZRANGEBYLEX", "ZREVRANGEBYLEX", "ZSCORE", "ZMSCORE",
	"ZCARD", "ZRANK", "ZREVRANK", "ZCOUNT", "ZLEXCOUNT",
	"LRANGE", "LINDEX", "LLEN", "LPOS",
	"XLEN", "XRANGE", "XREVRANGE",
)

// names maps each name to itself, so a lookup by a stack buffer gives the
// table's own string.
func names(list ...string) map[string]string {
	m := make(map[string]string, len(list))
	for _, n := range list {
		m[n] = n
	}
	return m
}

// maxNameLen is the longest name in cacheable.
const maxNameLen = 16

// checkCacheable returns the upper-case name of args's command when it
// can be cached, else a *NotCacheableError.
func checkCacheable(args []string) (string, error) {
	if len(args) < 2 {
		name := ""
		if len(args) == 1 {
			name = strings.ToUpper(args[0])
		}
		return "", &NotCacheableError{Command: name, Reason: "a cached read names a command and its key"}
	}
	var buf [maxNameLen]byte
	name := args[0]
	if len(name) > maxNameLen {
		return "", &NotCacheableError{Command: strings.ToUpper(name), Reason: "not a cacheable read command"}
	}
	up := buf[:len(name)]
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		up[i] = c
	}
	canon, ok := cacheable[string(up)]
	if !ok {
		return "", &NotCacheableError{Command: string(up), Reason: "not a cacheable read command (read-only, one key, no clock, no chance)"}
	}
	if string(up) == "EXISTS" && len(args) > 2 {
		return "", &NotCacheableError{Command: "EXISTS", Reason: "EXISTS of " + strconv.Itoa(len(args)-1) + " keys: a cached read has one key"}
	}
	return canon, nil
}

// appendID appends the lookup key of a command: each argument as its
// length in decimal, ':' and its bytes; the name in upper case.
func appendID(dst []byte, name string, args []string) []byte {
	dst = strconv.AppendInt(dst, int64(len(name)), 10)
	dst = append(dst, ':')
	dst = append(dst, name...)
	for _, a := range args[1:] {
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, ':')
		dst = append(dst, a...)
	}
	return dst
}
