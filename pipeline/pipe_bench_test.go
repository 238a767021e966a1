package pipeline_test

import (
	"bufio"
	"context"
	"net"
	"testing"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/pipeline"
)

// pipePong answers every command with +PONG over one side of a net.Pipe
// (a stand-in for the server, for BenchmarkBatchPingPipe only: the tests
// use real servers). It reads the arrays of bulk strings the client
// writes, and nothing else.
func pipePong(c net.Conn) {
	r := bufio.NewReaderSize(c, 64<<10)
	w := bufio.NewWriterSize(c, 64<<10)
	for {
		n, ok := pipeLine(r)
		if !ok {
			return
		}
		for range n {
			m, ok := pipeLine(r)
			if !ok {
				return
			}
			if _, err := r.Discard(m + 2); err != nil {
				return
			}
		}
		w.WriteString("+PONG\r\n")
		if r.Buffered() == 0 && w.Flush() != nil {
			return
		}
	}
}

// pongConn is a Conn whose peer is pipePong, closed at the benchmark's end.
func pongConn(b *testing.B) *conn.Conn {
	c, err := conn.Dial(context.Background(), conn.Options{Addr: "pipe", Protocol: 2,
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			a, z := net.Pipe()
			go pipePong(z)
			return a, nil
		}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// pipeLine reads a header line ("*1\r\n", "$4\r\n") and returns its number.
func pipeLine(r *bufio.Reader) (int, bool) {
	line, err := r.ReadSlice('\n')
	if err != nil || len(line) < 3 {
		return 0, false
	}
	n := 0
	for _, ch := range line[1 : len(line)-2] {
		n = n*10 + int(ch-'0')
	}
	return n, true
}

// BenchmarkBatchPingPipe is the peer run's PING at depth 100 (a Batch
// built again for every Exec, every reply checked) raw and typed, on a
// Conn whose peer is pipePong over a net.Pipe: the client's own work per
// command with no socket and no server, in process CPU per command
// (cpu-s/Mop), so that typed ÷ raw shows above the noise of a loaded
// machine (issue 24: PING d100). A/B against another revision with this
// file copied there, interleaved:
//
//	go test -c -o new.test ./pipeline/; (old tree) go test -c -o old.test ./pipeline/
//	for r in 1 2 3 4 5 6; do for v in old new; do ./$v.test -test.run '^$' -test.bench BatchPingPipe -test.benchtime 2000000x | grep Bench >> $v.txt; done; done
//	benchstat -filter '.unit:cpu-s/Mop' old.txt new.txt
func BenchmarkBatchPingPipe(b *testing.B) {
	const depth = 100
	for _, via := range []string{"raw", "typed"} {
		b.Run("depth=100/via="+via, func(b *testing.B) {
			c := pongConn(b)
			ctx := context.Background()
			var batch pipeline.Batch
			status := make([]pipeline.Reply[string], 0, depth)
			rounds(b, depth, func() {
				batch.Reset()
				status = status[:0]
				if via == "raw" {
					for range depth {
						batch.Add("PING")
					}
				} else {
					cb := batch.Builder()
					for range depth {
						status = append(status, batch.Status(cb.Ping().Build()))
					}
				}
				if err := batch.Exec(ctx, c); err != nil {
					b.Fatal(err)
				}
				if via == "raw" {
					for _, v := range batch.Replies() {
						if !v.Equal("PONG") {
							b.Fatal(v)
						}
					}
					return
				}
				for _, h := range status {
					if v, err := h.Value(); err != nil || v != "PONG" {
						b.Fatal(v, err)
					}
				}
			})
		})
	}
}

// BenchmarkTypedValue is BenchmarkBatchPingPipe's reply check alone: a
// Batch of 100 PINGs executed once, then each reply read again and
// again, raw (the resp.Value, Equal) against typed (the Status handle's
// Value). One op is one reply read; CPU only.
//
//	go test -run '^$' -bench TypedValue -count 6 ./pipeline/ | tee tv.txt; benchstat -col /via tv.txt
func BenchmarkTypedValue(b *testing.B) {
	const depth = 100
	c := pongConn(b)
	var batch pipeline.Batch
	status := make([]pipeline.Reply[string], 0, depth)
	cb := batch.Builder()
	for range depth {
		status = append(status, batch.Status(cb.Ping().Build()))
	}
	if err := batch.Exec(context.Background(), c); err != nil {
		b.Fatal(err)
	}
	b.Run("via=raw", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if v := batch.Replies()[i%depth]; !v.Equal("PONG") {
				b.Fatal(v)
			}
		}
	})
	b.Run("via=typed", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if v, err := status[i%depth].Value(); err != nil || v != "PONG" {
				b.Fatal(v, err)
			}
		}
	})
}
