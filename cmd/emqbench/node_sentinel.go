package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/cliconn"
	"github.com/echomq/echomq-go/sentinel"
)

// isSentinelURL reports whether raw names a master set through its
// sentinels (redis+sentinel://, rediss+sentinel://, valkey+sentinel://,
// valkeys+sentinel://), which sentinel.ParseURL reads.
func isSentinelURL(raw string) bool {
	scheme, _, ok := strings.Cut(raw, "://")
	return ok && strings.HasSuffix(strings.ToLower(scheme), "+sentinel")
}

// openSentinelNode is openNode for a sentinel URL. The first of the run's
// connections is a sentinel.Client: its MasterSet follows the primary
// across failovers, and every other connection (cfg.conns, the e2e
// producers, pubsub, cache) dials through that MasterSet's Options, as a
// conn.Client that redials the current primary after a fault. The probe
// is one plain connection to the primary at start (HELLO, the protocol).
func openSentinelNode(ctx context.Context, cfg config, nd *node) (*node, error) {
	so, err := sentinel.ParseURL(cfg.url)
	if err != nil {
		return nil, fmt.Errorf("-url: %v", err)
	}
	so.ClientName = "emqbench"
	cl, err := sentinel.NewClient(ctx, so)
	if err != nil {
		return nil, sentinelExplain(so, err)
	}
	nd.sentinel = cl
	nd.opts = cl.MasterSet().Options()
	nd.opts.ClientName = "emqbench"
	probe, err := conn.Dial(ctx, nd.opts)
	if err != nil {
		nd.close()
		return nil, sentinelExplain(so, err)
	}
	nd.probe = probe
	nd.conns = append(nd.conns, cl)
	for len(nd.conns) < cfg.conns {
		c, err := nd.dial(ctx)
		if err != nil {
			nd.close()
			return nil, sentinelExplain(so, err)
		}
		nd.conns = append(nd.conns, c)
	}
	nd.identify(ctx)
	nd.desc = fmt.Sprintf("%s, primary of master set %q at %s (through sentinels %s)",
		nd.server, so.MasterName, cl.MasterSet().Primary(), strings.Join(so.Sentinels, ","))
	return nd, nil
}

// sentinelExplain is cliconn.Explain for a master set: the sentinels'
// own errors (unknown master set, sentinel credentials, none reachable)
// are said as they are; a data node's are explained as for -url.
func sentinelExplain(so sentinel.Options, err error) error {
	var re *sentinel.ResolveError
	if errors.As(err, &re) || errors.Is(err, sentinel.ErrBadOptions) {
		return fmt.Errorf("master set %q: %v", so.MasterName, err)
	}
	return cliconn.Explain(fmt.Sprintf("the primary of master set %q", so.MasterName), so.Options, err)
}
