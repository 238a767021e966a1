package emq

import (
	"context"
	"errors"
	"strings"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// ExecutorChoice is how [Open] picks the executor of a queue's
// transitions when [WithExecutor] names none.
type ExecutorChoice int

const (
	// ExecutorAuto, the default, asks the server (COMMAND INFO) whether
	// it has the native module's commands: every EMQ.* command the queue
	// sends natively. If so the transitions go through
	// [dispatch.NewNative], else through [dispatch.NewScripted].
	ExecutorAuto ExecutorChoice = iota
	// ExecutorScript sends every transition as a script (EVALSHA),
	// without asking the server.
	ExecutorScript
	// ExecutorNative sends the transitions as the module's commands; Open
	// fails with [ErrNoNative] when the server lacks one of them.
	ExecutorNative
)

// String returns "auto", "script" or "native".
func (c ExecutorChoice) String() string {
	switch c {
	case ExecutorAuto:
		return "auto"
	case ExecutorScript:
		return "script"
	case ExecutorNative:
		return "native"
	}
	return "ExecutorChoice(?)"
}

// ParseExecutorChoice reads "auto", "script" or "native".
func ParseExecutorChoice(s string) (ExecutorChoice, error) {
	switch s {
	case "auto":
		return ExecutorAuto, nil
	case "script":
		return ExecutorScript, nil
	case "native":
		return ExecutorNative, nil
	}
	return 0, &ArgError{Arg: "executor", Reason: "want auto, script or native, not " + `"` + s + `"`}
}

// WithExecutorChoice picks the executor when [WithExecutor] names none:
// [ExecutorAuto] (the default), [ExecutorScript] or [ExecutorNative].
// Reap and the operations (requeue, delete, trim, stats) run as scripts
// whatever the choice.
func WithExecutorChoice(c ExecutorChoice) Option { return func(o *options) { o.choice = c } }

// ErrNoNative is returned by Open with [ExecutorNative] when the server
// lacks a command of the native module; the error names the missing
// commands.
var ErrNoNative = errors.New("emq: the server has no native EMQ.* commands (load the module: make -C module, --loadmodule module/emq.so)")

// nativeScripts are the transitions a queue sends through its executor:
// each must exist as a command for the native executor to serve the queue.
var nativeScripts = []*dispatch.Script{
	scriptEnqueue, scriptClaim, scriptComplete, scriptRetry, scriptPromote,
	scriptClaimBatch, scriptExtend, scriptEnqueueAt, scriptCompleteBatch, scriptEnqueueBatch, scriptSettleClaim,
}

// NativeMissing asks the server (COMMAND INFO) for the native module's
// commands and returns those it lacks, in lower case: none when the native
// executor can serve a queue.
func NativeMissing(ctx context.Context, s conn.Sender) ([]string, error) {
	args := []string{"COMMAND", "INFO"}
	for _, sc := range nativeScripts {
		args = append(args, strings.ToLower(sc.NativeCommand()))
	}
	var missing []string
	err := wire.DoFunc(ctx, s, resp.Command(nil, args...), func(v resp.Value) error {
		if v.Type != resp.Array || len(v.Elems) != len(nativeScripts) {
			return badReply("COMMAND INFO", v, "an array of one entry per command")
		}
		for i, e := range v.Elems {
			if e.Type == resp.Null || (e.Type == resp.Array && len(e.Elems) == 0) {
				missing = append(missing, args[2+i])
			}
		}
		return nil
	})
	return missing, err
}

// HasNative reports whether the server has every native command a queue
// sends (see [NativeMissing]).
func HasNative(ctx context.Context, s conn.Sender) (bool, error) {
	missing, err := NativeMissing(ctx, s)
	return err == nil && len(missing) == 0, err
}

// chooseExecutor returns the executor of a queue opened without
// WithExecutor.
func chooseExecutor(ctx context.Context, s conn.Sender, c ExecutorChoice) (dispatch.Executor, error) {
	switch c {
	case ExecutorScript:
		return dispatch.NewScripted(s), nil
	case ExecutorNative, ExecutorAuto:
		missing, err := NativeMissing(ctx, s)
		var se *resp.ServerError
		if c == ExecutorAuto && errors.As(err, &se) {
			return dispatch.NewScripted(s), nil // COMMAND refused (ACL, renamed): scripts
		}
		if err != nil {
			return nil, err
		}
		if len(missing) == 0 {
			return dispatch.NewNative(s), nil
		}
		if c == ExecutorNative {
			return nil, errors.Join(ErrNoNative, errors.New("emq: missing: "+strings.Join(missing, ", ")))
		}
		return dispatch.NewScripted(s), nil
	}
	return nil, &ArgError{Arg: "executor", Reason: "unknown choice " + c.String()}
}

// IsNative reports whether the queue's transitions go through a
// [dispatch.Native] executor.
func (q *Queue) IsNative() bool {
	_, ok := q.exec.(*dispatch.Native)
	return ok
}
