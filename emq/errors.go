package emq

import (
	"errors"
	"strconv"

	"github.com/echomq/echomq-go/dispatch"
	"github.com/echomq/echomq-go/resp"
)

// ErrStale is returned by Complete, Retry and Extend when the script answers
// 0: the row is no longer active under the caller's token, because the
// lease expired and the job was reaped (and perhaps claimed again), or it
// was already completed or retried. Nothing was written.
var ErrStale = errors.New("emq: stale token: the lease was lost")

// ErrKind matches a server error whose code is EMQKIND: an id outside the
// JOB namespace reached the enqueue gate. The error itself is a
// *[ScriptError] whose text is the server's, byte for byte.
var ErrKind = errors.New("emq: EMQKIND")

// ErrArg matches an argument refused as malformed: by a script (a server
// error whose code is EMQARG, a *[ScriptError]) or host-side before
// anything was sent (an *[ArgError]).
var ErrArg = errors.New("emq: EMQARG")

// ErrLayout matches a lane script's refusal of a queue that still holds
// an earlier lanes layout's keys (a server error whose code is
// EMQLAYOUT, a *[ScriptError]): nothing was written; drain the queue's
// lanes and delete those keys (jobs/PROTOCOL-L4.md, Lanes).
var ErrLayout = errors.New("emq: EMQLAYOUT")

// ErrFence matches the refusal of a server whose {emq}:version names
// another major wire; the error is a *[FenceError] naming both versions.
var ErrFence = errors.New("emq: wire fence refused")

// ScriptError is a server error reply to a transition script: the text is
// the server's, byte for byte ("EMQKIND job id must be JOB-namespaced").
// It matches [ErrKind] or [ErrArg] by its code, and unwraps to the
// *resp.ServerError.
type ScriptError struct {
	Script string            // the script's name: "enqueue", "claim", ...
	Err    *resp.ServerError // the server's reply
}

// Error returns the server's text unchanged.
func (e *ScriptError) Error() string { return e.Err.Msg }

// Unwrap returns the *resp.ServerError.
func (e *ScriptError) Unwrap() error { return e.Err }

// Is matches [ErrKind] for an EMQKIND reply, [ErrArg] for an EMQARG one
// and [ErrLayout] for an EMQLAYOUT one.
func (e *ScriptError) Is(target error) bool {
	switch target {
	case ErrKind:
		return e.Err.HasCode(resp.CodeEMQKind)
	case ErrArg:
		return e.Err.HasCode("EMQARG")
	case ErrLayout:
		return e.Err.HasCode("EMQLAYOUT")
	}
	return false
}

// wrapErr turns a script's server error reply, as the executor returns
// it (a bare *resp.ServerError, or one an executor or sender wrapped),
// into a *ScriptError; other errors (I/O, context, a failed load: a
// *dispatch.LoadError, though it may wrap the server's refusal) pass
// unchanged.
func wrapErr(script string, err error) error {
	if se, ok := err.(*resp.ServerError); ok {
		return &ScriptError{Script: script, Err: se} // the fast path: a bare reply
	}
	if err == nil {
		return nil
	}
	return wrapErrSlow(script, err)
}

// wrapErrSlow is wrapErr for an error that is not a bare reply.
func wrapErrSlow(script string, err error) error {
	if _, load := errors.AsType[*dispatch.LoadError](err); load {
		return err
	}
	if se, ok := errors.AsType[*resp.ServerError](err); ok {
		return &ScriptError{Script: script, Err: se}
	}
	return err
}

// ArgError is an argument refused host-side, before anything was sent: a
// lease under a millisecond, a count below one. It matches [ErrArg].
type ArgError struct {
	Arg    string // the parameter: "lease", "n", ...
	Reason string // what is wrong with it
}

// Error names the argument and the problem.
func (e *ArgError) Error() string { return "emq: invalid " + e.Arg + ": " + e.Reason }

// Is matches [ErrArg].
func (e *ArgError) Is(target error) bool { return target == ErrArg }

// FenceError refuses a server whose {emq}:version holds a wire of another
// major version than this package's [Version]. It matches [ErrFence].
type FenceError struct {
	Server string // the value found in {emq}:version
	Client string // the wire this package speaks, [Version]
}

// Error names both versions.
func (e *FenceError) Error() string {
	return "emq: wire fence: the server holds " + strconv.Quote(e.Server) +
		" in " + VersionKey + ", this client speaks " + strconv.Quote(e.Client) +
		": another major version"
}

// Is matches [ErrFence].
func (e *FenceError) Is(target error) bool { return target == ErrFence }

// ReplyError is a reply of a shape the script never sends: a sign of a
// peer speaking another wire under the same keys.
type ReplyError struct {
	Script string    // the script or command
	Reply  string    // the reply, rendered for people
	Want   string    // what was expected
	Type   resp.Type // the reply's type
}

// Error describes the unexpected reply.
func (e *ReplyError) Error() string {
	if e.Type == 0 {
		return "emq: " + e.Script + ": unexpected reply, want " + e.Want
	}
	return "emq: " + e.Script + ": unexpected reply " + strconv.Quote(e.Reply) +
		" (" + e.Type.String() + "), want " + e.Want
}

// badReply builds a *ReplyError for v.
func badReply(script string, v resp.Value, want string) error {
	r := v.String()
	if len(r) > clipLen {
		r = r[:clipLen] + "..."
	}
	return &ReplyError{Script: script, Reply: r, Want: want, Type: v.Type}
}

// checkID returns an *IDError (matching [ErrInvalidID]) when id is not a
// branded id. It is called before any key is built from id.
func checkID(id string) error {
	if p := idProblem(id); p != "" {
		return &IDError{ID: id, Reason: p}
	}
	return nil
}
