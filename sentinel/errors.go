package sentinel

import (
	"errors"
	"strings"
)

// Errors matched with errors.Is.
var (
	// ErrUnknownMaster is matched when a sentinel answers that it
	// monitors no master set of the name asked for.
	ErrUnknownMaster = errors.New("sentinel: no master set of that name")
	// ErrSentinelAuth is matched when a sentinel refuses the sentinel
	// credentials (Options.SentinelUsername, SentinelPassword): a wrong
	// password, or none given where one is required.
	ErrSentinelAuth = errors.New("sentinel: the sentinel refused the credentials")
	// ErrNoSentinel is matched when no sentinel could tell the primary:
	// every one failed or none is configured.
	ErrNoSentinel = errors.New("sentinel: no sentinel told the primary")
	// ErrNotPrimary is matched when the node the sentinels name as the
	// primary says it is not one (ROLE, or HELLO's role): a sentinel
	// that has not yet learnt of a failover, or one that lies. Nothing
	// is sent on such a connection but the role check.
	ErrNotPrimary = errors.New("sentinel: the node named as primary is not a primary")
	// ErrFailover is matched while a failover of the master set is under
	// way (a sentinel announced the replica it promotes) and neither
	// the promoted replica nor a new primary is ready: the old primary is
	// not dialed meanwhile, so that nothing is written to it after the
	// replica stops copying it.
	ErrFailover = errors.New("sentinel: failover in progress")
	// ErrStaleSentinel is matched when a sentinel's configuration of
	// the master set is older (its config-epoch lower) than one another
	// sentinel told: it has not yet learnt of a failover, or is cut off
	// from the others. Its answer is passed over.
	ErrStaleSentinel = errors.New("sentinel: the sentinel's configuration is out of date")
	// ErrClosed is matched after Close.
	ErrClosed = errors.New("sentinel: master set closed")
	// ErrBadOptions is matched by Options or a URL that no master set
	// can be made from; nothing is dialed.
	ErrBadOptions = errors.New("sentinel: bad options")
)

// SentinelError is one sentinel's failure to tell the primary.
type SentinelError struct {
	// Addr is the sentinel's address.
	Addr string
	// Err is what went wrong: a dial or handshake error, a server error
	// (matching ErrSentinelAuth when it was the credentials), or
	// ErrUnknownMaster.
	Err error
}

func (e *SentinelError) Error() string { return "sentinel " + e.Addr + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *SentinelError) Unwrap() error { return e.Err }

// ResolveError is the failure to learn a master set's primary from any
// sentinel: each sentinel asked, and why it could not tell. It matches
// ErrNoSentinel, and what any sentinel's failure matches
// (ErrUnknownMaster, ErrSentinelAuth, a dial error).
type ResolveError struct {
	// Master is the master set's name.
	Master string
	// Tried holds a *SentinelError per sentinel asked, in order.
	Tried []error
}

func (e *ResolveError) Error() string {
	var b strings.Builder
	b.WriteString("sentinel: no sentinel told the primary of ")
	b.WriteString(e.Master)
	for i, err := range e.Tried {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(err.Error())
	}
	return b.String()
}

// Unwrap returns the sentinels' failures.
func (e *ResolveError) Unwrap() []error { return e.Tried }

// Is makes errors.Is(err, ErrNoSentinel) true.
func (e *ResolveError) Is(target error) bool { return target == ErrNoSentinel }

// RoleError reports a node that the sentinels named as primary but that
// answers another role.
type RoleError struct {
	// Addr is the node's address; Role what it answered ("slave",
	// "replica", "sentinel", …).
	Addr, Role string
}

func (e *RoleError) Error() string {
	return "sentinel: " + e.Addr + " was named primary but answers role " + e.Role
}

// Is makes errors.Is(err, ErrNotPrimary) true.
func (e *RoleError) Is(target error) bool { return target == ErrNotPrimary }
