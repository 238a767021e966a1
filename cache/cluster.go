package cache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/slot"
	"github.com/echomq/echomq-go/internal/wire"
	"github.com/echomq/echomq-go/resp"
)

// ClusterOptions configure a ClusterCache.
type ClusterOptions struct {
	// Options are every node's: Addr is ignored (the nodes come from
	// Addrs and the cluster's slot map); MaxBytes bounds each node's
	// cache.
	Options
	// Addrs are the seed nodes, host:port.
	Addrs []string
	// RefreshInterval is how often the slot map is read again (CLUSTER
	// SLOTS); a node whose slots changed has its cache emptied. Default
	// 1 s.
	RefreshInterval time.Duration
}

// ClusterCache is a Cache per primary of a Valkey or Redis Cluster, each
// with its own tracking, and reads routed by slot. A node's cache is
// emptied when the node answers MOVED or when a refresh of the slot map
// shows its slots changed; a reply for a key that does not exist (PTTL
// -2) is not kept, since the key may be created on another node once its
// slot moves, which the node that answered would never report. Every
// kept reply is of a key that exists on the node that tracks it; moving
// it away (MIGRATE) deletes it there, which is an invalidation.
type ClusterCache struct {
	opts ClusterOptions

	mu     sync.RWMutex
	owner  []string          // slot → primary address ("" unknown)
	nodes  map[string]*Cache // by address
	closed bool

	refreshMu sync.Mutex    // one refresh at a time
	seq       atomic.Uint64 // refreshes done

	life   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewCluster reads the slot map from the first seed that answers and
// opens a Cache per primary.
func NewCluster(ctx context.Context, opts ClusterOptions) (*ClusterCache, error) {
	if len(opts.Addrs) == 0 {
		return nil, fmt.Errorf("%w: no Addrs", ErrOptions)
	}
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = time.Second
	}
	cc := &ClusterCache{opts: opts, owner: make([]string, slot.Count), nodes: map[string]*Cache{}}
	cc.life, cc.cancel = context.WithCancel(context.Background())
	if err := cc.refresh(ctx, opts.Addrs); err != nil {
		cc.Close()
		return nil, err
	}
	cc.wg.Add(1)
	go cc.refreshLoop()
	return cc, nil
}

// refreshLoop reads the slot map every RefreshInterval until Close.
func (cc *ClusterCache) refreshLoop() {
	defer cc.wg.Done()
	t := time.NewTicker(cc.opts.RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-cc.life.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(cc.life, 5*time.Second)
		cc.refreshMu.Lock()
		if cc.refresh(ctx, nil) == nil { // a failed refresh keeps the last map
			cc.seq.Add(1)
		}
		cc.refreshMu.Unlock()
		cancel()
	}
}

// refresh reads CLUSTER SLOTS from a known node (or the seeds) and
// applies it: new primaries get a Cache, primaries whose slots changed
// are emptied, and those that hold no slot any more are closed.
func (cc *ClusterCache) refresh(ctx context.Context, seeds []string) error {
	cc.mu.RLock()
	addrs := append([]string(nil), seeds...)
	for a := range cc.nodes {
		addrs = append(addrs, a)
	}
	addrs = append(addrs, cc.opts.Addrs...)
	cc.mu.RUnlock()
	var owner []string
	var lastErr error
	for _, a := range addrs {
		owner, lastErr = readSlots(ctx, cc.opts.Options.Options, a)
		if lastErr == nil {
			break
		}
	}
	if owner == nil {
		return fmt.Errorf("cache: cluster slot map: %w", lastErr)
	}
	return cc.apply(ctx, owner)
}

// apply installs a slot map.
func (cc *ClusterCache) apply(ctx context.Context, owner []string) error {
	cc.mu.Lock()
	if cc.closed {
		cc.mu.Unlock()
		return ErrClosed
	}
	changed := map[string]bool{}
	for s := range owner {
		if old := cc.owner[s]; old != owner[s] {
			changed[old], changed[owner[s]] = true, true
		}
	}
	need := map[string]bool{}
	for _, a := range owner {
		if a != "" && cc.nodes[a] == nil {
			need[a] = true
		}
	}
	cc.mu.Unlock()
	opened := map[string]*Cache{}
	for a := range need {
		o := cc.opts.Options
		o.Addr = a
		c, err := New(ctx, o)
		if err != nil {
			for _, c := range opened {
				c.Close()
			}
			return err
		}
		c.skipMissing = true
		opened[a] = c
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.closed {
		for _, c := range opened {
			c.Close()
		}
		return ErrClosed
	}
	for a, c := range opened {
		if cc.nodes[a] == nil {
			cc.nodes[a] = c
		} else {
			c.Close()
		}
	}
	for a := range changed {
		if c := cc.nodes[a]; c != nil {
			c.st.flushAll()
		}
	}
	copy(cc.owner, owner)
	holds := map[string]bool{}
	for _, a := range owner {
		holds[a] = true
	}
	for a, c := range cc.nodes {
		if !holds[a] {
			delete(cc.nodes, a)
			c.Close()
		}
	}
	return nil
}

// readSlots reads CLUSTER SLOTS from addr: slot → primary host:port.
func readSlots(ctx context.Context, o conn.Options, addr string) ([]string, error) {
	o.Addr, o.OnPush = addr, nil
	c, err := conn.Dial(ctx, o)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var v resp.Value
	if err := sendStrings(ctx, wire.OwnSender(senderOf(c)), 0, func(r resp.Value) error { v = r; return nil }, []string{"CLUSTER", "SLOTS"}); err != nil {
		return nil, err
	}
	owner := make([]string, slot.Count)
	for _, r := range v.Elems {
		if len(r.Elems) < 3 || len(r.Elems[2].Elems) < 2 {
			continue
		}
		lo, hi := r.Elems[0].Int, r.Elems[1].Int
		host := r.Elems[2].Elems[0].Text()
		if host == "" || host == "?" {
			host, _, _ = strings.Cut(addr, ":")
		}
		a := host + ":" + strconv.FormatInt(r.Elems[2].Elems[1].Int, 10)
		for s := lo; s <= hi && s < slot.Count; s++ {
			owner[s] = a
		}
	}
	return owner, nil
}

// node returns the Cache of key's slot.
func (cc *ClusterCache) node(key string) (*Cache, error) {
	cc.mu.RLock()
	defer cc.mu.RUnlock()
	if cc.closed {
		return nil, ErrClosed
	}
	c := cc.nodes[cc.owner[slot.Of(key)]]
	if c == nil {
		return nil, fmt.Errorf("%w: no node serves the slot of %q", ErrNotConnected, key)
	}
	return c, nil
}

// redirected reports whether a call that began when seq was seq0 and
// failed with err should be tried again: err is MOVED (the slot has a new
// owner) or the node is unreachable (it may have failed over). The slot
// map is refreshed first, once for all the calls that failed meanwhile.
func (cc *ClusterCache) redirected(ctx context.Context, seq0 uint64, err error) bool {
	var se *resp.ServerError
	switch {
	case errors.As(err, &se) && se.Code() == "MOVED":
	case errors.Is(err, ErrNotConnected), errors.Is(err, conn.ErrBroken):
	case errors.Is(err, ErrClosed), errors.Is(err, conn.ErrClosed):
		// The node's Cache was closed by a refresh (it holds no slot
		// any more), unless the ClusterCache itself is closing.
		cc.mu.RLock()
		closed := cc.closed
		cc.mu.RUnlock()
		if closed {
			return false
		}
	default:
		return false
	}
	cc.refreshMu.Lock()
	defer cc.refreshMu.Unlock()
	if cc.seq.Load() != seq0 {
		return true // refreshed since the call began
	}
	if rerr := cc.refresh(ctx, nil); rerr != nil {
		return false
	}
	cc.seq.Add(1)
	return true
}

// maxRedirects bounds the retries of one call after MOVED or ASK.
const maxRedirects = 3

// GetInto is Cache.GetInto on the node of key's slot.
func (cc *ClusterCache) GetInto(ctx context.Context, dst []byte, key string, ttl time.Duration) ([]byte, bool, error) {
	for i := 0; ; i++ {
		seq0 := cc.seq.Load()
		c, err := cc.node(key)
		if err != nil {
			return dst, false, err
		}
		v, ok, err := c.GetInto(ctx, dst, key, ttl)
		if err != nil {
			found := false
			read := func(r resp.Value) error {
				switch {
				case r.IsNull():
				case r.Type == resp.BulkString:
					v, found = append(dst, r.Str...), true
				default:
					return &resp.TypeError{Want: "bulk string", Got: r.Type}
				}
				return nil
			}
			if asked, aerr := cc.askedRead(ctx, err, []string{"GET", key}, read); asked {
				return v, found, aerr
			}
			if i < maxRedirects && cc.redirected(ctx, seq0, err) {
				continue
			}
		}
		return v, ok, err
	}
}

// askedRead reads, when err is an ASK answer (the key's slot is being
// moved and the key is already at the importing node), from the
// importing node after ASKING, without keeping the reply: that node
// serves the slot only to commands sent after ASKING until the move is
// done, and a later read goes through its cache once MOVED says so.
// asked is false when err is not ASK or names no node the ClusterCache
// knows.
func (cc *ClusterCache) askedRead(ctx context.Context, err error, args []string, fn func(resp.Value) error) (asked bool, _ error) {
	var se *resp.ServerError
	if !errors.As(err, &se) || se.Code() != "ASK" {
		return false, err
	}
	t := cc.askTarget(se)
	if t == nil {
		return false, err
	}
	s, err := t.session()
	if err != nil {
		return true, err
	}
	return true, sendStrings(ctx, s.tx, 1, fn, []string{"ASKING"}, args)
}

// MGet is Cache.MGet across the cluster: the keys are grouped by the
// node of their slot, each node's group read through its Cache (its
// misses pipelined) at the same time as the others, and values[i] is the
// value of keys[i], nil when the key does not exist. A group answered
// MOVED, or whose node is unreachable or was closed by a refresh, is read
// again after the slot map is refreshed (reads are safe to repeat), at
// most maxRedirects times; any other error fails the call.
func (cc *ClusterCache) MGet(ctx context.Context, ttl time.Duration, keys ...string) ([][]byte, error) {
	if ttl <= 0 {
		return nil, ErrTTL
	}
	out := make([][]byte, len(keys))
	todo := make([]int, len(keys))
	for i := range todo {
		todo[i] = i
	}
	for try := 0; len(todo) > 0; try++ {
		seq0 := cc.seq.Load()
		groups := map[*Cache][]int{}
		for _, i := range todo {
			c, err := cc.node(keys[i])
			if err != nil {
				return nil, err
			}
			groups[c] = append(groups[c], i)
		}
		type result struct {
			idx  []int
			vals [][]byte
			err  error
		}
		results := make(chan result, len(groups))
		for c, idx := range groups {
			go func() {
				ks := make([]string, len(idx))
				for j, i := range idx {
					ks[j] = keys[i]
				}
				vals, err := c.MGet(ctx, ttl, ks...)
				results <- result{idx, vals, err}
			}()
		}
		var again []int
		var firstErr error
		for range groups {
			r := <-results
			switch {
			case r.err == nil:
				for j, i := range r.idx {
					out[i] = r.vals[j]
				}
			case firstErr == nil && isAsk(r.err):
				// Some key of the group is at its slot's importing node:
				// read the group's keys one by one, each following its
				// own redirection.
				for _, i := range r.idx {
					v, ok, err := cc.GetInto(ctx, nil, keys[i], ttl)
					switch {
					case err != nil:
						firstErr = err
					case ok:
						out[i] = v
					}
					if err != nil {
						break
					}
				}
			case firstErr == nil && try < maxRedirects && cc.redirected(ctx, seq0, r.err):
				again = append(again, r.idx...)
			case firstErr == nil:
				firstErr = r.err
			}
		}
		if firstErr != nil {
			return nil, firstErr
		}
		todo = again
	}
	return out, nil
}

// DoCached is Cache.DoCached on the node of the key's slot (args[1]).
func (cc *ClusterCache) DoCached(ctx context.Context, ttl time.Duration, fn func(resp.Value) error, args ...string) error {
	if len(args) < 2 {
		_, err := checkCacheable(args)
		return err
	}
	for i := 0; ; i++ {
		seq0 := cc.seq.Load()
		c, err := cc.node(args[1])
		if err != nil {
			return err
		}
		err = c.DoCached(ctx, ttl, fn, args...)
		if err != nil {
			if asked, aerr := cc.askedRead(ctx, err, args, fn); asked {
				return aerr
			}
			if i < maxRedirects && cc.redirected(ctx, seq0, err) {
				continue
			}
		}
		return err
	}
}

// Do is Cache.Do on the node of key's slot: the command's key is key
// (read your writes as Cache.Do). A MOVED answer is followed, and so are
// ErrNotConnected and ErrClosed of a node's Cache (the command was not
// sent); an error after sending is returned, since the command may have
// run. During a slot migration a key already moved is answered ASK (the
// command did not run): Do sends it again to the importing node, after
// ASKING on the same connection, when that node is a primary the
// ClusterCache knows.
func (cc *ClusterCache) Do(ctx context.Context, key string, args ...string) (resp.Value, error) {
	var asked *Cache
	for i := 0; ; i++ {
		seq0 := cc.seq.Load()
		c := asked
		if c == nil {
			var err error
			if c, err = cc.node(key); err != nil {
				return resp.Value{}, err
			}
		}
		var v resp.Value
		err := c.doStrings(ctx, args, func(r resp.Value) error {
			v = r.Clone()
			return nil
		}, asked != nil)
		asked = nil
		var se *resp.ServerError
		if i < maxRedirects && errors.As(err, &se) && se.Code() == "ASK" {
			if asked = cc.askTarget(se); asked != nil {
				continue
			}
		}
		// Only MOVED, ASK and a refusal before sending are safe to
		// repeat: a write that broke its connection may have run.
		if i < maxRedirects && (errors.As(err, &se) && se.Code() == "MOVED" ||
			errors.Is(err, ErrNotConnected) || errors.Is(err, ErrClosed)) &&
			cc.redirected(ctx, seq0, err) {
			continue
		}
		return v, err
	}
}

// isAsk reports whether err is an ASK answer.
func isAsk(err error) bool {
	var se *resp.ServerError
	return errors.As(err, &se) && se.Code() == "ASK"
}

// askTarget returns the Cache of the node an ASK error names ("ASK
// <slot> <host:port>"), or nil when the ClusterCache has none there.
func (cc *ClusterCache) askTarget(se *resp.ServerError) *Cache {
	f := strings.Fields(se.Error())
	if len(f) != 3 {
		return nil
	}
	cc.mu.RLock()
	defer cc.mu.RUnlock()
	if cc.closed {
		return nil
	}
	return cc.nodes[f[2]]
}

// Sync is Cache.Sync on every node.
func (cc *ClusterCache) Sync(ctx context.Context) error {
	cc.mu.RLock()
	nodes := make([]*Cache, 0, len(cc.nodes))
	for _, c := range cc.nodes {
		nodes = append(nodes, c)
	}
	cc.mu.RUnlock()
	var errs []error
	for _, c := range nodes {
		errs = append(errs, c.Sync(ctx))
	}
	return errors.Join(errs...)
}

// Stats sums the nodes' counters.
func (cc *ClusterCache) Stats() Stats {
	cc.mu.RLock()
	defer cc.mu.RUnlock()
	var t Stats
	for _, c := range cc.nodes {
		s := c.Stats()
		t.Hits += s.Hits
		t.Misses += s.Misses
		t.Invalidations += s.Invalidations
		t.InvalidatedKeys += s.InvalidatedKeys
		t.Flushes += s.Flushes
		t.Evictions += s.Evictions
		t.Discarded += s.Discarded
		t.TooLarge += s.TooLarge
		t.Entries += s.Entries
		t.Bytes += s.Bytes
		t.Reconnects += s.Reconnects
	}
	return t
}

// Close closes every node's Cache and stops the refresh.
func (cc *ClusterCache) Close() error {
	cc.mu.Lock()
	if cc.closed {
		cc.mu.Unlock()
		return nil
	}
	cc.closed = true
	nodes := cc.nodes
	cc.nodes = map[string]*Cache{}
	cc.mu.Unlock()
	cc.cancel()
	cc.wg.Wait()
	for _, c := range nodes {
		c.Close()
	}
	return nil
}
