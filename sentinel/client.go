package sentinel

import (
	"context"
	"errors"

	"github.com/echomq/echomq-go/conn"
)

// Client is a conn.Client whose connections go to a master set's
// primary, with the MasterSet that follows it. Every method of
// conn.Client applies (it is a conn.Sender); Close closes both.
type Client struct {
	*conn.Client
	set *MasterSet
}

// NewClient starts a MasterSet (see New) and a conn.Client over its
// Options.
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
	return &Client{Client: cl, set: set}, nil
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

// Close closes the conn.Client, then the MasterSet.
func (c *Client) Close() error {
	return errors.Join(c.Client.Close(), c.set.Close())
}
