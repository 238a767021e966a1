package cluster

import (
	"fmt"
	"strings"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/replica"
)

// Options configure a Client.
type Options struct {
	// Seeds are the addresses (host:port) of some of the cluster's
	// nodes; the Client learns the rest from them. Default: Node.Addr.
	Seeds []string
	// Node configures the connection to each primary (a conn.Client per
	// primary): auth, TLS, timeouts, redial backoff, blocking
	// connections. Its Addr is a seed when Seeds is empty.
	Node conn.Options
	// MaxRedirects bounds how many MOVED and ASK redirects one command
	// follows in a row before it fails with an error matching
	// ErrRedirectLimit: a redirect loop. A TRYAGAIN or CLUSTERDOWN wait
	// starts the count again, and NOSCRIPT reloads do not count (see
	// RetryTimeout and the package doc). Default 5.
	MaxRedirects int
	// RefreshInterval is how often the topology is read again, with ±20%
	// jitter, besides after MOVED and connection faults. Default 30 s;
	// negative turns the periodic refresh off.
	RefreshInterval time.Duration
	// RetryBackoff is the first wait after TRYAGAIN or CLUSTERDOWN,
	// doubled for each retry of the same command, up to 1 s. Default 20 ms.
	RetryBackoff time.Duration
	// RetryTimeout bounds how long one command is sent again after
	// TRYAGAIN or CLUSTERDOWN, from its first such refusal: a slot
	// migration answers TRYAGAIN for as long as it lasts, so this is the
	// longest migration (or failover) a call waits out before it fails
	// with an error matching ErrRedirectLimit. The call's ctx ends the
	// wait sooner. Default 60 s; negative: only ctx bounds it.
	RetryTimeout time.Duration
	// Reads, when on (a Route other than replica.Primary), sends the
	// read-only submissions to a replica of their slot's shard, over a
	// connection that sent READONLY (see package replica for what a
	// reader gives up). Off by default.
	Reads replica.Options
}

func (o Options) withDefaults() Options {
	if len(o.Seeds) == 0 && o.Node.Addr != "" {
		o.Seeds = []string{o.Node.Addr}
	}
	if o.MaxRedirects <= 0 {
		o.MaxRedirects = 5
	}
	if o.RefreshInterval == 0 {
		o.RefreshInterval = 30 * time.Second
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = 20 * time.Millisecond
	}
	if o.RetryTimeout == 0 {
		o.RetryTimeout = 60 * time.Second
	}
	return o
}

// ParseURL reads Options from one or more URLs of cluster nodes,
// separated by commas (redis://, rediss://, valkey://, valkeys://; see
// conn.ParseURL): the first gives the connection options, every one a
// seed. A database other than 0 is refused: a cluster has only one.
func ParseURL(raw string) (Options, error) {
	var o Options
	for i, u := range strings.Split(raw, ",") {
		co, err := conn.ParseURL(strings.TrimSpace(u))
		if err != nil {
			return Options{}, err
		}
		if co.Network == "unix" {
			return Options{}, fmt.Errorf("cluster: a cluster node is reached over TCP, not a unix socket")
		}
		if co.DB != 0 {
			return Options{}, fmt.Errorf("cluster: database %d: a cluster has only database 0", co.DB)
		}
		if i == 0 {
			o.Node = co
		}
		o.Seeds = append(o.Seeds, co.Addr)
	}
	return o, nil
}
