package sentinel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/drain"
	"github.com/echomq/echomq-go/internal/readers"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/replica"
	"github.com/echomq/echomq-go/resp"
)

// Client is a conn.Client whose connections go to a master set's
// primary, with the MasterSet that follows it. Every method of
// conn.Client applies (it is a conn.Sender); Close closes both.
//
// With Options.Reads on, Send, Do, DoFunc and DoInt send the read-only
// submissions to a replica (see package replica), everything else to the
// primary; the embedded conn.Client (cl.Client) always goes to the
// primary, for a read that must see the latest write.
type Client struct {
	*conn.Client
	set    *MasterSet
	reads  *readers.Pool // nil: replica reads off
	strict bool

	kick chan struct{} // a failover: list the replicas again now
	stop context.CancelFunc
	done chan struct{}
}

// NewClient starts a MasterSet (see New) and a conn.Client over its
// Options; with Options.Reads on, it lists the replicas and connects to
// them before it returns.
func NewClient(ctx context.Context, opts Options) (*Client, error) {
	set, err := New(ctx, opts)
	if err != nil {
		return nil, err
	}
	cl, err := conn.NewClient(ctx, set.Options())
	if err != nil {
		set.Close()
		return nil, err
	}
	c := &Client{Client: cl, set: set}
	if o := set.opts; o.Reads.On() {
		c.reads = readers.New(o.Options, false, o.Reads)
		c.strict = o.Reads.Strict
		c.kick = make(chan struct{}, 1)
		c.done = make(chan struct{})
		set.mu.Lock()
		set.onSwitch = c.wake
		set.mu.Unlock()
		c.listReplicas(ctx)
		life, cancel := context.WithCancel(context.Background())
		c.stop = cancel
		go c.probeLoop(life, o.Reads.Interval())
	}
	return c, nil
}

// Connect is NewClient for a URL (see ParseURL).
func Connect(ctx context.Context, url string) (*Client, error) {
	opts, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	return NewClient(ctx, opts)
}

// MasterSet returns the MasterSet the Client dials through: its Options
// serve a pubsub.Subscription or a cache.Cache of the same primary.
func (c *Client) MasterSet() *MasterSet { return c.set }

// Replicas returns the addresses of the replicas that take reads now
// (listed by the sentinels, connected, answering the last probe); nil
// when replica reads are off.
func (c *Client) Replicas() []string {
	if c.reads == nil {
		return nil
	}
	return c.reads.Addrs()
}

// Close closes the replicas' connections, the conn.Client, then the
// MasterSet.
func (c *Client) Close() error {
	if c.reads != nil {
		c.stop()
		<-c.done
		c.reads.Close()
	}
	return errors.Join(c.Client.Close(), c.set.Close())
}

// Send sends a submission to the primary, or, with replica reads on and
// every command of it read-only, to a replica (see package replica). A
// replica that cannot take it (its connection down: nothing was sent) is
// passed over; with none left it goes to the primary, or with
// Reads.Strict fails with an error matching replica.ErrNoReplica.
func (c *Client) Send(ctx context.Context, w conn.Cmds, h conn.Handler) error {
	if c.reads == nil {
		return c.Client.Send(ctx, w, h)
	}
	return c.sendRead(ctx, w, h)
}

// sendRead is Send with replica reads on.
func (c *Client) sendRead(ctx context.Context, w wire.Cmds, h wire.Handler) error {
	w, known, err := wire.Known(w)
	if err != nil {
		return fmt.Errorf("sentinel: %w", err)
	}
	defer wire.Release(known)
	if !readers.ReadOnly(w.Facts()) {
		return c.Client.Send(ctx, w, h)
	}
	var last error
	var skip *readers.Member
	for range 3 {
		m := c.reads.Pick(nil, skip)
		if m == nil {
			break
		}
		if !m.Gate().Enter() { // left the pool since the pick
			skip = m
			continue
		}
		mc := m.Client()
		if mc == nil { // closed since the pick
			m.Gate().Leave()
			skip = m
			continue
		}
		// Counted in flight until h is done: a replica that leaves the
		// pool now is closed only after this read's reply.
		th := drain.Track(h, m.Gate())
		err := mc.Send(ctx, w, th)
		if err != nil {
			drain.Untrack(th)
		}
		if err == nil || !readers.NotSent(err) || ctx.Err() != nil {
			return err
		}
		m.Down()
		skip, last = m, err
	}
	if c.strict {
		if last != nil {
			return fmt.Errorf("%w: %w", replica.ErrNoReplica, last)
		}
		return replica.ErrNoReplica
	}
	return c.Client.Send(ctx, w, h)
}

// Do is conn.Client.Do, routed as Send routes.
func (c *Client) Do(ctx context.Context, args ...any) (resp.Value, error) {
	if c.reads == nil {
		return c.Client.Do(ctx, args...)
	}
	return wire.Do(ctx, c, args...)
}

// DoFunc is conn.Client.DoFunc, routed as Send routes.
func (c *Client) DoFunc(ctx context.Context, cmd resp.Cmd, fn func(resp.Value) error) error {
	if c.reads == nil {
		return c.Client.DoFunc(ctx, cmd, fn)
	}
	return wire.DoFunc(ctx, c, cmd, fn)
}

// DoInt is conn.Client.DoInt, routed as Send routes.
func (c *Client) DoInt(ctx context.Context, cmd resp.Cmd) (int64, error) {
	if c.reads == nil {
		return c.Client.DoInt(ctx, cmd)
	}
	return wire.DoInt(ctx, c, cmd)
}

// wake has the replicas listed again now (a failover).
func (c *Client) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// listReplicas asks the sentinels for the replicas and probes them. A
// failed listing keeps the replicas known.
func (c *Client) listReplicas(ctx context.Context) {
	to := c.set.opts.SentinelTimeout
	if addrs, err := c.set.Replicas(ctx); err == nil {
		c.reads.Set(addrs)
	}
	c.reads.Probe(ctx, to)
}

// probeLoop lists and probes the replicas every interval, and at once
// after a failover.
func (c *Client) probeLoop(ctx context.Context, every time.Duration) {
	defer close(c.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.kick:
		}
		c.listReplicas(ctx)
	}
}
