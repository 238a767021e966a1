package conn_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/faultproxy"
	"github.com/echomq/echomq-go/pipeline"
)

// The fault kinds of one round.
const (
	faultNone = iota
	faultCutDown
	faultCutUp
	faultByteAtATime
	faultStall
	faultCutAll
	faultClose
	faultCancel
	faultKinds
)

var faultNames = [faultKinds]string{"none", "cut-down", "cut-up", "byte-at-a-time", "stall", "cut-all", "close", "cancel"}

// faultTally counts outcomes across rounds.
type faultTally struct {
	calls, ok, failed  atomic.Int64
	mismatches, doubts atomic.Int64 // wrong replies; calls not ending exactly once
	unexpected         atomic.Int64 // errors of a kind no fault explains
	okBy, failedBy     [faultKinds]atomic.Int64
}

// THE fault test: in each round a fresh connection through the fault
// proxy carries unique ECHOs from several goroutines (single calls, raw
// Sends with a checking Handler, reused Batches) while the proxy cuts the
// stream at a random byte in either direction, trickles it, stalls it past
// ReadTimeout, cuts everything at a random moment, or the connection is
// closed, or callers cancel. Every call must end exactly once, with its own
// reply or an error; no goroutine may be left behind.
func TestFaultRounds(t *testing.T) {
	rounds := 1000
	if testing.Short() {
		rounds = 200
	}
	p := newProxy(t, srvAddr(t))
	srv.Flush(t)
	before := goroutines()
	var tally faultTally
	start := time.Now()
	for r := range rounds {
		faultRound(t, p, r, r%faultKinds, &tally)
		if t.Failed() {
			t.Fatalf("round %d (%s) failed", r, faultNames[r%faultKinds])
		}
	}
	t.Logf("%d rounds in %v: %d calls, %d answered, %d failed with an error",
		rounds, time.Since(start).Round(time.Millisecond), tally.calls.Load(), tally.ok.Load(), tally.failed.Load())
	for k, name := range faultNames {
		t.Logf("  %-15s %5d answered, %5d failed", name, tally.okBy[k].Load(), tally.failedBy[k].Load())
	}
	if n := tally.mismatches.Load() + tally.doubts.Load() + tally.unexpected.Load(); n != 0 {
		t.Fatalf("%d wrong replies, %d calls not ending exactly once, %d unexplained errors",
			tally.mismatches.Load(), tally.doubts.Load(), tally.unexpected.Load())
	}
	if tally.ok.Load() == 0 || tally.failed.Load() == 0 {
		t.Fatal("every call succeeded or every call failed: the faults did not bite")
	}
	p.Close()
	checkNoLeak(t, before, 2)
}

// faultRound runs one round with the given fault.
func faultRound(t *testing.T, p *faultproxy.Proxy, round, kind int, tally *faultTally) {
	p.Set(faultproxy.Mode{})
	readTimeout := 10 * time.Second
	if kind == faultStall {
		readTimeout = 60 * time.Millisecond
	}
	down0, up0 := p.BytesDown(), p.BytesUp()
	c, err := conn.Dial(testCtx(t), conn.Options{Addr: p.Addr(), ReadTimeout: readTimeout})
	if err != nil {
		t.Fatalf("round %d: dial: %v", round, err)
	}
	defer c.Close()
	hsDown, hsUp := p.BytesDown()-down0, p.BytesUp()-up0

	const goroutinesN, opsPerG = 4, 6
	// Roughly the bytes each way of a round: ~3 ECHOs per op.
	estDown, estUp := int64(goroutinesN*opsPerG*3*16), int64(goroutinesN*opsPerG*3*36)
	switch kind {
	case faultCutDown:
		p.Set(faultproxy.Mode{CutDownAfter: hsDown + 1 + rand.Int64N(estDown)})
	case faultCutUp:
		p.Set(faultproxy.Mode{CutUpAfter: hsUp + 1 + rand.Int64N(estUp)})
	case faultByteAtATime:
		p.Set(faultproxy.Mode{ByteAtATime: true})
	case faultStall:
		p.Set(faultproxy.Mode{StallDownAfter: hsDown + rand.Int64N(estDown), Stall: 2 * time.Second})
	}

	var wg sync.WaitGroup
	if kind == faultCutAll || kind == faultClose {
		wg.Add(1)
		go func() { // joined with the callers: it must not hit the next round
			defer wg.Done()
			time.Sleep(time.Duration(rand.IntN(1500)) * time.Microsecond)
			if kind == faultCutAll {
				p.CutAll()
			} else {
				c.Close()
			}
		}()
	}
	for g := range goroutinesN {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b pipeline.Batch
			for i := range opsPerG {
				id := fmt.Sprintf("r%d-g%d-i%d", round, g, i)
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if kind == faultCancel && rand.IntN(2) == 0 {
					ctx, cancel = context.WithTimeout(ctx, time.Duration(rand.IntN(300))*time.Microsecond)
				}
				faultOp(ctx, t, c, &b, id, i%3, kind, tally)
				cancel()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitLong):
		buf := make([]byte, 1<<20)
		t.Fatalf("round %d (%s): calls did not end\n%s", round, faultNames[kind], buf[:runtime.Stack(buf, true)])
	}
}

// faultOp runs one operation of kind op (single call, raw Send, Batch)
// and checks its outcome.
func faultOp(ctx context.Context, t *testing.T, c *conn.Conn, b *pipeline.Batch, id string, op, kind int, tally *faultTally) {
	tally.calls.Add(1)
	n := 1 + len(id)%4
	want := make([]string, n)
	for j := range want {
		want[j] = id + "/" + strconv.Itoa(j)
	}
	var err error
	switch op {
	case 0:
		var got string
		got, err = echo(ctx, c, want[0])
		if err == nil && got != want[0] {
			tally.mismatches.Add(1)
			t.Errorf("%s: got %q", want[0], got)
		}
	case 1:
		var bad atomic.Int64
		pr := newProbe(want, &bad)
		if err = sendEchos(ctx, c, want, pr); err == nil {
			select {
			case <-pr.done:
				err = pr.err
			case <-time.After(waitLong):
				tally.doubts.Add(1)
				t.Errorf("%s: Handler never done", id)
				return
			}
		} else if pr.dones.Load() != 0 {
			bad.Add(1) // h called although Send failed
		}
		time.AfterFunc(10*time.Millisecond, func() { // a late second Done?
			if pr.dones.Load() > 1 || bad.Load() != 0 {
				tally.doubts.Add(1)
			}
		})
		if bad.Load() != 0 {
			tally.mismatches.Add(1)
			t.Errorf("%s: Handler contract broken", id)
		}
	case 2:
		b.Reset()
		for _, w := range want {
			b.Add("ECHO", w)
		}
		if err = b.Exec(ctx, c); err == nil {
			for j, v := range b.Replies() {
				if v.Text() != want[j] {
					tally.mismatches.Add(1)
					t.Errorf("%s: batch reply %d = %v", id, j, v)
				}
			}
		}
	}
	if err == nil {
		tally.ok.Add(1)
		tally.okBy[kind].Add(1)
		return
	}
	tally.failed.Add(1)
	tally.failedBy[kind].Add(1)
	if !faultExplains(err, kind) {
		tally.unexpected.Add(1)
		t.Errorf("%s (%s): unexplained error %v", id, faultNames[kind], err)
	}
}

// faultExplains reports whether err is an outcome the round's fault can
// cause.
func faultExplains(err error, kind int) bool {
	switch kind {
	case faultNone, faultByteAtATime:
		return false // nothing should fail
	case faultClose:
		return errors.Is(err, conn.ErrClosed)
	case faultCancel:
		return errors.Is(err, context.DeadlineExceeded)
	case faultStall:
		return errors.Is(err, conn.ErrTimeout)
	}
	return errors.Is(err, conn.ErrBroken)
}
