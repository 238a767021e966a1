package cache

import (
	"strconv"
	"strings"

	"github.com/echomq/echomq-go/cmds"
)

// cacheable reports, from the generated command table, whether a
// command's reply can be kept while its key does not change: read-only,
// naming one key as its argument 1 and nothing else of the dataset, the
// same reply for the same data (not Nondeterministic: no clock as in TTL,
// no chance as in SRANDMEMBER), and neither blocking, nor pub/sub, nor
// admin. The server tracks the key of every such command, so a change to
// it brings an invalidation. Given n arguments, the command must name
// exactly one key (EXISTS k, not EXISTS a b).
func cacheable(in *cmds.Info) bool {
	const not = cmds.Nondeterministic | cmds.Blocking | cmds.PubSub | cmds.ReplyModel | cmds.Admin | cmds.MovableKeys | cmds.Write
	return in != nil && len(in.Words) == 1 && in.Kind.Has(cmds.ReadOnly) && in.Kind&not == 0
}

// maxNameLen bounds the names looked up (the longest command name is
// shorter).
const maxNameLen = 32

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
	low := buf[:len(name)]
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		low[i] = c
	}
	in := cmds.Lookup(string(low))
	if !cacheable(in) {
		return "", &NotCacheableError{Command: strings.ToUpper(name), Reason: "not a cacheable read command (read-only, one key, no clock, no chance)"}
	}
	if !in.OneKey(len(args)) {
		return "", &NotCacheableError{Command: in.Words[0], Reason: in.Words[0] + " of " + strconv.Itoa(len(args)-1) + " keys: a cached read has one key"}
	}
	return in.Words[0], nil
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
