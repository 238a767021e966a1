package cmdinfo

import "testing"

var names = []string{"PING", "SET", "GET", "EVALSHA", "INCR", "HSET", "subscribe", "ZADD"}

func BenchmarkSpecial(b *testing.B) {
	for i := 0; i < b.N; i++ {
		Special(names[i%len(names)])
	}
}
