package dispatch

import (
	"context"
	"sync"

	"github.com/echomq/echomq-go/resp"
)

// Executor runs scripts; the emq verbs call it. Scripted (EVALSHA) and
// Native (EMQ.<NAME> module commands) implement it with the same replies.
type Executor interface {
	// Eval runs s with a's keys and args; fn gets the reply on the
	// caller's goroutine, valid only during fn. A script's error reply is
	// returned as a *resp.ServerError (text byte for byte) and fn is not
	// called.
	Eval(ctx context.Context, s *Script, a *Args, fn func(resp.Value) error) error
	// EvalBatch runs every call in b as one pipeline; replies in b, in
	// the order added.
	EvalBatch(ctx context.Context, b *Batch) error
}

var (
	_ Executor = (*Scripted)(nil)
	_ Executor = (*Native)(nil)
)

// bufPool holds the command buffers of Eval, for both executors.
var bufPool = sync.Pool{New: func() any { return new(cmdBuf) }}

type cmdBuf struct{ b []byte }
