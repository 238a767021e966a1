package conn

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

type nopHandler struct{}

func (nopHandler) Reply(int, resp.Value) {}
func (nopHandler) Done(error)            {}
func (nopHandler) Waits() bool           { return true }

type nopObs struct{}

func (nopObs) CommandStart(CommandInfo)                     {}
func (nopObs) CommandEnd(CommandInfo, time.Duration, error) {}

// BenchmarkHookPath: the hook path alone, without a server: begin, a
// Reply per command and Done over a submission of n PINGs, in process
// CPU per command (issue 23's BenchmarkHooks regression, A/B against
// 67ebe62 with this file copied there):
//
//	go test -run '^$' -bench HookPath -cpu 1 -count 10 ./conn/ | tee hp.txt; benchstat -filter '.unit:cpu-ns/command' hp.txt
func BenchmarkHookPath(b *testing.B) {
	nop := Hook{
		BeforeCommand: func(ctx context.Context, _ CommandInfo, _ RawCommand) context.Context { return ctx },
		AfterCommand:  func(context.Context, CommandInfo, resp.Value, time.Duration, error) {},
	}
	for _, n := range []int{1, 1000} {
		for _, bc := range []struct {
			name string
			opts Options
		}{
			{"hook", Options{Hooks: []Hook{nop}}},
			{"observer", Options{Observer: nopObs{}}},
		} {
			b.Run(bc.name+"/"+strconv.Itoa(n), func(b *testing.B) {
				s := newHookSet(bc.opts)
				var rc resp.Cmds
				for range n {
					rc.Add("PING")
				}
				w, _ := wire.FromCmds(&rc)
				w, _, err := wire.Known(w)
				if err != nil {
					b.Fatal(err)
				}
				v := resp.Value{Type: resp.SimpleString}
				ctx := context.Background()
				b.ReportAllocs()
				var ru0, ru1 syscall.Rusage
				syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
				for b.Loop() {
					o := s.begin(ctx, w, nopHandler{})
					for i := range n {
						o.Reply(i, v)
					}
					o.Done(nil)
				}
				syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
				cpu := (ru1.Utime.Nano() + ru1.Stime.Nano()) - (ru0.Utime.Nano() + ru0.Stime.Nano())
				b.ReportMetric(float64(cpu)/float64(b.N)/float64(n), "cpu-ns/command")
			})
		}
	}
}
