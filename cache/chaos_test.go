package cache_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/echomq-go/cache"
	"github.com/echomq/echomq-go/conn"
)

// chaosKey is what the writers have had acknowledged for one key.
type chaosKey struct {
	mu       sync.Mutex
	next     int64     // the version the next write carries
	acked    int64     // newest version acknowledged
	ackedAt  time.Time // when
	minValid int64     // after a flush: versions below are gone
}

// Readers and writers share one Cache while its connection is killed,
// the database flushed and keys expire: no read returns a version older
// than one acknowledged before it started, nor one that a flush
// acknowledged before it removed, nor an expiring value past its expiry.
func TestChaosNoStale(t *testing.T) {
	protocols(t, func(t *testing.T, proto int) {
		const (
			nkeys   = 64
			readers = 4
			reads   = 5000
			px      = 30 * time.Millisecond
		)
		c := newCache(t, opts(proto))
		ctx := testCtx(t)
		names := make([]string, nkeys)
		keys := make([]chaosKey, nkeys)
		for i := range names {
			names[i] = "c" + strconv.Itoa(i)
		}
		expiring := func(k int) bool { return k%4 == 0 }
		var stale atomic.Int64
		var firstStale atomic.Value
		report := func(format string, args ...any) {
			if stale.Add(1) == 1 {
				firstStale.Store(fmt.Sprintf(format, args...))
			}
		}
		// The faults are paced by the work done between them, not by a
		// clock: one fault (a kill, a flush, or none) per opsPerFault
		// acknowledged writes and successful reads, so that each fault
		// comes after the Cache has recovered from the last.
		const opsPerFault = 32
		var ops atomic.Int64
		progress := make(chan struct{}, 1)
		advance := func() {
			if ops.Add(1)%opsPerFault == 0 {
				select {
				case progress <- struct{}{}:
				default: // a fault is due already
				}
			}
		}
		bg, stop := context.WithCancel(ctx)
		var bgwg sync.WaitGroup
		var flushMu sync.RWMutex // writers hold it shared; a flush exclusively
		for w := range 2 {
			bgwg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(w), 7))
				for bg.Err() == nil {
					k := w + 2*r.IntN(nkeys/2)
					kk := &keys[k]
					flushMu.RLock()
					kk.mu.Lock()
					kk.next++
					v := kk.next
					kk.mu.Unlock()
					args := []string{"SET", names[k], strconv.FormatInt(v, 10)}
					if expiring(k) {
						args = append(args, "PX", strconv.Itoa(int(px/time.Millisecond)))
					}
					_, err := c.Do(bg, args...)
					if err == nil {
						kk.mu.Lock()
						kk.acked, kk.ackedAt = v, time.Now()
						kk.mu.Unlock()
						advance()
					} else {
						time.Sleep(time.Millisecond) // maybe applied, not acknowledged
					}
					flushMu.RUnlock()
				}
			})
		}
		var kills, flushes atomic.Int64
		bgwg.Go(func() {
			for i := 0; bg.Err() == nil; i++ {
				if i > 0 { // the next fault once the Cache has done opsPerFault more
					select {
					case <-progress:
					case <-bg.Done():
						return
					}
				}
				switch i % 3 {
				case 0:
					id, err := c.Do(bg, "CLIENT", "ID")
					if err == nil {
						if _, err := srv.Do("CLIENT", "KILL", "ID", strconv.FormatInt(id.Int, 10)); err == nil {
							kills.Add(1)
						}
					}
				case 1:
					flushMu.Lock()
					if _, err := c.Do(bg, "FLUSHDB"); err == nil {
						for k := range keys {
							kk := &keys[k]
							kk.mu.Lock()
							kk.minValid = kk.next + 1 // every write before the flush is gone
							kk.mu.Unlock()
						}
						flushes.Add(1)
					}
					flushMu.Unlock()
				}
			}
		})
		waitFor(t, "the first kill and flush", func() bool { return kills.Load() > 0 && flushes.Load() > 0 })
		var wg sync.WaitGroup
		for g := range readers {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), 11))
				buf := make([]byte, 0, 32)
				for n := 0; n < reads; {
					k := r.IntN(nkeys)
					kk := &keys[k]
					kk.mu.Lock()
					acked, ackedAt, minValid := kk.acked, kk.ackedAt, kk.minValid
					kk.mu.Unlock()
					start := time.Now()
					v, found, err := c.GetInto(ctx, buf[:0], names[k], time.Hour)
					if err != nil {
						if errors.Is(err, cache.ErrNotConnected) || errors.Is(err, conn.ErrBroken) {
							time.Sleep(time.Millisecond)
							continue
						}
						report("read: %v", err)
						return
					}
					n++
					advance()
					if !found {
						continue // expired or flushed: a newer state
					}
					got, _ := strconv.ParseInt(string(v), 10, 64)
					switch {
					case got < acked:
						report("%s: version %d read after %d was acknowledged", names[k], got, acked)
					case got < minValid:
						report("%s: version %d read after a flush removed it", names[k], got)
					case expiring(k) && got == acked && !ackedAt.IsZero() && start.After(ackedAt.Add(px+2*time.Millisecond)):
						report("%s: version %d read %v after it expired", names[k], got, start.Sub(ackedAt.Add(px)))
					}
				}
			})
		}
		wg.Wait()
		stop()
		bgwg.Wait()
		s := c.Stats()
		t.Logf("%+v; %d kills, %d flushes", s, kills.Load(), flushes.Load())
		if n := stale.Load(); n > 0 {
			t.Fatalf("%d stale reads; the first: %v", n, firstStale.Load())
		}
		if kills.Load() == 0 || flushes.Load() == 0 || s.Hits == 0 || s.Reconnects == 0 {
			t.Fatalf("the chaos did not happen: %+v, %d kills, %d flushes", s, kills.Load(), flushes.Load())
		}
	})
}
