package cache

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// GetInto is GET key through the cache: the value is appended to dst
// (which is returned, grown when needed), with found false when the key
// does not exist. A value served from memory costs no allocation when
// dst has room. A value read from the server is kept for about ttl
// (see the package documentation), and never past the key's own expiry
// on the server (PTTL, read in the same round trip).
func (c *Cache) GetInto(ctx context.Context, dst []byte, key string, ttl time.Duration) ([]byte, bool, error) {
	if ttl <= 0 {
		return dst, false, ErrTTL
	}
	s, err := c.session()
	if err != nil {
		return dst, false, err
	}
	sh := c.st.shardOf(key)
	var buf [128]byte
	id := appendGetID(buf[:0], key)
	if e := c.st.lookup(sh, id, s); e != nil {
		return append(dst, e.val.Str...), !e.val.IsNull(), nil
	}
	ld, err := c.load(ctx, s, sh, "GET", key, id, ttl, nil)
	if err != nil {
		return dst, false, err
	}
	v := ld.val
	if v.IsError() {
		err = v.Err()
	} else if v.Type != resp.BulkString && !v.IsNull() {
		err = &resp.TypeError{Want: "bulk string", Got: v.Type}
	}
	dst = append(dst, v.Str...)
	ld.release()
	return dst, !v.IsNull(), err
}

// Get is GetInto with a new slice.
func (c *Cache) Get(ctx context.Context, key string, ttl time.Duration) ([]byte, bool, error) {
	return c.GetInto(ctx, nil, key, ttl)
}

// appendGetID is appendID of GET key.
func appendGetID(dst []byte, key string) []byte {
	dst = append(dst, "3:GET"...)
	dst = strconv.AppendInt(dst, int64(len(key)), 10)
	dst = append(dst, ':')
	return append(dst, key...)
}

// DoCached runs a cacheable read command (args: its name, its key, the
// other arguments: "HGET", key, field) through the cache: fn gets the
// reply from memory when it is there, else from the server, which is then
// kept for about ttl and never past the key's expiry. The reply is
// valid only during fn and must not be modified. A server error reply is
// returned as a *resp.ServerError (fn is not called) and is not kept. A
// command that cannot be cached (see the package documentation) gets a
// *NotCacheableError and nothing is sent.
func (c *Cache) DoCached(ctx context.Context, ttl time.Duration, fn func(resp.Value) error, args ...string) error {
	if ttl <= 0 {
		return ErrTTL
	}
	name, err := checkCacheable(args)
	if err != nil {
		return err
	}
	s, err := c.session()
	if err != nil {
		return err
	}
	key := args[1]
	sh := c.st.shardOf(key)
	var buf [256]byte
	id := appendID(buf[:0], name, args)
	if e := c.st.lookup(sh, id, s); e != nil {
		if fn == nil {
			return nil
		}
		return fn(e.val)
	}
	ld, err := c.load(ctx, s, sh, name, key, id, ttl, args)
	if err != nil {
		return err
	}
	v := ld.val
	if v.IsError() {
		err = v.Err()
	} else if fn != nil {
		err = fn(v)
	}
	ld.release()
	return err
}

// load states, as a caller and the reader see them.
const (
	waiting int32 = iota
	finished
	abandoned
)

// loader is one read from the server, in flight: the Handler of the
// submission [CLIENT CACHING yes] <command> PTTL <key>. Its Done runs on
// the connection's reader goroutine, in stream order with the
// invalidation pushes, and decides whether the reply is kept.
type loader struct {
	c     *Cache
	s     *session
	sh    *shard
	ks    *keyState
	gen   uint64
	epoch uint64
	id    string
	first int // index of the command's reply
	keep  bool
	sent  int64 // nowNano before sending
	ttl   time.Duration
	val   resp.Value // owned
	pttl  int64
	err   error

	state atomic.Int32
	done  chan struct{}
	sub   submission // the commands sent, with their facts
}

var loaderPool = sync.Pool{New: func() any { return &loader{done: make(chan struct{}, 1)} }}

// pttlUnknown marks a PTTL reply that was not an integer.
const pttlUnknown = -3

// Reply keeps the command's reply and the key's PTTL.
func (l *loader) Reply(i int, v resp.Value) {
	switch {
	case i < l.first: // CLIENT CACHING yes
		if v.IsError() && l.err == nil {
			l.err = v.Err()
		}
	case i == l.first:
		if l.state.Load() != abandoned || l.keep {
			l.val = v.Clone()
		}
	default:
		if v.Type == resp.Integer {
			l.pttl = v.Int
		} else {
			l.pttl = pttlUnknown
		}
	}
}

// Done decides whether the reply is kept, then hands it to the caller,
// or recycles the loader when the caller has gone.
func (l *loader) Done(err error) {
	if err != nil && l.err == nil {
		l.err = err
	}
	keep := l.keep && l.err == nil && !l.val.IsError() && l.pttl != pttlUnknown &&
		!(l.pttl == -2 && l.c.skipMissing)
	ttlEnd, hardEnd := l.sent+int64(l.ttl), int64(0)
	if l.pttl >= 0 {
		hardEnd = l.sent + l.pttl*int64(time.Millisecond)
		if hardEnd <= nowNano() {
			keep = false
		}
	}
	l.c.st.end(l.sh, l.ks, l.gen, l.epoch, l.s, keep, l.id, l.val, ttlEnd, hardEnd)
	if l.state.CompareAndSwap(waiting, finished) {
		l.done <- struct{}{}
		return
	}
	l.recycle()
}

// Waits is false: the reader goroutine reads (the connection has OnPush),
// so that replies and invalidations are applied in stream order.
func (l *loader) Waits() bool { return false }

func (l *loader) recycle() {
	l.c, l.s, l.sh, l.ks, l.id = nil, nil, nil, nil, ""
	l.val, l.err = resp.Value{}, nil
	l.sub.reset()
	loaderPool.Put(l)
}

// release gives back a loader the caller took from load.
func (l *loader) release() { l.recycle() }

// load reads a command from the server and keeps the reply when nothing
// invalidated its key meanwhile. args is nil for GET key. On success the
// caller owns the loader (its val) until release.
func (c *Cache) load(ctx context.Context, s *session, sh *shard, name, key string, id []byte, ttl time.Duration, args []string) (*loader, error) {
	l, err := c.start(ctx, s, sh, name, key, id, ttl, args)
	if err != nil {
		return nil, err
	}
	return l.wait(ctx)
}

// start sends a read from the server (see load) without waiting for it.
func (c *Cache) start(ctx context.Context, s *session, sh *shard, name, key string, id []byte, ttl time.Duration, args []string) (*loader, error) {
	l := loaderPool.Get().(*loader)
	l.state.Store(waiting)
	l.c, l.s, l.sh, l.ttl = c, s, sh, ttl
	l.keep = c.tracked(key)
	l.pttl = -1
	l.first = 0
	if s.optin && l.keep {
		l.sub.add("CLIENT", "CACHING", "yes")
		l.first = 1
	}
	if args == nil {
		l.sub.add(name, key)
	} else {
		l.sub.add(args...)
	}
	l.sub.add("PTTL", key)
	l.id = string(id)
	l.ks, l.gen, l.epoch = c.st.begin(sh, key)
	l.sent = nowNano()
	w, err := l.sub.wire()
	if err == nil {
		err = s.tx.Send(ctx, wire.UserOnly(w, l.first), l) // hooks see the command, not CLIENT CACHING nor PTTL
	}
	if err != nil {
		c.st.end(sh, l.ks, l.gen, l.epoch, s, false, "", resp.Value{}, 0, 0)
		l.recycle()
		return nil, err
	}
	return l, nil
}

// wait waits for a read begun with start. On success the caller owns the
// loader until release; on ctx's end it is abandoned to the reader.
func (l *loader) wait(ctx context.Context) (*loader, error) {
	select {
	case <-l.done:
	case <-ctx.Done():
		if l.state.CompareAndSwap(waiting, abandoned) {
			return nil, ctx.Err()
		}
		<-l.done
	}
	if l.err != nil {
		err := l.err
		l.recycle()
		return nil, err
	}
	return l, nil
}

// DoFunc sends a command that is not cached (a write, or any other) on
// the tracked connection and waits for its reply, then for the
// invalidations it caused: when DoFunc returns, no read through this
// Cache that starts afterwards is served a reply the command made stale
// (read your writes). fn, when not nil, gets the reply, valid only during
// fn. A server error reply is returned as a *resp.ServerError.
func (c *Cache) DoFunc(ctx context.Context, cmd resp.Cmd, fn func(resp.Value) error) error {
	return c.doFunc(ctx, cmd, fn, false)
}

// doFunc is DoFunc, the command preceded by ASKING on the same connection
// when asking (a ClusterCache following ASK to the slot's importing node).
func (c *Cache) doFunc(ctx context.Context, cmd resp.Cmd, fn func(resp.Value) error, asking bool) error {
	// The command's one inspection: its fact goes with it, so the
	// connection does not read it again.
	var facts wire.Facts
	if err := facts.Encoded(cmd.Bytes(), 1); err != nil {
		if cmd.Err() != nil {
			return cmd.Err()
		}
		return err
	}
	return c.doKnown(ctx, cmd, facts.List()[0], fn, asking)
}

// doStrings is doFunc for a command given as strings (args, its name
// first), its fact made from them.
func (c *Cache) doStrings(ctx context.Context, args []string, fn func(resp.Value) error, asking bool) error {
	if len(args) == 0 {
		return c.doFunc(ctx, resp.Command(nil, args...), fn, asking) // its error
	}
	b := getSubmission()
	defer putSubmission(b)
	b.add(args...)
	w, err := b.wire()
	if err != nil {
		return err
	}
	return c.doKnown(ctx, resp.Command(nil, args...), w.Facts()[0], fn, asking)
}

// doKnown is doFunc for a command whose fact f is known.
func (c *Cache) doKnown(ctx context.Context, cmd resp.Cmd, f cmds.Fact, fn func(resp.Value) error, asking bool) error {
	switch f.Info {
	case infoClientTracking, infoClientCaching:
		return fmt.Errorf("%w: CLIENT TRACKING and CLIENT CACHING belong to the Cache", ErrRefused)
	case infoSwapDB:
		return fmt.Errorf("%w: SWAPDB changes what a database holds and the server sends no "+
			"invalidation for it, so the Cache would serve the old contents (another "+
			"client's SWAPDB is seen by the health check: see the package documentation)", ErrRefused)
	}
	s, err := c.session()
	if err != nil {
		return err
	}
	if s.l == nil && c.opts.Mode != Broadcast {
		// RESP3: the server sends the invalidations a command causes
		// before it answers the next command on the same connection,
		// and the reader applies pushes in stream order, so the PING's
		// reply comes after them.
		b := getSubmission()
		defer putSubmission(b)
		at := 0
		if asking {
			b.add("ASKING")
			at = 1
		}
		b.addCmd(cmd, f)
		b.add("PING")
		w, err := b.wire()
		if err != nil {
			return err
		}
		return replyAt(ctx, s.tx, w, at, fn)
	}
	// RESP2: the invalidations travel on the other connection; a PING
	// there sent after the reply comes back after them. Broadcast: the
	// server gathers a loop's changes and sends their invalidations
	// just before it writes the replies of that loop, after the
	// command's own reply but before the reply of any command it reads
	// later; a PING sent once the reply is in comes back after them.
	if asking {
		if err := askingDo(ctx, s.tx, cmd, f, fn); err != nil {
			return err
		}
	} else if err := wire.DoFuncMade(ctx, s.tx, cmd, func(keys []cmds.Span) (cmds.Fact, []cmds.Span) {
		g, start := f, len(keys)
		keys = append(keys, f.Keys...)
		g.Keys = keys[start:len(keys):len(keys)]
		return g, keys
	}, fn); err != nil {
		return err
	}
	return c.Sync(ctx)
}

// askingDo sends ASKING and cmd (whose fact is f) together on tx and
// gives cmd's reply to fn.
func askingDo(ctx context.Context, tx wire.Sender, cmd resp.Cmd, f cmds.Fact, fn func(resp.Value) error) error {
	b := getSubmission()
	defer putSubmission(b)
	b.add("ASKING")
	b.addCmd(cmd, f)
	w, err := b.wire()
	if err != nil {
		return err
	}
	return replyAt(ctx, tx, w, 1, fn)
}

// replyAt sends w on tx, waits for its replies and gives reply at to fn
// (a server error reply is returned, fn not called). Hooks see command at
// alone (the caller's): what the Cache sends beside it (ASKING, a PING)
// is its own.
func replyAt(ctx context.Context, tx wire.Sender, w wire.Cmds, at int, fn func(resp.Value) error) error {
	h := &firstReply{done: make(chan struct{}, 1), at: at}
	if err := tx.Send(ctx, wire.UserOnly(w, at), h); err != nil {
		return err
	}
	select {
	case <-h.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if h.err != nil {
		return h.err
	}
	if h.val.IsError() {
		return h.val.Err()
	}
	if fn != nil {
		return fn(h.val)
	}
	return nil
}

// The commands that belong to the Cache.
var (
	infoClientTracking = cmds.Lookup("client|tracking")
	infoClientCaching  = cmds.Lookup("client|caching")
	infoSwapDB         = cmds.Lookup("swapdb")
)

// Do is DoFunc with the command given as strings, returning a reply that
// owns its memory.
func (c *Cache) Do(ctx context.Context, args ...string) (resp.Value, error) {
	var out resp.Value
	err := c.doStrings(ctx, args, func(v resp.Value) error {
		out = v.Clone()
		return nil
	}, false)
	return out, err
}

// Sync waits until every invalidation the server sent the Cache before
// Sync was called has been applied: after a write by another client is
// acknowledged, a read through the Cache that starts after Sync returns
// sees it. It costs one round trip.
func (c *Cache) Sync(ctx context.Context) error {
	s, err := c.session()
	if err != nil {
		return err
	}
	if s.l != nil {
		return s.l.sync(ctx)
	}
	return ping(ctx, s.tx)
}

// firstReply keeps reply at (the first, by default) of a submission.
type firstReply struct {
	done chan struct{}
	at   int
	val  resp.Value
	err  error
}

func (h *firstReply) Reply(i int, v resp.Value) {
	if i == h.at {
		h.val = v.Clone()
	}
}
func (h *firstReply) Done(err error) { h.err = err; h.done <- struct{}{} }
func (h *firstReply) Waits() bool    { return false }

// MGet is GET of each key through the cache (a per-key MGET): values[i]
// is the value of keys[i], nil when the key does not exist. The keys not
// in memory are read from the server together, pipelined, each kept as
// GetInto keeps it. The values are copies the caller owns.
func (c *Cache) MGet(ctx context.Context, ttl time.Duration, keys ...string) ([][]byte, error) {
	if ttl <= 0 {
		return nil, ErrTTL
	}
	s, err := c.session()
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(keys))
	type miss struct {
		i int
		l *loader
	}
	var misses []miss
	var buf []byte
	var firstErr error
	for i, key := range keys {
		sh := c.st.shardOf(key)
		buf = appendGetID(buf[:0], key)
		if e := c.st.lookup(sh, buf, s); e != nil {
			if !e.val.IsNull() {
				out[i] = append([]byte{}, e.val.Str...)
			}
			continue
		}
		l, err := c.start(ctx, s, sh, "GET", key, buf, ttl, nil)
		if err != nil {
			firstErr = err
			break
		}
		misses = append(misses, miss{i, l})
	}
	for _, m := range misses {
		l, err := m.l.wait(ctx)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		v := l.val
		switch {
		case v.IsError():
			if firstErr == nil {
				firstErr = v.Err()
			}
		case v.Type == resp.BulkString:
			out[m.i] = append([]byte{}, v.Str...)
		case !v.IsNull() && firstErr == nil:
			firstErr = &resp.TypeError{Want: "bulk string", Got: v.Type}
		}
		l.release()
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}
