package conn_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"sync"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
	"github.com/echomq/echomq-go/submit"
)

// memory is a fake server for tests: it answers GET, SET and DEL from a
// map. Any code written against conn.Sender runs on it.
type memory struct {
	mu sync.Mutex
	m  map[string]string
}

// send answers every command of a submission, in order, then ends it.
func (f *memory) send(_ context.Context, cmds conn.Cmds, h conn.Handler) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, args := range cmds.All() {
		h.Reply(i, f.answer(args))
	}
	h.Done(nil)
	return nil
}

func (f *memory) answer(args [][]byte) resp.Value {
	switch strings.ToUpper(string(args[0])) {
	case "GET":
		if v, ok := f.m[string(args[1])]; ok {
			return resp.Value{Type: resp.BulkString, Str: []byte(v)}
		}
		return resp.Value{Type: resp.Null}
	case "SET":
		f.m[string(args[1])] = string(args[2])
		return resp.Value{Type: resp.SimpleString, Str: []byte("OK")}
	case "DEL":
		n := 0
		for _, k := range args[1:] {
			if _, ok := f.m[string(k)]; ok {
				delete(f.m, string(k))
				n++
			}
		}
		return resp.Value{Type: resp.Integer, Int: int64(n)}
	}
	return resp.Value{Type: resp.Error, Str: []byte("ERR unknown command '" + string(args[0]) + "'")}
}

// A fake Sender implemented outside the module, for tests: SendFunc
// supplies Do, DoFunc and DoInt over its Send. A wrapper around another
// Sender is written the same way.
func ExampleSendFunc() {
	ctx := context.Background()
	fake := &memory{m: map[string]string{}}
	var s conn.Sender = conn.SendFunc(fake.send)

	// A wrapper: count the commands sent through it, then pass them on.
	var sent int
	counting := conn.SendFunc(func(ctx context.Context, cmds conn.Cmds, h conn.Handler) error {
		sent += cmds.Len()
		return s.Send(ctx, cmds, h)
	})

	if _, err := counting.Do(ctx, "SET", "greeting", "hello"); err != nil {
		log.Fatal(err)
	}
	v, err := counting.Do(ctx, "GET", "greeting")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v.Text())
	n, err := counting.DoInt(ctx, resp.Command(nil, "DEL", "greeting", "other"))
	fmt.Println(n, err)
	_, err = counting.Do(ctx, "FLUSHALL")
	fmt.Println(err)
	fmt.Println(sent, "commands")
	// Output:
	// hello
	// 1 <nil>
	// ERR unknown command 'FLUSHALL'
	// 4 commands
}

// Hooks wrap every command and pipeline: here a log line per command,
// with its reply or error.
func ExampleHook() {
	ctx := context.Background()
	logCmd := conn.Hook{
		AfterCommand: func(_ context.Context, cmd conn.CommandInfo, reply resp.Value, _ time.Duration, err error) {
			fmt.Printf("%s -> %q, refused: %v\n", cmd.Name, reply.Text(), errors.Is(err, conn.ErrCommandRefused))
		},
	}
	c, err := conn.Dial(ctx, conn.Options{Addr: srv.Addr, Hooks: []conn.Hook{logCmd}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	c.Do(ctx, "SET", "example:hook", 42)
	c.Do(ctx, "GET", "example:hook")
	c.Do(ctx, "SUBSCRIBE", "news") // refused: it would change the reply model
	// Output:
	// SET -> "OK", refused: false
	// GET -> "42", refused: false
	// SUBSCRIBE -> "", refused: true
}

// prefixed is a wrapping middleware written outside the module: it puts
// every key of GET, SET and DEL under a tenant's prefix, re-encoding each
// submission it is given and making the new one with submit.New, which
// checks the bytes once (the connection then reads their facts, so the
// guard and hooks see the rewritten keys).
type prefixed struct {
	next   conn.Sender
	prefix string
}

func (p prefixed) send(ctx context.Context, cmds conn.Cmds, h conn.Handler) error {
	var b []byte
	for _, args := range cmds.All() {
		b = resp.AppendArrayHeader(b, len(args))
		del := strings.EqualFold(string(args[0]), "DEL")
		for j, a := range args {
			if j == 1 || j > 1 && del { // the keys
				b = resp.AppendBulkString(b, p.prefix+string(a))
				continue
			}
			b = resp.AppendBulk(b, a)
		}
	}
	sub, err := submit.New(b, cmds.Len())
	if err != nil {
		return err
	}
	return p.next.Send(ctx, sub, h)
}

// A proxy over a fake: the middleware rewrites the submissions it is
// given, the fake answers them; neither is part of the module.
func ExampleSendFunc_middleware() {
	ctx := context.Background()
	fake := &memory{m: map[string]string{}}
	var s conn.Sender = conn.SendFunc(prefixed{next: conn.SendFunc(fake.send), prefix: "tenant-a:"}.send)

	if _, err := s.Do(ctx, "SET", "greeting", "hello"); err != nil {
		log.Fatal(err)
	}
	v, err := s.Do(ctx, "GET", "greeting")
	fmt.Println(v.Text(), err)
	_, present := fake.m["tenant-a:greeting"]
	fmt.Println(present)
	// Output:
	// hello <nil>
	// true
}
