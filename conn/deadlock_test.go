package conn_test

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/scriptpeer"
	"github.com/echomq/echomq-go/pipeline"
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
	c := dial(t, conn.Options{Addr: syncPeer(t), WriteTimeout: 3 * time.Second, ReadTimeout: 3 * time.Second})
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
