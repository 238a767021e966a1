package cache

import (
	"errors"

	"github.com/echomq/echomq-go/conn"
)

// ErrClosed is returned by every call on a Cache after Close.
var ErrClosed = errors.New("cache: closed")

// ErrNotConnected is conn.ErrNotConnected: the Cache has no tracked
// connection at the moment (between a fault and a successful redial).
// Nothing was sent, and nothing is served from memory meanwhile, since
// nothing can tell the Cache what changed.
var ErrNotConnected = conn.ErrNotConnected

// ErrNotCacheable is matched (errors.Is) by the error of a cached read of
// a command that cannot be cached (see NotCacheableError). Nothing was
// sent.
var ErrNotCacheable = errors.New("cache: command not cacheable")

// NotCacheableError names a command refused by a cached read, and why.
type NotCacheableError struct {
	// Command is the command's name in upper case.
	Command string
	// Reason says why it cannot be cached.
	Reason string
}

// Error names the command and the reason.
func (e *NotCacheableError) Error() string {
	return "cache: " + e.Command + " not cacheable: " + e.Reason
}

// Is makes errors.Is(err, ErrNotCacheable) true.
func (e *NotCacheableError) Is(target error) bool { return target == ErrNotCacheable }

// ErrTTL is returned by a cached read given a TTL that is not positive.
// Nothing was sent.
var ErrTTL = errors.New("cache: TTL must be positive")

// ErrOptions is matched by the error of New given options it cannot use.
var ErrOptions = errors.New("cache: invalid options")

// ErrRefused is matched by the error of a command DoFunc will not send on
// the tracked connection: CLIENT TRACKING and CLIENT CACHING, which would
// change what the server tells the Cache, and SWAPDB, which changes what
// the database holds with no invalidation (see the package
// documentation). Nothing was sent.
var ErrRefused = errors.New("cache: command refused on the tracked connection")
