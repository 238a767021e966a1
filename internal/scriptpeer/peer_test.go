package scriptpeer

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestReadCommand(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"*1\r\n$4\r\nPING\r\n", []string{"PING"}},
		{"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n", []string{"SET", "k", ""}},
		{"*2\r\n$4\r\nECHO\r\n$4\r\na\r\nb\r\n", []string{"ECHO", "a\r\nb"}},
		{"*0\r\n", []string{}},
	}
	for _, c := range cases {
		got, err := ReadCommand(bufio.NewReader(strings.NewReader(c.in)))
		if err != nil || strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
			t.Fatalf("ReadCommand(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestReadCommandErrors(t *testing.T) {
	cases := []struct {
		in   string
		want error
	}{
		{"", io.EOF},
		{"*2\r\n$4\r\nPING\r\n", io.ErrUnexpectedEOF},
		{"*1\r\n$4\r\nPI", io.ErrUnexpectedEOF},
		{"*1", io.ErrUnexpectedEOF},
		{"PING\r\n", ErrProtocol},
		{"*1\r\n:4\r\n", ErrProtocol},
		{"*-1\r\n", ErrProtocol},
		{"*x\r\n", ErrProtocol},
		{"*1\r\n$4\r\nPINGxx", ErrProtocol},
		{"*1\r\n$99999999999\r\n", ErrProtocol},
		{"*1\n", ErrProtocol},
	}
	for _, c := range cases {
		_, err := ReadCommand(bufio.NewReader(strings.NewReader(c.in)))
		if !errors.Is(err, c.want) {
			t.Fatalf("ReadCommand(%q) error %v, want %v", c.in, err, c.want)
		}
	}
}

func TestListenScript(t *testing.T) {
	var served atomic.Int32
	addr := Listen(t, func(c net.Conn) {
		served.Add(1)
		r := bufio.NewReader(c)
		for {
			args, err := ReadCommand(r)
			if err != nil {
				return
			}
			switch strings.ToUpper(args[0]) {
			case "SUBSCRIBE": // answer, then push a frame nobody asked for
				io.WriteString(c, ">3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n")
				io.WriteString(c, ">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$2\r\nhi\r\n")
			default:
				io.WriteString(c, "-ERR scripted\r\n")
			}
		}
	})
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(30 * time.Second)) // only against a hang
		io.WriteString(c, "*2\r\n$9\r\nSUBSCRIBE\r\n$1\r\nc\r\n*1\r\n$3\r\nFOO\r\n")
		want := ">3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n" +
			">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$2\r\nhi\r\n-ERR scripted\r\n"
		got := make([]byte, len(want))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
			t.Fatalf("got %q, %v", got, err)
		}
		c.Close()
	}
	if served.Load() != 2 {
		t.Fatalf("served %d connections", served.Load())
	}
}

// A handler blocked in a read is released by cleanup, which waits for it.
func TestListenCleanupWaits(t *testing.T) {
	var finished atomic.Bool
	started := make(chan struct{})
	t.Run("inner", func(t *testing.T) {
		addr := Listen(t, func(c net.Conn) {
			defer finished.Store(true)
			close(started)
			_, _ = ReadCommand(bufio.NewReader(c)) // blocks until cleanup
		})
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "*1\r\n") // half a command, so the handler waits
		<-started
	})
	if !finished.Load() {
		t.Fatal("cleanup returned before the handler")
	}
}
