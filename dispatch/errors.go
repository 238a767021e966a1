package dispatch

import (
	"errors"
	"strconv"

	"github.com/echomq/echomq-go/resp"
)

// maxSends bounds how many times one command is sent while its script
// keeps answering NOSCRIPT: the first send and two re-sends, each after
// the script was (re)loaded. Only a server that keeps losing its script
// cache (SCRIPT FLUSH in a loop) exhausts it.
const maxSends = 3

// ErrReloadLimit is matched (errors.Is) by the error of a call whose
// script still answered NOSCRIPT after being loaded maxSends-1 times.
var ErrReloadLimit = errors.New("dispatch: script still missing after reloading it")

// LoadError reports a SCRIPT LOAD that failed: the script does not
// compile (Err is the server's *resp.ServerError, text byte for byte),
// the connection broke (Err matches conn.ErrBroken), or the server
// answered another SHA than ours. Every caller waiting on that load gets
// the same *LoadError. A load refused with an ERR reply (a script that
// does not compile) is never tried again by that executor: later calls
// that meet NOSCRIPT get the same *LoadError.
type LoadError struct {
	Script string // the script's name
	SHA    string // the SHA we expected
	Err    error  // the cause
}

// Error names the script and quotes the cause.
func (e *LoadError) Error() string {
	return "dispatch: SCRIPT LOAD of script " + strconv.Quote(e.Script) + " (sha " + e.SHA + ") failed: " + e.Err.Error()
}

// Unwrap returns the cause, so errors.Is and errors.As see through.
func (e *LoadError) Unwrap() error { return e.Err }

// reloadLimitError is the error of a call that exhausted maxSends.
type reloadLimitError struct {
	script, sha string
}

func (e *reloadLimitError) Error() string {
	return ErrReloadLimit.Error() + ": script " + strconv.Quote(e.script) + " (sha " + e.sha +
		") answered NOSCRIPT " + strconv.Itoa(maxSends) + " times"
}

func (e *reloadLimitError) Is(target error) bool { return target == ErrReloadLimit }

// isNoScript reports whether v is a NOSCRIPT error reply, without
// allocating.
func isNoScript(v resp.Value) bool {
	return v.IsError() && hasCode(v.Str, resp.CodeNoScript)
}

// errIsNoScript reports whether err is, or wraps, the *resp.ServerError
// of a NOSCRIPT reply. conn.DoFunc returns it bare; a Sender that wraps
// its errors (fmt.Errorf("...: %w", err)) must not turn the reload off.
func errIsNoScript(err error) bool {
	se, ok := serverError(err)
	return ok && hasCode(se.Msg, resp.CodeNoScript)
}

// serverError returns the *resp.ServerError that err is or wraps. The
// direct assertion is the fast path for the bare error conn.DoFunc
// returns; errors.AsType (errors.As without reflection) walks a wrapped
// chain. Neither allocates unless an error in the chain has an As method.
func serverError(err error) (*resp.ServerError, bool) {
	if se, ok := err.(*resp.ServerError); ok || err == nil {
		return se, ok
	}
	return errors.AsType[*resp.ServerError](err)
}

// hasCode reports whether msg's first word is code.
func hasCode[T string | []byte](msg T, code string) bool {
	return len(msg) >= len(code) && string(msg[:len(code)]) == code &&
		(len(msg) == len(code) || msg[len(code)] == ' ')
}
