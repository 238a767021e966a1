package conn_test

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// pipeResponder answers every command with +OK over one side of a
// net.Pipe (a stand-in for the server, for BenchmarkDoFuncPipe only: the
// tests use real servers). It reads the arrays of bulk strings the
// client writes, and nothing else.
func pipeResponder(c net.Conn) {
	r := bufio.NewReaderSize(c, 64<<10)
	w := bufio.NewWriterSize(c, 64<<10)
	for {
		n, ok := pipeHeader(r)
		if !ok {
			return
		}
		for range n {
			m, ok := pipeHeader(r)
			if !ok {
				return
			}
			if _, err := r.Discard(m + 2); err != nil {
				return
			}
		}
		w.WriteString("+OK\r\n")
		if r.Buffered() == 0 {
			if w.Flush() != nil {
				return
			}
		}
	}
}

// pipeHeader reads a header line ("*3\r\n", "$64\r\n") and returns its
// number.
func pipeHeader(r *bufio.Reader) (int, bool) {
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

func pipeConn(b *testing.B) *conn.Conn {
	c, err := conn.Dial(context.Background(), conn.Options{Addr: "pipe", Protocol: 2,
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			a, z := net.Pipe()
			go pipeResponder(z)
			return a, nil
		}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func cpuNow() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkDoFuncPipe: DoFunc of PING and of SET (64-byte value) from 1
// and from 64 goroutines on one Conn, whose peer is pipeResponder over a
// net.Pipe: the client's own work per command with no socket and no
// server, in process CPU per command, so that a per-command cost of the
// library shows above the noise of a loaded machine (issue 24: the d1 and
// g64 peer rows). A/B against another revision with this file copied
// there, interleaved:
//
//	go test -c -o new.test ./conn/; (old tree) go test -c -o old.test ./conn/
//	for r in 1 2 3 4 5 6; do for v in old new; do ./$v.test -test.run '^$' -test.bench DoFuncPipe -test.benchtime 300000x | grep Bench >> $v.txt; done; done
//	benchstat -filter '.unit:cpu-ns/op' old.txt new.txt
func BenchmarkDoFuncPipe(b *testing.B) {
	val := strings.Repeat("v", 64)
	for _, name := range []string{"PING", "SET"} {
		for _, g := range []int{1, 64} {
			b.Run(name+"/g="+strconv.Itoa(g), func(b *testing.B) {
				c := pipeConn(b)
				ctx := context.Background()
				per := (b.N + g - 1) / g
				t0 := cpuNow()
				b.ResetTimer()
				var wg sync.WaitGroup
				for range g {
					wg.Add(1)
					go func() {
						defer wg.Done()
						buf := make([]byte, 0, 128)
						for range per {
							var cmd resp.Cmd
							if name == "PING" {
								cmd = resp.Command(buf, "PING")
							} else {
								cmd = resp.Command(buf, "SET", "key:bench", val)
							}
							buf = cmd.Bytes()
							if err := c.DoFunc(ctx, cmd, func(resp.Value) error { return nil }); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.ReportMetric(float64(cpuNow()-t0)/float64(per*g), "cpu-ns/op")
			})
		}
	}
}
