package emq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// ExecutorChoice is how [Open] picks the executor of a queue's
// transitions when [WithExecutor] names none.
type ExecutorChoice int

const (
	// ExecutorAuto, the default, asks the server ([CheckNative]) whether
	// its EMQ.* commands are the native module's, at a version this
	// client speaks. If so the transitions go through the module's
	// commands, else through [dispatch.NewScripted]. When the module is
	// unloaded later, the queue falls back to the scripts (see
	// [ErrNativeGone]). On a cluster, the module's commands only when
	// every primary has the module; one without it: the scripts.
	ExecutorAuto ExecutorChoice = iota
	// ExecutorScript sends every transition as a script (EVALSHA),
	// without asking the server.
	ExecutorScript
	// ExecutorNative sends the transitions as the module's commands; Open
	// fails with [ErrNoNative] when [CheckNative] finds them missing or
	// not the module's (on a cluster: on any primary, each named by a
	// *[NativeNodeError]). When the module is unloaded later, or the
	// queue's slot moves to a node without it, each call fails with
	// [ErrNativeGone]: nothing falls back.
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

// ErrNoNative is matched by the error of [CheckNative], and of Open with
// [ExecutorNative], when the server's EMQ.* commands are not the native
// module's at a version this client speaks: some are missing (the error
// names them), another module registered them, or the module "emq" has
// another version.
var ErrNoNative = errors.New("emq: the server has no native EMQ.* commands (load the module: make -C module, --loadmodule module/emq.so)")

// ErrNativeGone is matched by the error of a transition sent as the
// module's command that the server no longer knows ("ERR unknown
// command": the module was unloaded). The server refused the command
// without running anything, so sending it again as a script is safe:
// under [ExecutorAuto] the queue does so at once, and sends every later
// transition as a script (the call succeeds, and reopening the queue
// picks the module again once it is back); under [ExecutorNative] the
// call fails with this error, and each later call is sent as the
// module's command again (it works once the module is loaded again). A batch that the unload split (some of its
// calls ran, later ones were refused) is never sent again: its
// EvalBatch fails with this error, its replies left in the batch, and
// later transitions go as scripts (under [ExecutorAuto]).
var ErrNativeGone = errors.New("emq: the native module's command is gone from the server (MODULE UNLOAD)")

// The native module this client speaks: the name and version module/emq.c
// registers (RedisModule_Init), which MODULE LIST reports and COMMAND DOCS
// names as each EMQ.* command's module.
const (
	nativeModule  = "emq"
	nativeVersion = 1
)

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

// HasNative reports whether [CheckNative] finds the native module: false
// with a nil error when it is missing or another module's.
func HasNative(ctx context.Context, s conn.Sender) (bool, error) {
	err := CheckNative(ctx, s)
	if errors.Is(err, ErrNoNative) {
		return false, nil
	}
	return err == nil, err
}

// CheckNative asks the server whether the native module serves a queue:
// every EMQ.* command a queue sends exists ([NativeMissing]), COMMAND DOCS
// names the module "emq" as each one's owner, and MODULE LIST gives that
// module the version this client speaks (1). It returns nil when so; an
// error matching [ErrNoNative] that says what differs (the missing
// commands, the module that owns them, the module's version); or the
// server's refusal of COMMAND, COMMAND DOCS or MODULE LIST (an ACL, a
// renamed command) as a *resp.ServerError. A module of another name that
// registers the same commands is not the native module, whatever it
// answers.
//
// On a cluster (s a *cluster.Client: it lists its primaries and lends a
// connection to each) every primary is asked, since a queue's calls go to
// whichever serves its slot, and a slot migration or a failover may move
// it to any other: nil only when each has the module. Otherwise the error
// joins one *[NativeNodeError] per primary that differs, each naming the
// node and matching what that node's check matched ([ErrNoNative], or
// its *resp.ServerError). A node that cannot be reached fails the check
// with its connection's error.
func CheckNative(ctx context.Context, s conn.Sender) error {
	if p, ok := s.(primarySet); ok {
		if addrs := p.Primaries(); len(addrs) > 0 {
			return checkPrimaries(ctx, p, addrs)
		}
	}
	return checkNode(ctx, s)
}

// primarySet is a sender over several primaries, as a *cluster.Client is.
type primarySet interface {
	Primaries() []string
	Node(ctx context.Context, addr string) (*conn.Client, error)
}

// NativeNodeError is the part of [CheckNative]'s error on a cluster that
// one primary gave: its address, and why the native module does not
// serve there. It matches what Err matches ([ErrNoNative], or a
// *resp.ServerError).
type NativeNodeError struct {
	Addr string // the primary, host:port as the cluster names it
	Err  error  // that primary's CheckNative error
}

// Error names the node and its error.
func (e *NativeNodeError) Error() string { return "emq: primary " + e.Addr + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *NativeNodeError) Unwrap() error { return e.Err }

// checkPrimaries runs checkNode on each primary of p.
func checkPrimaries(ctx context.Context, p primarySet, addrs []string) error {
	var errs []error
	for _, addr := range addrs {
		c, err := p.Node(ctx, addr)
		if err != nil {
			return fmt.Errorf("emq: native module check on primary %s: %w", addr, err)
		}
		err = checkNode(ctx, c)
		_, refused := errors.AsType[*resp.ServerError](err)
		switch {
		case err == nil:
		case refused || errors.Is(err, ErrNoNative):
			errs = append(errs, &NativeNodeError{Addr: addr, Err: err})
		default:
			return fmt.Errorf("emq: native module check on primary %s: %w", addr, err)
		}
	}
	return errors.Join(errs...)
}

// checkNode is CheckNative on one node.
func checkNode(ctx context.Context, s conn.Sender) error {
	missing, err := NativeMissing(ctx, s)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: missing: %s", ErrNoNative, strings.Join(missing, ", "))
	}
	if err := checkOwners(ctx, s); err != nil {
		return err
	}
	return checkVersion(ctx, s)
}

// checkOwners asks COMMAND DOCS for each native command's module.
func checkOwners(ctx context.Context, s conn.Sender) error {
	args := []string{"COMMAND", "DOCS"}
	for _, sc := range nativeScripts {
		args = append(args, strings.ToLower(sc.NativeCommand()))
	}
	var foreign []string
	err := wire.DoFunc(ctx, s, resp.Command(nil, args...), func(v resp.Value) error {
		owners := map[string]string{}
		if !pairs(v, func(k, d resp.Value) bool {
			mod, _ := field(d, "module")
			owners[strings.ToLower(k.Text())] = mod.Text()
			return true
		}) {
			return badReply("COMMAND DOCS", v, "a map of command docs")
		}
		for _, name := range args[2:] {
			if mod, ok := owners[name]; !ok || mod != nativeModule {
				foreign = append(foreign, fmt.Sprintf("%s is module %q's", name, mod))
			}
		}
		return nil
	})
	if err == nil && len(foreign) > 0 {
		err = fmt.Errorf("%w: not the module %q: %s", ErrNoNative, nativeModule, strings.Join(foreign, ", "))
	}
	return err
}

// checkVersion asks MODULE LIST for the version of the module "emq".
func checkVersion(ctx context.Context, s conn.Sender) error {
	ver, found := int64(0), false
	err := wire.DoFunc(ctx, s, resp.Command(nil, "MODULE", "LIST"), func(v resp.Value) error {
		if v.Type != resp.Array && v.Type != resp.Set {
			return badReply("MODULE LIST", v, "an array of modules")
		}
		for _, m := range v.Elems {
			if name, _ := field(m, "name"); name.Text() == nativeModule {
				vv, _ := field(m, "ver")
				ver, found = vv.Int, vv.Type == resp.Integer
			}
		}
		return nil
	})
	switch {
	case err != nil:
		return err
	case !found:
		return fmt.Errorf("%w: MODULE LIST has no module %q with a version", ErrNoNative, nativeModule)
	case ver != nativeVersion:
		return fmt.Errorf("%w: module %q has version %d; this client speaks version %d", ErrNoNative, nativeModule, ver, nativeVersion)
	}
	return nil
}

// pairs calls fn with each key and value of v, a RESP3 map or a RESP2
// flat array of pairs, until fn returns false; false when v is neither.
func pairs(v resp.Value, fn func(k, v resp.Value) bool) bool {
	if v.Type != resp.Map && v.Type != resp.Array || len(v.Elems)%2 != 0 {
		return false
	}
	for i := 0; i < len(v.Elems); i += 2 {
		if !fn(v.Elems[i], v.Elems[i+1]) {
			break
		}
	}
	return true
}

// field returns the value of key name in v, a map or a flat array of
// pairs.
func field(v resp.Value, name string) (resp.Value, bool) {
	var out resp.Value
	found := false
	pairs(v, func(k, x resp.Value) bool {
		if found = k.Text() == name; found {
			out = x
		}
		return !found
	})
	return out, found
}

// chooseExecutor returns the executor of a queue opened without
// WithExecutor.
func chooseExecutor(ctx context.Context, s conn.Sender, c ExecutorChoice) (dispatch.Executor, error) {
	switch c {
	case ExecutorScript:
		return dispatch.NewScripted(s), nil
	case ExecutorNative, ExecutorAuto:
		err := CheckNative(ctx, s)
		if c == ExecutorAuto {
			if _, refused := errors.AsType[*resp.ServerError](err); refused || errors.Is(err, ErrNoNative) {
				return dispatch.NewScripted(s), nil // no module, or not ours, or COMMAND/MODULE refused: scripts
			}
		}
		if err != nil {
			return nil, err
		}
		x := &nativeExec{native: dispatch.NewNative(s)}
		if c == ExecutorAuto {
			x.script = dispatch.NewScripted(s)
		}
		return x, nil
	}
	return nil, &ArgError{Arg: "executor", Reason: "unknown choice " + c.String()}
}

// nativeExec is the executor Open picks for the native module: its
// commands, until the server answers one with "unknown command" (the
// module was unloaded, see ErrNativeGone); from then on the scripts when
// script is set (ExecutorAuto), else ErrNativeGone.
type nativeExec struct {
	native *dispatch.Native
	script *dispatch.Scripted // nil: no fallback (ExecutorNative)
	gone   atomic.Bool        // a native command was unknown
}

// Eval sends s natively, or as a script once the module is gone. A call
// refused as an unknown command ran nothing: it is sent again as a
// script, or fails with ErrNativeGone.
func (x *nativeExec) Eval(ctx context.Context, s *dispatch.Script, a *dispatch.Args, fn func(resp.Value) error) error {
	return x.eval(func(native bool) error {
		if native {
			return x.native.Eval(ctx, s, a, fn)
		}
		return x.script.Eval(ctx, s, a, fn)
	})
}

// EvalInReply is Eval through the executors' EvalInReply (see
// dispatch.Scripted.EvalInReply).
func (x *nativeExec) EvalInReply(ctx context.Context, s *dispatch.Script, a *dispatch.Args, fn func(resp.Value) error) error {
	return x.eval(func(native bool) error {
		if native {
			return x.native.EvalInReply(ctx, s, a, fn)
		}
		return x.script.EvalInReply(ctx, s, a, fn)
	})
}

// eval runs send natively, or as a script (native false) once the
// module is gone.
func (x *nativeExec) eval(send func(native bool) error) error {
	if x.script != nil && x.gone.Load() {
		return send(false)
	}
	err := send(true)
	if err == nil {
		return nil
	}
	se, ok := errors.AsType[*resp.ServerError](err)
	if !ok || !unknownNative(se.Msg) {
		return err
	}
	x.gone.Store(true)
	if x.script != nil {
		return send(false) // nothing ran: a safe re-send
	}
	return goneError(se.Msg)
}

// EvalBatch sends b natively, or as scripts once the module is gone. A
// batch whose every call was refused as an unknown command ran nothing:
// it is sent again as scripts, or fails with ErrNativeGone. One that the
// unload split (some calls ran) is not sent again: ErrNativeGone.
func (x *nativeExec) EvalBatch(ctx context.Context, b *dispatch.Batch) error {
	if x.script != nil && x.gone.Load() {
		return x.script.EvalBatch(ctx, b)
	}
	if err := x.native.EvalBatch(ctx, b); err != nil {
		return err
	}
	unknown, msg := 0, ""
	for _, v := range b.Replies() {
		if v.Type == resp.Error && unknownNative(string(v.Str)) {
			unknown, msg = unknown+1, string(v.Str)
		}
	}
	if unknown == 0 {
		return nil
	}
	x.gone.Store(true)
	if unknown == b.Len() && x.script != nil {
		return x.script.EvalBatch(ctx, b) // nothing ran: a safe re-send
	}
	return goneError(msg)
}

// unknownNative reports whether msg is a server's refusal of an EMQ.*
// command it does not know.
func unknownNative(msg string) bool {
	const prefix = "ERR unknown command '"
	return len(msg) > len(prefix)+4 && msg[:len(prefix)] == prefix && strings.EqualFold(msg[len(prefix):len(prefix)+4], "emq.")
}

func goneError(msg string) error { return fmt.Errorf("%w: %s", ErrNativeGone, msg) }

// IsNative reports whether the queue's transitions go through the native
// module's commands: a [dispatch.Native] executor, or the one Open picked
// while the module is there.
func (q *Queue) IsNative() bool {
	switch x := q.exec.(type) {
	case *dispatch.Native:
		return true
	case *nativeExec:
		return !x.gone.Load() || x.script == nil
	}
	return false
}

// decodesInReply reports whether x is one of this module's executors,
// which hand a transition's fn to package wire's calls as it is: a
// worker's settle_claim through it may then be decoded as its reply is
// read (wire.InReply), once, straight into the round's jobs, instead of
// copied whole into the call's arena first. Any other executor (a
// user's) gets the worker's context unmarked.
func decodesInReply(x dispatch.Executor) bool {
	_, ok := x.(inReplyEvaluator)
	return ok
}

// inReplyEvaluator is an executor of this module's that can decode a
// reply as it is read: dispatch.Native, dispatch.Scripted, nativeExec.
type inReplyEvaluator interface {
	EvalInReply(ctx context.Context, s *dispatch.Script, a *dispatch.Args, fn func(resp.Value) error) error
}
