package jobs

import (
	"strconv"
	"strings"
)

// UniqueKey derives a unique key from a task's type and the fields that
// make two tasks the same (an email's recipient, a report's day), for
// the Key of an [github.com/echomq/echomq-go/emq.UniqueJob]. Each part is
// written with its length first, so that no two different lists of parts
// give the same key ("a:b", "c" and "a", "b:c" differ). The key is hashed
// before it is sent, so its length costs nothing on the server.
func UniqueKey(typ string, fields ...string) string {
	var b strings.Builder
	part := func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	part(typ)
	for _, f := range fields {
		part(f)
	}
	return b.String()
}
