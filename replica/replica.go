package replica

import (
	"errors"
	"fmt"
	"time"
)

// Route says where a client sends its read-only commands.
type Route uint8

// The routes. The zero Route is Primary: replica reads are off.
const (
	// Primary sends every command to the primary (the default).
	Primary Route = iota
	// Random sends each read to a replica picked at random.
	Random
	// Latency sends each read to the replica with the lowest round trip
	// time, as the last probe measured it (PING), or to any of the
	// replicas as near (within 250 µs or half the lowest round trip of
	// it, whichever is more), picked at random: equally near replicas
	// share the reads rather than one taking them all until the next
	// probe.
	Latency
	// Zone sends each read to a replica in Options.Zone, the client's
	// availability zone, as the replica reports its own (Valkey 8.1's
	// availability_zone, read from INFO server); to the lowest-latency
	// replica when none is in the zone (or none reports one); among
	// several, as Latency picks.
	Zone
)

// String names the route.
func (r Route) String() string {
	switch r {
	case Primary:
		return "primary"
	case Random:
		return "random"
	case Latency:
		return "latency"
	case Zone:
		return "zone"
	}
	return fmt.Sprintf("Route(%d)", uint8(r))
}

// Options turn replica reads on and say how they are routed. The zero
// Options are off: every command goes to the primary.
type Options struct {
	// Route is where reads go; Primary (the zero value) turns replica
	// reads off.
	Route Route
	// Zone is the client's own availability zone, for Route Zone.
	Zone string
	// Strict makes a read fail with an error matching ErrNoReplica when
	// no replica can take it (none known, or every one down), instead
	// of going to the primary. Nothing is sent anywhere then.
	Strict bool
	// ProbeInterval is how often the replicas are listed again and
	// probed (PING for the latency, INFO server for the zone, a redial
	// of those that were down). Default 1 s.
	ProbeInterval time.Duration
}

// On reports whether replica reads are on.
func (o Options) On() bool { return o.Route != Primary }

// Interval is ProbeInterval, or its default.
func (o Options) Interval() time.Duration {
	if o.ProbeInterval <= 0 {
		return time.Second
	}
	return o.ProbeInterval
}

// ErrNoReplica is matched by the error of a read made with
// Options.Strict when no replica could take it: none is known or every
// one is down. Nothing was sent; the read may be retried.
var ErrNoReplica = errors.New("replica: no replica can take the read")

// ParseRoute reads a Route by its name (String's): primary, random,
// latency or zone.
func ParseRoute(s string) (Route, error) {
	for r := Primary; r <= Zone; r++ {
		if s == r.String() {
			return r, nil
		}
	}
	return Primary, fmt.Errorf("replica: unknown route %q (want primary, random, latency or zone)", s)
}
