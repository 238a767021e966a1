package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// Mode is the server's tracking mode (CLIENT TRACKING).
type Mode int

const (
	// Default tracks the keys this connection reads: the server sends an
	// invalidation for each key read since its last invalidation.
	Default Mode = iota
	// Broadcast (CLIENT TRACKING … BCAST) has the server send an
	// invalidation for every change to a key under one of
	// Options.Prefixes (every key when there are none), read or not.
	// Only keys under the prefixes are cached.
	Broadcast
	// OptIn (CLIENT TRACKING … OPTIN) tracks only the reads the Cache
	// caches: each is sent right after CLIENT CACHING yes, in the same
	// write. Other commands on the connection are not tracked.
	OptIn
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case Default:
		return "default"
	case Broadcast:
		return "bcast"
	case OptIn:
		return "optin"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Options configure a Cache.
type Options struct {
	// Options are the connection's (address, auth, TLS, protocol …).
	// Under RESP3 invalidations arrive on the connection that reads;
	// under RESP2 (Protocol 2, or a server without HELLO) the Cache dials
	// a second connection, subscribed to __redis__:invalidate, and the
	// reading connection redirects its invalidations there. An OnPush
	// given here receives the pushes the Cache does not consume.
	// MinBackoff and MaxBackoff bound the redial backoff after a fault,
	// which doubles after each failed attempt, with full jitter
	// (defaults 50 ms and 5 s); BlockingConns does not apply.
	conn.Options
	// Mode is the tracking mode; Default unless set.
	Mode Mode
	// Prefixes are Broadcast's key prefixes (none: every key). Only
	// Broadcast takes prefixes.
	Prefixes []string
	// MaxBytes bounds the memory of the cached replies, their lookup keys
	// and bookkeeping included. Default 64 MiB.
	MaxBytes int64
	// MaxEntryBytes bounds one cached reply; larger replies are returned
	// but not kept. Default 1 MiB, and at most what one shard holds
	// (MaxBytes divided by the shard count).
	MaxEntryBytes int64
	// HealthInterval is how often a Cache checks that its tracked
	// connections still answer (INFO commandstats on the reading
	// connection and, under RESP2, a PING on the invalidation
	// connection); a session whose connections have not both answered
	// within HealthTimeout is treated as lost, so that a silent network
	// fault, which sends neither invalidations nor an error, cannot keep
	// stale entries served for long. The same check empties the cache
	// when the server's count of SWAPDB calls moved (see the package
	// documentation). Defaults 1 s and 3 s; a negative HealthInterval
	// disables the check, and with it the SWAPDB check.
	HealthInterval, HealthTimeout time.Duration
}

// Cache serves reads from memory and keeps them true with the server's
// help (client-side caching with CLIENT TRACKING). It is safe for
// concurrent use. See the package documentation for the guarantee.
type Cache struct {
	opts Options
	st   *store
	cur  atomic.Pointer[session] // nil during an outage

	mu      sync.Mutex
	lastErr error
	closed  bool

	// skipMissing: a reply for a key that does not exist is not kept
	// (set by ClusterCache before the Cache is used).
	skipMissing bool

	life       context.Context // ends at Close
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	reconnects atomic.Uint64
}

// session is one tracked connection (and, under RESP2, its
// invalidation connection). Once it is lost the Cache empties itself
// and dials a new one.
type session struct {
	c     *conn.Conn
	tx    wire.Sender   // c, where every submission goes (senderOf)
	l     *link         // RESP2 only
	dead  chan struct{} // closed by the supervisor when it sees the loss
	optin bool
	// swaps is the server's count of SWAPDB calls (INFO commandstats)
	// when last read, at the dial and by each health check (only the
	// supervisor reads and writes it after the dial); -1 while the
	// server has not told it (INFO refused).
	swaps int64
}

// live reports whether the session is still tracked: neither connection
// has failed. It costs two or three non-blocking channel receives.
func (s *session) live() bool {
	// One case per select: each compiles to a lock-free non-blocking
	// receive, where a select of several cases would lock the channels.
	select {
	case <-s.c.Done():
		return false
	default:
	}
	select {
	case <-s.dead:
		return false
	default:
	}
	if s.l != nil {
		select {
		case <-s.l.done:
			return false
		default:
		}
	}
	return true
}

// usable is live: a reply read on a session that is no longer live is
// not kept, since the invalidations that would follow it may be lost.
func (s *session) usable() bool { return s.live() }

func (s *session) linkDone() <-chan struct{} {
	if s.l == nil {
		return nil
	}
	return s.l.done
}

func (s *session) close() {
	s.c.Close()
	if s.l != nil {
		s.l.close()
	}
}

// New connects, turns tracking on, and starts the supervisor that
// redials after a fault. A wrong address or password is reported at once.
func New(ctx context.Context, opts Options) (*Cache, error) {
	if opts.Mode < Default || opts.Mode > OptIn {
		return nil, fmt.Errorf("%w: unknown Mode %d", ErrOptions, int(opts.Mode))
	}
	if len(opts.Prefixes) > 0 && opts.Mode != Broadcast {
		return nil, fmt.Errorf("%w: Prefixes are for Broadcast mode only", ErrOptions)
	}
	if opts.MaxBytes < 0 || opts.MaxEntryBytes < 0 {
		return nil, fmt.Errorf("%w: negative MaxBytes or MaxEntryBytes", ErrOptions)
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = 64 << 20
	}
	nshards := 64
	for nshards > 1 && opts.MaxBytes/int64(nshards) < 1<<20 {
		nshards /= 2
	}
	perShard := opts.MaxBytes / int64(nshards)
	if opts.MaxEntryBytes == 0 {
		opts.MaxEntryBytes = 1 << 20
	}
	opts.MaxEntryBytes = min(opts.MaxEntryBytes, perShard)
	if opts.HealthInterval == 0 {
		opts.HealthInterval = time.Second
	}
	if opts.HealthTimeout <= 0 {
		opts.HealthTimeout = 3 * time.Second
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 50 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(5*time.Second, opts.MinBackoff)
	}
	opts.Prefixes = append([]string(nil), opts.Prefixes...)
	c := &Cache{opts: opts, st: newStore(opts.MaxBytes, opts.MaxEntryBytes, nshards)}
	s, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	c.cur.Store(s)
	c.life, c.cancel = context.WithCancel(context.Background())
	c.wg.Add(2)
	go c.supervise(s)
	go c.clock()
	return c, nil
}

// dial connects a session and turns tracking on. No read is sent on the
// connection before CLIENT TRACKING has been answered.
func (c *Cache) dial(ctx context.Context) (*session, error) {
	o := c.opts.Options
	user := o.OnPush
	o.OnPush = func(v resp.Value) {
		if !c.onPush(v) && user != nil {
			user(v)
		}
	}
	cn, err := conn.Dial(ctx, o)
	if err != nil {
		return nil, err
	}
	s := &session{c: cn, tx: senderOf(cn), dead: make(chan struct{}), optin: c.opts.Mode == OptIn}
	args := []string{"CLIENT", "TRACKING", "ON"}
	if cn.Protocol() == 2 {
		s.l, err = dialLink(ctx, c.opts.Options, c.applyInvalidation)
		if err != nil {
			cn.Close()
			return nil, err
		}
		args = append(args, "REDIRECT", fmt.Sprint(s.l.id))
	}
	switch c.opts.Mode {
	case Broadcast:
		args = append(args, "BCAST")
		for _, p := range c.opts.Prefixes {
			args = append(args, "PREFIX", p)
		}
	case OptIn:
		args = append(args, "OPTIN")
	}
	if err := sendStrings(ctx, wire.OwnSender(s.tx), 0, nil, args); err != nil { // the Cache's own: unseen by hooks
		s.close()
		return nil, fmt.Errorf("cache: CLIENT TRACKING ON: %w", err)
	}
	// The count the health check compares with, read before the session
	// serves its first read.
	s.swaps = -1
	if c.opts.HealthInterval > 0 {
		if s.swaps, err = swapCount(ctx, s.tx); err != nil {
			s.close()
			return nil, fmt.Errorf("cache: INFO commandstats: %w", err)
		}
	}
	return s, nil
}

// onPush consumes RESP3 invalidation pushes; it reports whether v was one.
func (c *Cache) onPush(v resp.Value) bool {
	if len(v.Elems) != 2 || !v.Elems[0].Equal("invalidate") {
		return false
	}
	p := v.Elems[1]
	if p.IsNull() {
		c.applyInvalidation(nil, true)
	} else {
		c.applyInvalidation(p.Elems, false)
	}
	return true
}

// applyInvalidation drops the replies of keys, or all of them (a flush:
// FLUSHALL, FLUSHDB, or the server giving up tracking).
func (c *Cache) applyInvalidation(keys []resp.Value, all bool) {
	if all {
		c.st.flushAll()
		return
	}
	for _, k := range keys {
		c.st.invalidate(k.Str)
	}
}

// supervise waits for the session to be lost, empties the cache, and
// redials, until Close.
func (c *Cache) supervise(s *session) {
	defer c.wg.Done()
	var health <-chan time.Time
	if c.opts.HealthInterval > 0 {
		t := time.NewTicker(c.opts.HealthInterval)
		defer t.Stop()
		health = t.C
	}
	for {
		var cause error
		select {
		case <-c.life.Done():
			s.close()
			return
		case <-s.c.Done():
			cause = s.c.Err()
		case <-s.linkDone():
			cause = errLinkBroken
		case <-health:
			swapped, err := c.check(s)
			if err != nil {
				cause = err
				break
			}
			if swapped {
				// No invalidation came for it: what the cache holds may
				// be of the database's old contents. The tracking stays.
				c.st.flushAll()
			}
			continue
		}
		// Dead first, then empty: a reply that raced the loss finds one
		// or the other (store.end checks both under its shard lock).
		close(s.dead)
		c.cur.CompareAndSwap(s, nil)
		c.mu.Lock()
		c.lastErr = cause
		c.mu.Unlock()
		c.st.flushAll()
		s.close()
		if s = c.redial(); s == nil {
			return
		}
	}
}

// clock moves the store's coarse clock until Close.
func (c *Cache) clock() {
	defer c.wg.Done()
	t := time.NewTicker(coarseTick)
	defer t.Stop()
	for {
		select {
		case <-c.life.Done():
			return
		case <-t.C:
			c.st.coarse.Store(nowNano())
		}
	}
}

// errUnhealthy is the cause when the health check goes unanswered.
var errUnhealthy = errors.New("cache: health check unanswered")

// check asks, bounded by HealthTimeout, each connection that s's
// tracking depends on whether it still answers: under RESP2 the
// invalidation connection (a PING there, answered after every
// invalidation sent before it), and under both protocols the reading
// connection, whose client id the tracking belongs to (CLIENT TRACKING …
// REDIRECT under RESP2 too: a reading connection the server has dropped
// silently takes the tracking with it while the other connection still
// answers). The reading connection is asked INFO commandstats, and check
// reports whether the server's count of SWAPDB calls moved since it was
// last read: the servers send no invalidation for a SWAPDB.
func (c *Cache) check(s *session) (swapped bool, err error) {
	ctx, cancel := context.WithTimeout(c.life, c.opts.HealthTimeout)
	defer cancel()
	if s.l != nil {
		err = s.l.sync(ctx)
	}
	n := int64(-1)
	if err == nil {
		n, err = swapCount(ctx, s.tx)
	}
	if err != nil {
		if c.life.Err() != nil {
			return false, nil
		}
		return false, fmt.Errorf("%w: %w", errUnhealthy, err)
	}
	if n < 0 || n == s.swaps {
		return false, nil // not told (the last count stays), or unchanged
	}
	// Moved, or told for the first time: a SWAPDB may have come before.
	s.swaps = n
	return true, nil
}

// swapCount reads the server's count of SWAPDB calls on tx (INFO
// commandstats counts every call, those in a transaction or a script
// too; 0 before the first). It is -1 when the server answers INFO with
// an error (an ACL without it, a renamed command, a busy script), or
// with a reply over the connection's Limits: the connection answered,
// but did not tell.
func swapCount(ctx context.Context, tx wire.Sender) (int64, error) {
	n := int64(-1)
	err := sendStrings(ctx, wire.OwnSender(tx), 0, func(v resp.Value) error { // the Cache's own: unseen by hooks
		n = parseSwaps(v.VerbatimText())
		return nil
	}, infoCommandStats)
	if se := (*resp.ServerError)(nil); errors.As(err, &se) || errors.Is(err, resp.ErrReplyTooLarge) {
		return -1, nil // answered, and skipped whole: the stream is intact
	}
	return n, err
}

// infoCommandStats is the health check's question to the reading
// connection.
var infoCommandStats = []string{"INFO", "commandstats"}

// parseSwaps finds "cmdstat_swapdb:calls=N" in INFO commandstats: N, 0
// when the line is missing (never called), -1 when it is malformed.
func parseSwaps(info []byte) int64 {
	const field = "cmdstat_swapdb:calls="
	i := bytes.Index(info, []byte(field))
	if i < 0 {
		return 0
	}
	digits := info[i+len(field):]
	if j := bytes.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); j >= 0 {
		digits = digits[:j]
	}
	n, err := strconv.ParseInt(string(digits), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// redial dials until it succeeds (then publishes the session) or the
// Cache closes (then nil).
func (c *Cache) redial() *session {
	backoff := c.opts.MinBackoff
	for {
		wait := time.Duration(rand.Int64N(int64(backoff)) + 1)
		t := time.NewTimer(wait)
		select {
		case <-c.life.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		s, err := c.dial(c.life)
		if err == nil {
			c.mu.Lock()
			if c.closed {
				c.mu.Unlock()
				s.close()
				return nil
			}
			c.cur.Store(s)
			c.mu.Unlock()
			c.reconnects.Add(1)
			return s
		}
		c.mu.Lock()
		c.lastErr = err
		c.mu.Unlock()
		backoff = min(2*backoff, c.opts.MaxBackoff)
	}
}

// session returns the current session, or the error of an outage.
func (c *Cache) session() (*session, error) {
	if s := c.cur.Load(); s != nil {
		return s, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	return nil, fmt.Errorf("%w: %w", ErrNotConnected, c.lastErr)
}

// tracked reports whether the server will tell of changes to key: always,
// but in Broadcast mode only under one of the prefixes.
func (c *Cache) tracked(key string) bool {
	if c.opts.Mode != Broadcast || len(c.opts.Prefixes) == 0 {
		return true
	}
	for _, p := range c.opts.Prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// Close closes the connections and waits for every goroutine the Cache
// started. Calls in flight end with an error; later calls get ErrClosed.
func (c *Cache) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.cur.Store(nil)
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	c.st.flushAll()
	return nil
}

// Stats are the Cache's counters since New.
type Stats struct {
	// Hits and Misses count cached reads served from memory and from the
	// server.
	Hits, Misses uint64
	// Invalidations counts cached replies dropped because the server
	// invalidated their key; InvalidatedKeys the keys the server named.
	Invalidations, InvalidatedKeys uint64
	// Flushes counts times the whole cache was emptied: a flush
	// invalidation (FLUSHALL, FLUSHDB), a lost connection, a SWAPDB seen
	// by the health check, Close.
	Flushes uint64
	// Evictions counts replies dropped to stay within MaxBytes.
	Evictions uint64
	// Discarded counts replies not kept because an invalidation (or a
	// flush, or the loss of the connection) came between the read's send
	// and its reply.
	Discarded uint64
	// TooLarge counts replies not kept for being over MaxEntryBytes.
	TooLarge uint64
	// Entries and Bytes are what the cache holds now.
	Entries int
	Bytes   int64
	// Reconnects counts sessions dialed after a fault.
	Reconnects uint64
}

// HitRatio is Hits / (Hits + Misses), or 0 before any read.
func (s Stats) HitRatio() float64 {
	if s.Hits+s.Misses == 0 {
		return 0
	}
	return float64(s.Hits) / float64(s.Hits+s.Misses)
}

// Stats returns the counters.
func (c *Cache) Stats() Stats {
	var s Stats
	for i := range c.st.shards {
		sh := &c.st.shards[i]
		s.Hits += sh.hits.Load()
		s.Misses += sh.misses.Load()
		sh.mu.RLock()
		s.Invalidations += sh.inval
		s.Evictions += sh.evictions
		s.Discarded += sh.discarded
		s.TooLarge += sh.tooLarge
		s.Entries += len(sh.entries)
		s.Bytes += sh.bytes
		sh.mu.RUnlock()
	}
	s.InvalidatedKeys = c.st.keysInv.Load()
	s.Flushes = c.st.flushes.Load()
	s.Reconnects = c.reconnects.Load()
	return s
}
