package wire

import (
	"strconv"
	"testing"

	"github.com/echomq/echomq-go/resp"
)

// BenchmarkKnown: reading the facts of a submission given without them
// (what a Client with hooks, or a cluster's router, does with a plain
// batch), per command, for batches of 100 PINGs, SETs and EVALSHAs.
//
//	go test -run '^$' -bench Known -count 6 ./internal/wire/
func BenchmarkKnown(b *testing.B) {
	value := make([]byte, 64)
	for _, name := range []string{"PING", "SET", "EVALSHA"} {
		var c resp.Cmds
		for i := range 100 {
			key := "emq:{bench}:job:JOB" + strconv.Itoa(i)
			switch name {
			case "PING":
				c.Add("PING")
			case "SET":
				c.AddBytes([]byte("SET"), []byte(key), value)
			case "EVALSHA":
				c.AddBytes([]byte("EVALSHA"), []byte("0123456789012345678901234567890123456789"), []byte("2"),
					[]byte(key), []byte("emq:{bench}:pending"), []byte("JOB"+strconv.Itoa(i)), value)
			}
		}
		w, err := FromCmds(&c)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				k, l, err := Known(w)
				if err != nil || len(k.Facts()) != 100 {
					b.Fatal(err)
				}
				Release(l)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/cmd")
		})
	}
}
