package cache

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/dial"
	"github.com/echomq/echomq-go/resp"
)

// invalidateChannel is where RESP2 tracking with REDIRECT publishes.
const invalidateChannel = "__redis__:invalidate"

// link is the RESP2 invalidation connection: subscribed to
// __redis__:invalidate, named by the data connection's CLIENT TRACKING …
// REDIRECT <id>. Its reader goroutine applies every invalidation; sync
// (PING, answered in order after every message already sent) tells a
// caller when the invalidations the server sent before it have been
// applied.
type link struct {
	nc net.Conn
	rd *resp.Reader
	id int64

	mu      sync.Mutex
	waiters []chan struct{} // PINGs sent, oldest first
	err     error

	onInvalidate func(keys []resp.Value, all bool)
	done         chan struct{} // closed when the reader has stopped
	wg           sync.WaitGroup
}

// errLinkBroken is the cause when the invalidation connection fails.
var errLinkBroken = errors.New("cache: invalidation connection lost")

// dialLink connects with RESP2, learns its client id and subscribes.
func dialLink(ctx context.Context, o conn.Options, onInvalidate func([]resp.Value, bool)) (*link, error) {
	cfg := dial.Config{
		Network: o.Network, Addr: o.Addr, Username: o.Username, Password: o.Password,
		DB: o.DB, ClientName: o.ClientName, Protocol: 2, TLS: o.TLS,
		Timeout: o.DialTimeout, Dialer: o.Dialer,
	}.WithDefaults()
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	nc, err := dial.Transport(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("cache: dial invalidation connection: %w", err)
	}
	l := &link{nc: nc, rd: resp.NewReader(nc), onInvalidate: onInvalidate, done: make(chan struct{})}
	if _, err := dial.Handshake(ctx, nc, l.rd, cfg); err != nil {
		nc.Close()
		return nil, fmt.Errorf("cache: invalidation connection handshake: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	b := resp.AppendCommand(nil, "CLIENT", "ID")
	b = resp.AppendCommand(b, "SUBSCRIBE", invalidateChannel)
	if _, err := nc.Write(b); err != nil {
		nc.Close()
		return nil, fmt.Errorf("cache: invalidation connection: %w", err)
	}
	v, err := l.rd.Next()
	if err == nil {
		l.id, err = v.AsInt()
	}
	if err == nil {
		v, err = l.rd.Next()
		if err == nil && (v.Type != resp.Array || len(v.Elems) < 1 || !v.Elems[0].Equal("subscribe")) {
			err = fmt.Errorf("cache: SUBSCRIBE %s answered %s", invalidateChannel, v.Type)
		}
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("cache: invalidation connection: %w", err)
	}
	nc.SetDeadline(time.Time{})
	l.wg.Add(1)
	go l.readLoop()
	return l, nil
}

// readLoop applies invalidation messages and answers sync's PINGs.
func (l *link) readLoop() {
	defer l.wg.Done()
	var err error
	for {
		var v resp.Value
		v, err = l.rd.Next()
		if err != nil {
			break
		}
		if v.Type != resp.Array || len(v.Elems) == 0 {
			continue
		}
		switch {
		case v.Elems[0].Equal("message") && len(v.Elems) == 3 && v.Elems[1].Equal(invalidateChannel):
			p := v.Elems[2]
			if p.IsNull() {
				l.onInvalidate(nil, true)
			} else if p.Type == resp.Array {
				l.onInvalidate(p.Elems, false)
			} else {
				l.onInvalidate([]resp.Value{p}, false)
			}
		case v.Elems[0].Equal("pong"):
			l.mu.Lock()
			if len(l.waiters) > 0 {
				w := l.waiters[0]
				l.waiters = l.waiters[1:]
				close(w)
			}
			l.mu.Unlock()
		}
	}
	l.mu.Lock()
	l.err = fmt.Errorf("%w: %w", errLinkBroken, err)
	for _, w := range l.waiters {
		close(w)
	}
	l.waiters = nil
	l.mu.Unlock()
	close(l.done)
}

// sync returns once every invalidation the server sent this connection
// before sync was called has been applied.
func (l *link) sync(ctx context.Context) error {
	w := make(chan struct{})
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return l.err
	}
	l.waiters = append(l.waiters, w)
	l.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := l.nc.Write(resp.AppendCommand(nil, "PING"))
	l.mu.Unlock()
	if err != nil {
		l.nc.Close()
		return fmt.Errorf("%w: %w", errLinkBroken, err)
	}
	select {
	case <-w:
	case <-ctx.Done():
		return ctx.Err()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// close closes the connection and waits for the reader.
func (l *link) close() {
	l.nc.Close()
	l.wg.Wait()
}
