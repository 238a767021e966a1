package conn_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/scriptpeer"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// syncPeer answers each command before it reads the next, with a blocking
// write: a peer that stops reading while its replies are not read, as
// simple servers and some proxies do. A client that writes a large batch
// without reading at the same time deadlocks against it.
func syncPeer(t *testing.T) string {
	return scriptpeer.Listen(t, func(c net.Conn) {
		r := bufio.NewReaderSize(c, 64<<10)
		for {
			args, err := scriptpeer.ReadCommand(r)
			if err != nil {
				return
			}
			reply := helloMap
			if !strings.EqualFold(args[0], "HELLO") {
				reply = bulk(args[len(args)-1])
			}
			if _, err := io.WriteString(c, reply); err != nil {
				return
			}
		}
	})
}

// A batch far larger than the socket buffers, to a peer that answers as
// it reads: the replies must be read while the batch is still being
// written.
func TestLargeBatchToSynchronousPeer(t *testing.T) {
	// The timeouts turn a deadlock into an error instead of a hang: they
	// fire only after waitLong without progress, never on a slow machine.
	c := dial(t, conn.Options{Addr: syncPeer(t), WriteTimeout: waitLong, ReadTimeout: waitLong})
	value := strings.Repeat("v", 64<<10)
	var b pipeline.Batch
	const n = 200 // 12.5 MiB each way
	for i := range n {
		b.Add("ECHO", strconv.Itoa(i)+value)
	}
	start := time.Now()
	err := b.Exec(testCtx(t), c)
	if err != nil {
		t.Fatalf("a %d MiB batch to a peer that answers as it reads: %v after %v", n*len(value)>>20, err, time.Since(start).Round(time.Millisecond))
	}
	for i, v := range b.Replies() {
		if v.Len() != len(value)+len(strconv.Itoa(i)) {
			t.Fatalf("reply %d: %d bytes", i, v.Len())
		}
	}
}

// A caller whose large command cannot be written (the peer stopped
// reading, no write timeout) still returns when its ctx ends; Close then
// ends the stuck write.
func TestCancelWhileWriteBlocked(t *testing.T) {
	stop := make(chan struct{})
	addr := scriptpeer.Listen(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		if _, err := scriptpeer.ReadCommand(r); err != nil {
			return
		}
		io.WriteString(c, helloMap)
		<-stop // never reads again
	})
	before := goroutines()
	c, err := conn.Dial(testCtx(t), conn.Options{Addr: addr, WriteTimeout: -1, ReadTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{32 << 20, 100} { // a blocked write, then a small command behind it
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		ended := make(chan error, 1)
		go func() {
			_, err := c.Do(ctx, "SET", "k", strings.Repeat("x", size))
			ended <- err
		}()
		select {
		case err := <-ended:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%d-byte SET: %v, want DeadlineExceeded", size, err)
			}
		case <-time.After(waitLong):
			close(stop)
			t.Fatalf("a %d-byte SET blocked in its write ignored its ctx", size)
		}
		cancel()
	}
	c.Close()
	close(stop) // the peer's handler returns
	checkNoLeak(t, before, 0)
}

// readsOnCaller is a Handler that waits for its replies and notes, at
// the first, whether it runs on the goroutine that called Send (the
// leader reading its own replies) rather than the reader goroutine.
type readsOnCaller struct {
	onCaller bool
	replies  int
	done     chan error
}

func (h *readsOnCaller) Reply(i int, _ resp.Value) {
	if i == 0 {
		buf := make([]byte, 64<<10)
		h.onCaller = strings.Contains(string(buf[:runtime.Stack(buf, false)]), "TestLargeBatchCallerReads")
	}
	h.replies++
}
func (h *readsOnCaller) Done(err error) { h.done <- err }
func (h *readsOnCaller) Waits() bool    { return true }

// A caller whose submission is too large to write itself (over 64 KiB:
// the writer goroutine writes it) still reads its own replies, while the
// writer goroutine writes, rather than waiting to be woken by the reader
// goroutine; and against a peer that answers as it reads, nothing
// deadlocks.
func TestLargeBatchCallerReads(t *testing.T) {
	c := dial(t, conn.Options{Addr: syncPeer(t), WriteTimeout: waitLong, ReadTimeout: waitLong})
	var cmds resp.Cmds
	value := strings.Repeat("v", 64<<10)
	const n = 40 // 2.5 MiB: more than the socket buffers hold
	for i := range n {
		cmds.Add("ECHO", strconv.Itoa(i)+value)
	}
	w, err := conn.CmdsOfBatch(&cmds)
	if err != nil {
		t.Fatal(err)
	}
	h := &readsOnCaller{done: make(chan error, 1)}
	if err := c.Send(testCtx(t), w, h); err != nil {
		t.Fatal(err)
	}
	if err := <-h.done; err != nil || h.replies != n {
		t.Fatalf("Done(%v) after %d replies of %d", err, h.replies, n)
	}
	if !h.onCaller {
		t.Fatal("the replies of a large submission were read by the reader goroutine, not by the caller who waited for them")
	}
}
