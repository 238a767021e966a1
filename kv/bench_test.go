package kv_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/kv"
	"github.com/echomq/echomq-go/resp"
)

// The typed helpers against the raw calls they are built on, GET and SET
// of a 64-byte value, on one conn.Conn: one caller at a time (depth 1:
// the round trip dominates) and 64 goroutines sharing the connection
// (the connection batches them, so the client's own work per command
// shows). cpu-s/Mop is the client process's CPU (user+system) per
// million commands; the server runs in its own process.
//
//	go test -run '^$' -bench . -count 6 ./kv/ | tee kv.txt; benchstat -col /via kv.txt

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// op is one command of a benchmark, by one goroutine (its own buffer).
type op func(ctx context.Context, s conn.Sender, buf []byte) error

// sink keeps a result alive, as a caller would.
var sink string

var value64 = []byte(strings.Repeat("v", 64))

var ops = map[string]map[string]op{
	"GET": {
		"helper": func(ctx context.Context, s conn.Sender, _ []byte) error {
			_, _, err := kv.Get(ctx, s, "bench:key")
			return err
		},
		"dofunc": func(ctx context.Context, s conn.Sender, buf []byte) error {
			return s.DoFunc(ctx, resp.BuildCommand(buf, 2).Arg("GET").Arg("bench:key").Cmd(), func(v resp.Value) error {
				sink = string(v.Str) // the same result as the helper's
				return nil
			})
		},
		"do": func(ctx context.Context, s conn.Sender, _ []byte) error {
			_, err := s.Do(ctx, "GET", "bench:key")
			return err
		},
		"call": func(ctx context.Context, s conn.Sender, _ []byte) error {
			b := benchBuilders.Get().(*cmds.Builder)
			v, _, err := kv.CallNull(ctx, s, b.Get("bench:key").Build(), cmds.String)
			benchBuilders.Put(b)
			sink = v
			return err
		},
	},
	"SET": {
		"helper": func(ctx context.Context, s conn.Sender, _ []byte) error {
			return kv.Set(ctx, s, "bench:key", value64)
		},
		"dofunc": func(ctx context.Context, s conn.Sender, buf []byte) error {
			return s.DoFunc(ctx, resp.BuildCommand(buf, 3).Arg("SET").Arg("bench:key").ArgBytes(value64).Cmd(), nil)
		},
		"do": func(ctx context.Context, s conn.Sender, _ []byte) error {
			_, err := s.Do(ctx, "SET", "bench:key", string(value64))
			return err
		},
		"call": func(ctx context.Context, s conn.Sender, _ []byte) error {
			b := benchBuilders.Get().(*cmds.Builder)
			_, err := kv.Call(ctx, s, b.Set("bench:key", value64s).Build(), cmds.OKOrNil)
			benchBuilders.Put(b)
			return err
		},
	},
}

// benchBuilders gives each op of the "call" rows a Builder, as a caller
// keeps one per goroutine.
var benchBuilders = sync.Pool{New: func() any { return new(cmds.Builder) }}

var value64s = string(value64)

func BenchmarkHelpers(b *testing.B) {
	servertest.Need(b, srv)
	ctx := context.Background()
	for _, cmd := range []string{"GET", "SET"} {
		for _, g := range []int{1, 64} {
			for _, via := range []string{"helper", "dofunc", "do", "call"} {
				b.Run(cmd+"/g="+strconv.Itoa(g)+"/via="+via, func(b *testing.B) {
					c, err := conn.Dial(ctx, conn.Options{Addr: srv.Addr})
					if err != nil {
						b.Fatal(err)
					}
					defer c.Close()
					if err := kv.Set(ctx, c, "bench:key", value64); err != nil {
						b.Fatal(err)
					}
					run(b, ctx, c, g, ops[cmd][via])
				})
			}
		}
	}
}

// run runs b.N ops over g goroutines and reports the client's CPU.
func run(b *testing.B, ctx context.Context, s conn.Sender, g int, f op) {
	per := (b.N + g - 1) / g
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuNow()
	var wg sync.WaitGroup
	for range g {
		wg.Go(func() {
			buf := make([]byte, 0, 256)
			for range per {
				if err := f(ctx, s, buf); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	cpu := cpuNow() - cpu0
	b.StopTimer()
	b.ReportMetric(cpu.Seconds()/float64(per*g)*1e6, "cpu-s/Mop")
}
