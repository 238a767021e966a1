package pubsub

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/resp"
)

// Subscription is a set of channels, patterns and sharded channels
// subscribed to on a connection of its own, and the messages they
// bring, in the order the server sent them. It reconnects by itself
// after a fault, restores every subscription and reports the gap (see
// GapError). Its methods are safe for concurrent use.
type Subscription struct {
	opts  Options     // defaults applied
	hooks []conn.Hook // Options.Hooks and Observer's, for every link
	q     *queue
	b     builder // the current link's reader's alone

	// opSem serialises changes to the set with the commands that carry
	// them to the server (and a new link's resubscription), so the set
	// and the server's state change in the same order.
	opSem chan struct{}
	set   [nkinds]map[string]struct{} // what the caller asked for; under opSem

	mu      sync.Mutex
	cur     *link         // nil during an outage
	ready   chan struct{} // closed once cur is set
	closed  bool
	lastErr error // the last redial's error, during an outage

	received   atomic.Uint64
	reconnects atomic.Uint64
	dropped    atomic.Uint64

	life   context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New connects a Subscription, so that a wrong address or password is
// reported at once, and starts the supervisor that reconnects it after
// faults. It subscribes to nothing yet: call Subscribe, PSubscribe or
// SSubscribe. Close releases it.
func New(ctx context.Context, opts Options) (*Subscription, error) {
	s := &Subscription{
		opts:  opts.withDefaults(),
		hooks: hooksOf(opts.Options),
		opSem: make(chan struct{}, 1),
		ready: make(chan struct{}),
	}
	s.q = newQueue(s.opts.Buffer)
	for k := range s.set {
		s.set[k] = make(map[string]struct{})
	}
	s.life, s.cancel = context.WithCancel(context.Background())
	l, err := s.connect(ctx)
	if err != nil {
		s.cancel()
		return nil, err
	}
	s.wg.Add(1)
	go s.supervise(l)
	return s, nil
}

// Subscribe is New then Subscribe in one call: it connects a
// Subscription with the connection options opts (a conn.Client's, from
// its Options method, or conn.ParseURL's) and the subscription's
// defaults, and subscribes it to channels, at least one. When it
// returns, the server has confirmed every channel. On error nothing is
// left open. For a Buffer or PingInterval of your own, call New.
//
//	sub, err := pubsub.Subscribe(ctx, client.Options(), "news")
func Subscribe(ctx context.Context, opts conn.Options, channel ...string) (*Subscription, error) {
	if len(channel) == 0 {
		return nil, errNoNames
	}
	s, err := New(ctx, Options{Options: opts})
	if err != nil {
		return nil, err
	}
	if err := s.Subscribe(ctx, channel...); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Subscribe subscribes to channels and returns once the server has
// confirmed every one: messages published on them after it returns are
// received. During an outage it waits for the connection to be restored
// (honouring ctx). On a server error (a channel the ACL user may not
// read) nothing was subscribed and the channels are not kept. When ctx
// ends first, the channels stay in the subscription's set (the server
// may yet confirm them, and a reconnect restores them): Unsubscribe
// drops them.
func (s *Subscription) Subscribe(ctx context.Context, channel ...string) error {
	return s.subscribe(ctx, channels, channel)
}

// PSubscribe subscribes to glob-style patterns ("news.*"), as Subscribe
// does to channels. A message that matches a pattern carries it in
// Message.Pattern; one that matches several patterns, or a pattern and
// a channel, is received once for each.
func (s *Subscription) PSubscribe(ctx context.Context, pattern ...string) error {
	return s.subscribe(ctx, patterns, pattern)
}

// SSubscribe subscribes to sharded channels (Redis 7 and Valkey), which
// receive what SPUBLISH publishes, as Subscribe does to channels.
func (s *Subscription) SSubscribe(ctx context.Context, channel ...string) error {
	return s.subscribe(ctx, shards, channel)
}

// Unsubscribe unsubscribes from channels, or from every channel when
// none is named, and returns once the server has confirmed it. Messages
// received before the confirmation stay in the buffer and are still
// delivered; none published after it are. Unsubscribing from a
// channel not subscribed to, or from anything when subscribed to
// nothing, succeeds (on Redis and Valkey alike). During an outage it
// returns at once: the channels are not restored.
func (s *Subscription) Unsubscribe(ctx context.Context, channel ...string) error {
	return s.unsubscribe(ctx, channels, channel)
}

// PUnsubscribe is Unsubscribe for patterns.
func (s *Subscription) PUnsubscribe(ctx context.Context, pattern ...string) error {
	return s.unsubscribe(ctx, patterns, pattern)
}

// SUnsubscribe is Unsubscribe for sharded channels.
func (s *Subscription) SUnsubscribe(ctx context.Context, channel ...string) error {
	return s.unsubscribe(ctx, shards, channel)
}

// errNoNames is the error of a subscribe call that names nothing.
var errNoNames = errors.New("pubsub: subscribe to nothing")

// tooLong refuses a name longer than the server takes in an argument
// (conn.Options.MaxArg): sent, the server would close the subscriber's
// connection, and every resubscription after it.
func (s *Subscription) tooLong(cmd string, names []string) error {
	max := s.opts.MaxArg
	if max == 0 {
		max = conn.DefaultMaxArg
	}
	for _, n := range names {
		if max >= 0 && len(n) > max {
			return &conn.ArgTooLargeError{Command: cmd, Size: len(n), Max: max}
		}
	}
	return nil
}

func (s *Subscription) subscribe(ctx context.Context, k kind, names []string) error {
	if len(names) == 0 {
		return errNoNames
	}
	if err := s.tooLong(kinds[k].sub, names); err != nil {
		return err
	}
	first := true
	var added []string
	for {
		if err := s.lock(ctx); err != nil {
			return err
		}
		if first {
			for _, n := range names {
				if _, ok := s.set[k][n]; !ok {
					s.set[k][n] = struct{}{}
					added = append(added, n)
				}
			}
			first = false
		} else {
			// A retry after a lost connection: an Unsubscribe since may
			// have dropped some.
			names = slices.DeleteFunc(slices.Clone(names), func(n string) bool {
				_, ok := s.set[k][n]
				return !ok
			})
			if len(names) == 0 {
				s.unlock()
				return nil
			}
		}
		l, ready := s.current()
		if l == nil {
			s.unlock()
			if err := s.await(ctx, ready); err != nil {
				return err
			}
			continue // the new link restored the set; confirm on it
		}
		o, err := l.send(ctx, kinds[k].subbed, append([]string{kinds[k].sub}, names...)...)
		s.unlock()
		if err == nil {
			err = o.wait(ctx)
		}
		var se *resp.ServerError
		var pe *conn.PanicError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &se), errors.As(err, &pe):
			// Refused by the server, or by a hook's panic before
			// anything was sent: not subscribed.
			s.forget(k, added)
			return err
		case errors.Is(err, conn.ErrBroken):
			continue // wait for the next link
		case errors.Is(err, conn.ErrClosed):
			return ErrClosed
		}
		return err
	}
}

func (s *Subscription) unsubscribe(ctx context.Context, k kind, names []string) error {
	if err := s.tooLong(kinds[k].unsub, names); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	if len(names) == 0 {
		for n := range s.set[k] {
			names = append(names, n)
		}
	}
	for _, n := range names {
		delete(s.set[k], n)
	}
	l, _ := s.current()
	if l == nil || len(names) == 0 {
		s.unlock()
		return nil
	}
	o, err := l.send(ctx, kinds[k].unsubbed, append([]string{kinds[k].unsub}, names...)...)
	s.unlock()
	if err == nil {
		err = o.wait(ctx)
	}
	switch {
	case resp.IsCode(err, "NOSUB"):
		// Valkey refuses an unsubscribe on a connection subscribed to
		// nothing ("-NOSUB … not in subscribed mode") where Redis
		// confirms it: either way nothing is subscribed now.
		return nil
	case errors.Is(err, conn.ErrBroken):
		return nil // the next connection does not restore them
	case errors.Is(err, conn.ErrClosed):
		return ErrClosed
	}
	return err
}

// forget drops names from the set after the server refused them.
func (s *Subscription) forget(k kind, names []string) {
	if s.lock(context.Background()) != nil {
		return
	}
	for _, n := range names {
		delete(s.set[k], n)
	}
	s.unlock()
}

// lock takes opSem, honouring ctx; it fails with ErrClosed after Close.
func (s *Subscription) lock(ctx context.Context) error {
	select {
	case s.opSem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.life.Done():
		return ErrClosed
	}
	if s.life.Err() != nil {
		s.unlock()
		return ErrClosed
	}
	return nil
}

func (s *Subscription) unlock() { <-s.opSem }

// current returns the link, or nil and a channel closed when there is one.
func (s *Subscription) current() (*link, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur, s.ready
}

// await waits for ready (a link), ctx's end or Close.
func (s *Subscription) await(ctx context.Context, ready chan struct{}) error {
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.life.Done():
		return ErrClosed
	}
}

// Close ends the subscription: its connection is closed, the supervisor
// stops redialing, and calls waiting in Receive, Subscribe and the rest
// return ErrClosed; messages still buffered are dropped. It waits for
// every goroutine the subscription started.
func (s *Subscription) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.q.close()
	s.wg.Wait()
	return nil
}
