package conn

import "context"

// Connect is NewClient for a URL (see ParseURL: redis://, rediss://,
// valkey://, valkeys://, unix://), with the Client's defaults:
//
//	c, err := conn.Connect(ctx, "redis://:secret@127.0.0.1:6379/0")
//
// A URL that does not parse is an error naming what is wrong, without the
// password; nothing is dialed.
func Connect(ctx context.Context, url string) (*Client, error) {
	opts, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	return NewClient(ctx, opts)
}

// Options returns the options the Client dials with (MinBackoff,
// MaxBackoff and BlockingConns with their defaults filled in), for
// another connection to the same server with the same credentials and
// hooks (pubsub.Subscribe, say). They hold the password: they print
// with it redacted, but do not log their fields one by one.
func (cl *Client) Options() Options { return cl.opts }
