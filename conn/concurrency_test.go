package conn_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// 64 goroutines share one Conn, each sending ECHO of values no other
// goroutine sends: every caller must get its own value back, and the
// commands must share socket writes: far fewer writes than commands, on
// the client (Conn.Writes) and as the server side reads them (the proxy).
// 64 × 10,000 commands; 64 × 2,000 under -race or -short.
func TestConcurrentEchoOwnReplies(t *testing.T) {
	goroutinesN, perG := 64, 10_000
	if testing.Short() || raceEnabled {
		perG = 2_000
	}
	p := newProxy(t, srvAddr(t))
	c := setup(t, conn.Options{Addr: p.Addr()})
	writes0, chunks0 := c.Writes(), p.Writes()

	var wrong, failed atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutinesN {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			prefix := "g" + strconv.Itoa(g) + ":"
			var buf, want []byte
			for i := range perG {
				want = strconv.AppendInt(append(want[:0], prefix...), int64(i), 10)
				cmd := resp.CommandBytes(buf, []byte("ECHO"), want)
				buf = cmd.Bytes()
				err := c.DoFunc(ctx, cmd, func(v resp.Value) error {
					if string(v.Str) != string(want) {
						wrong.Add(1)
					}
					return nil
				})
				if err != nil {
					failed.Add(1)
					t.Errorf("goroutine %d call %d: %v", g, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if wrong.Load() != 0 || failed.Load() != 0 {
		t.Fatalf("%d wrong replies, %d failed calls", wrong.Load(), failed.Load())
	}
	cmds := uint64(goroutinesN * perG)
	writes, chunks := c.Writes()-writes0, uint64(p.Writes()-chunks0)
	t.Logf("%d commands: the client made %d socket writes (%.1f commands per write); the server side read %d chunks (%.1f commands per read)",
		cmds, writes, float64(cmds)/float64(writes), chunks, float64(cmds)/float64(chunks))
	if writes == 0 || writes > cmds/4 || chunks > cmds/4 {
		t.Fatalf("%d commands: %d client writes, %d server-side reads: want each < %d", cmds, writes, chunks, cmds/4)
	}
	if v := mustDo(t, c, "PING"); v.Text() != "PONG" {
		t.Fatalf("PING after the run = %v", v)
	}
}

// Handlers given to Send directly see each reply once, in order, and one
// Done after the last: the Handler contract, under concurrency.
func TestConcurrentSendHandlerContract(t *testing.T) {
	c := setup(t, conn.Options{})
	const goroutinesN, perG, batch = 16, 200, 7
	var bad atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutinesN {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perG {
				want := make([]string, 1+(g+i)%batch)
				for j := range want {
					want[j] = strconv.Itoa(g) + "/" + strconv.Itoa(i) + "/" + strconv.Itoa(j)
				}
				pr := newProbe(want, &bad)
				if err := sendEchos(context.Background(), c, want, pr); err != nil {
					t.Error(err)
					return
				}
				if err := pr.wait(t); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d handler contract violations", bad.Load())
	}
}

// srvAddr is the package server's address (skipping without a server).
func srvAddr(t testing.TB) string {
	t.Helper()
	needServer(t)
	return srv.Addr
}

// probe is a Handler that checks the contract: replies in order, each
// the expected value, none after Done, Done exactly once and, on success,
// after every reply. Violations are counted in bad.
type probe struct {
	want  []string
	bad   *atomic.Int64
	got   int          // replies seen (reader goroutine only, until done)
	dones atomic.Int32 // Done calls
	err   error
	done  chan struct{}
}

func newProbe(want []string, bad *atomic.Int64) *probe {
	return &probe{want: want, bad: bad, done: make(chan struct{})}
}

func (p *probe) Reply(i int, v resp.Value) {
	if p.dones.Load() != 0 || i != p.got || i >= len(p.want) || string(v.Str) != p.want[i] {
		p.bad.Add(1)
	}
	p.got++
}

func (p *probe) Waits() bool { return false }

// sendEchos submits ECHO of every value in want as one submission.
func sendEchos(ctx context.Context, c *conn.Conn, want []string, h wire.Handler) error {
	var cmds resp.Cmds
	for _, w := range want {
		cmds.Add("ECHO", w)
	}
	sub, err := wire.FromCmds(&cmds)
	if err != nil {
		return err
	}
	return c.Send(ctx, sub, h)
}

func (p *probe) Done(err error) {
	if p.dones.Add(1) != 1 {
		p.bad.Add(1)
		return
	}
	if err == nil && p.got != len(p.want) {
		p.bad.Add(1)
	}
	p.err = err
	close(p.done)
}

// wait waits for Done and returns its error.
func (p *probe) wait(t testing.TB) error {
	select {
	case <-p.done:
		return p.err
	case <-testCtx(t).Done():
		t.Fatal("Done never called")
		return nil
	}
}

// The reader role changes hands all the time: callers that read their own
// replies (DoFunc, Batch), submissions left to the reader goroutine
// (Send), idle gaps that free the role, and callers that give up. Every
// outcome must still be right.
func TestConcurrentReaderRoleChurn(t *testing.T) {
	c := setup(t, conn.Options{})
	perG := 3000
	if raceEnabled {
		perG = 1000
	}
	var bad, wrong, cancelled atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			var b pipeline.Batch
			for i := range perG {
				id := strconv.Itoa(g) + "." + strconv.Itoa(i)
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if rng.IntN(8) == 0 {
					ctx, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(200))*time.Microsecond)
				}
				var err error
				switch rng.IntN(3) {
				case 0:
					var got string
					if got, err = echo(ctx, c, id); err == nil && got != id {
						wrong.Add(1)
					}
				case 1:
					want := []string{id + "a", id + "b"}
					pr := newProbe(want, &bad)
					if err = sendEchos(ctx, c, want[:2], pr); err == nil {
						err = pr.wait(t) // a Send's Handler runs whatever ctx does
					}
				case 2:
					b.Reset()
					b.Add("ECHO", id)
					b.Add("PING")
					if err = b.Exec(ctx, c); err == nil && (b.Reply(0).Text() != id || b.Reply(1).Text() != "PONG") {
						wrong.Add(1)
					}
				}
				cancel()
				if err != nil {
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("%s: %v", id, err)
						wrong.Add(1)
					}
					cancelled.Add(1)
				}
				if rng.IntN(16) == 0 {
					time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond) // let the role go free
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d cancelled of %d", cancelled.Load(), 8*perG)
	if bad.Load() != 0 || wrong.Load() != 0 {
		t.Fatalf("%d Handler contract violations, %d wrong outcomes", bad.Load(), wrong.Load())
	}
	if got, err := echo(testCtx(t), c, "end"); err != nil || got != "end" {
		t.Fatalf("final ECHO = %q, %v", got, err)
	}
}
