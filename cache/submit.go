package cache

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// submission is commands the Cache encodes and sends together, with the
// facts of each (cmds.Fact: its Info, kind, keys) made where it is
// encoded, beside its bytes, so that the connection that takes it does
// not read the bytes back (wire.Known). The zero submission is empty and
// ready; reset keeps its memory.
type submission struct {
	cmds  resp.Cmds
	facts wire.Facts
}

// add encodes the command args (its name first) and its fact.
func (b *submission) add(args ...string) {
	b.facts.Strings(&b.cmds, args)
}

// addCmd adds a command encoded already, whose fact f was made where it
// was encoded (or read from its bytes once, for a caller's resp.Cmd).
func (b *submission) addCmd(cmd resp.Cmd, f cmds.Fact) {
	b.cmds.AddCmd(cmd)
	b.facts.Add(f)
}

// wire returns the submission with its facts; valid until the next
// reset or add.
func (b *submission) wire() (wire.Cmds, error) {
	if err := b.cmds.Err(); err != nil {
		return wire.Cmds{}, err
	}
	return wire.Make(b.cmds.Bytes(), b.cmds.Len(), b.facts.List()), nil
}

func (b *submission) reset() {
	b.cmds.Reset()
	b.facts.Reset()
}

var submissionPool = sync.Pool{New: func() any { return new(submission) }}

func getSubmission() *submission { return submissionPool.Get().(*submission) }

func putSubmission(b *submission) {
	b.reset()
	if cap(b.cmds.Bytes()) <= 64<<10 {
		submissionPool.Put(b)
	}
}

// sendStrings sends the commands of cmds (each given as strings) as one
// submission on tx and gives the reply at to fn (see replyAt).
func sendStrings(ctx context.Context, tx wire.Sender, at int, fn func(resp.Value) error, cmds ...[]string) error {
	b := getSubmission()
	defer putSubmission(b)
	for _, args := range cmds {
		b.add(args...)
	}
	w, err := b.wire()
	if err != nil {
		return err
	}
	return replyAt(ctx, tx, w, at, fn)
}

// PING, encoded once, and its fact.
var (
	pingCmd     = resp.Command(nil, "PING")
	pingFact, _ = cmds.Inspect([][]byte{[]byte("PING")}, nil)
)

// pingFactOf is PING's fact (it has no keys), for wire.DoFuncMade.
func pingFactOf(keys []cmds.Span) (cmds.Fact, []cmds.Span) { return pingFact, keys }

// ping sends PING on tx and waits for its reply: the Cache's own (a
// health check, Sync), unseen by hooks.
func ping(ctx context.Context, tx wire.Sender) error {
	return wire.DoFuncMade(ctx, wire.OwnSender(tx), pingCmd, pingFactOf, nil)
}

// senderWrap, when set (by a test, to see them), wraps the Sender the
// Cache's submissions go through on each connection it dials.
var senderWrap atomic.Pointer[func(wire.Sender) wire.Sender]

// senderOf returns the Sender of the Cache's submissions on cn: cn
// itself, unless a test wraps it.
func senderOf(cn wire.Sender) wire.Sender {
	if f := senderWrap.Load(); f != nil {
		return (*f)(cn)
	}
	return cn
}
