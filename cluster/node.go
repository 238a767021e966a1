package cluster

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/drain"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// node is one primary: its redialing connection, dialed on first use,
// and its script cache's load record; or one replica, whose connection
// the replica pool made.
type node struct {
	addr string
	// gate counts the calls in flight on the connection: a node that
	// left the topology is closed once they have ended (Client.retire).
	// A replica's is its pool member's.
	gate *drain.Gate

	mu       sync.Mutex
	cl       *conn.Client
	dialErr  error
	retryAt  time.Time // no new dial before this after a failed one
	backoff  time.Duration
	closed   bool
	scripts  map[string]*nodeScript // by SHA
	loadSeq  atomic.Uint64          // completed script loads on this node
	loadsRun atomic.Uint64          // SCRIPT LOADs sent to this node
}

// nodeScript is one script's load record on one node.
type nodeScript struct {
	loadedAt uint64        // loadSeq when it was last loaded; 0: never
	flight   chan struct{} // closed when the load in flight ends
	err      error         // the last load's error
}

// client returns the node's connection, dialing it the first time. A
// failed dial is tried again only after a backoff; meanwhile calls fail
// at once with an error matching conn.ErrNotConnected.
func (n *node) client(ctx context.Context, opts conn.Options) (*conn.Client, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cl != nil {
		return n.cl, nil
	}
	if n.closed {
		return nil, conn.ErrClosed
	}
	if time.Now().Before(n.retryAt) {
		return nil, fmt.Errorf("%w: %s: %w", conn.ErrNotConnected, n.addr, n.dialErr)
	}
	opts.Addr = n.addr
	opts.DB = 0
	cl, err := conn.NewClient(ctx, opts)
	if err != nil {
		n.backoff = min(max(2*n.backoff, 50*time.Millisecond), 2*time.Second)
		n.dialErr, n.retryAt = err, time.Now().Add(n.backoff)
		return nil, fmt.Errorf("%w: %s: %w", conn.ErrNotConnected, n.addr, err)
	}
	n.cl, n.backoff = cl, 0
	return cl, nil
}

// close closes the node's connection for good.
func (n *node) close() error {
	n.mu.Lock()
	cl := n.cl
	n.cl, n.closed = nil, true
	n.mu.Unlock()
	if cl != nil {
		return cl.Close()
	}
	return nil
}

// ensureScript makes sure the script sha is loaded on the node, for a
// command that was sent when loadSeq was sent and answered NOSCRIPT.
// When a load of it completed since that send, the command is simply
// sent again; else the caller joins the load in flight or leads one. So
// however many commands meet NOSCRIPT at once, the node sees one SCRIPT
// LOAD per script, until it loses the script again.
func (n *node) ensureScript(ctx context.Context, cl *conn.Client, sha, src string, sent uint64) error {
	for {
		n.mu.Lock()
		if n.scripts == nil {
			n.scripts = map[string]*nodeScript{}
		}
		st := n.scripts[sha]
		if st == nil {
			st = &nodeScript{}
			n.scripts[sha] = st
		}
		if st.loadedAt > sent {
			n.mu.Unlock()
			return nil
		}
		if ch := st.flight; ch != nil {
			n.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return ctx.Err()
			}
			n.mu.Lock()
			err := st.err
			n.mu.Unlock()
			if err != nil {
				return err
			}
			continue
		}
		st.flight = make(chan struct{})
		n.mu.Unlock()
		err := n.load(cl, sha, src)
		n.mu.Lock()
		st.err = err
		if err == nil {
			st.loadedAt = n.loadSeq.Add(1)
		}
		close(st.flight)
		st.flight = nil
		n.mu.Unlock()
		return err
	}
}

// load sends SCRIPT LOAD and checks the SHA the node returns. Its
// context is no caller's: others wait on it.
func (n *node) load(cl *conn.Client, sha, src string) error {
	n.loadsRun.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return wire.DoFunc(ctx, wire.OwnSender(cl), resp.Command(nil, "SCRIPT", "LOAD", src), func(v resp.Value) error {
		if !bytes.EqualFold(v.Str, []byte(sha)) {
			return fmt.Errorf("cluster: %s returned SHA %q for a script whose SHA is %s", n.addr, v.Str, sha)
		}
		return nil
	})
}
