package cmds_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/echomq/echomq-go/cmds"
	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/servertest"
	"github.com/echomq/echomq-go/pipeline"
	"github.com/echomq/echomq-go/resp"
)

// monitor is a MONITOR connection of the test's own: it records every
// command the server ran for the client at addr, until that client's
// ECHO of stop.
type monitor struct {
	addr, stop string
	done       chan struct{}
	mu         sync.Mutex
	seen       map[string]int
	err        error
}

func startMonitor(t *testing.T) *monitor {
	t.Helper()
	nc, err := net.DialTimeout("tcp", Srv().Addr, WaitLong)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	rd := resp.NewReader(nc)
	nc.SetDeadline(time.Now().Add(WaitLong))
	if _, err := nc.Write(resp.AppendCommand(nil, "MONITOR")); err != nil {
		t.Fatal(err)
	}
	if v, err := rd.Next(); err != nil || !v.Equal("OK") {
		t.Fatalf("MONITOR: %v %v", v, err)
	}
	m := &monitor{done: make(chan struct{}), seen: map[string]int{}}
	go func() {
		defer close(m.done)
		for {
			nc.SetDeadline(time.Now().Add(2 * WaitLong))
			v, err := rd.Next()
			if err != nil {
				m.mu.Lock()
				m.err = err
				m.mu.Unlock()
				return
			}
			// 1700000000.123456 [0 127.0.0.1:5555] "SET" "k" "v"
			line := v.Text()
			i := strings.Index(line, " [")
			j := strings.Index(line, "] ")
			if i < 0 || j < i {
				continue
			}
			from := line[i+2 : j]
			if sp := strings.IndexByte(from, ' '); sp >= 0 {
				from = from[sp+1:]
			}
			args, err := monitorArgs(line[j+2:])
			m.mu.Lock()
			if err != nil {
				m.err = fmt.Errorf("%q: %w", line, err)
			}
			mine := m.addr != "" && from == m.addr
			stop := mine && len(args) == 2 && args[0] == "ECHO" && args[1] == m.stop
			if mine && !stop && err == nil {
				m.seen[strings.Join(args, " ")]++
			}
			m.mu.Unlock()
			if stop {
				return
			}
		}
	}()
	return m
}

// monitorArgs reads MONITOR's quoted arguments.
func monitorArgs(s string) ([]string, error) {
	var out []string
	for s != "" {
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return nil, err
		}
		a, err := strconv.Unquote(q)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
		s = strings.TrimPrefix(s[len(q):], " ")
	}
	return out, nil
}

func infoField(t *testing.T, section, field string) int64 {
	t.Helper()
	info, err := Srv().Do("INFO", section)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("INFO %s has no %s", section, field)
	return 0
}

// TestBuilderMisuseConcurrent (issue 23, "done when"): many goroutines
// share one Client; each misuses its Builders at random (options after
// Build, options on values whose Builder started another command,
// Commands used after their Builder moved on, values of two Builders
// interleaved, a stale Command queued in a Batch, the zero builder
// value) around the commands it means: SET mis:<g>:<i> v<g>:<i>, with
// GETs and DELs of keys of its own. Every command is either refused
// with a typed error before it is sent, or sent exactly as intended:
// every reply is the one its command should get, the server ran, for
// the Client's connection, exactly the intended commands (MONITOR), no
// error reply was counted, the connection never broke (the same CLIENT
// ID), and the data read back is the intended data and nothing else.
// Before, an option after Build made a SET malformed on the wire and the
// server took the next caller's bytes for the rest of it.
func TestBuilderMisuseConcurrent(t *testing.T) {
	servertest.Need(t, Srv())
	Srv().Flush(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*WaitLong)
	defer cancel()
	cl, err := conn.NewClient(ctx, conn.Options{Addr: Srv().Addr})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	id0, err := cl.Do(ctx, "CLIENT", "ID")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := cl.Do(ctx, "CLIENT", "INFO")
	if err != nil {
		t.Fatal(err)
	}
	var addr string
	for _, f := range strings.Fields(ci.Text()) {
		if a, ok := strings.CutPrefix(f, "addr="); ok {
			addr = a
		}
	}
	mon := startMonitor(t)
	mon.mu.Lock()
	mon.addr, mon.stop = addr, fmt.Sprintf("mis-done-%d", time.Now().UnixNano())
	mon.mu.Unlock()
	errs0 := infoField(t, "stats", "total_error_replies")

	goroutines, rounds := 8, 250
	if testing.Short() {
		rounds = 50
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		intended = map[string]int{} // command text → times sent
		failures []string
	)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			var b1, b2 Builder
			var bt pipeline.Batch
			sent := map[string]int{}
			have := map[string]string{} // this goroutine's keys → value
			fail := func(format string, a ...any) {
				mu.Lock()
				failures = append(failures, fmt.Sprintf("g%d: ", g)+fmt.Sprintf(format, a...))
				mu.Unlock()
			}
			// send sends c, which must be the command want, and
			// returns its reply. A command that is not want is sent all
			// the same, for the server's side of the test to see.
			send := func(c Command, want string) (resp.Value, bool) {
				if got := c.String(); got != want || c.Err() != nil {
					fail("built %s (%v), want %s", got, c.Err(), want)
				}
				var out resp.Value
				cctx, cancel := context.WithTimeout(ctx, WaitLong)
				defer cancel()
				err := cl.DoFunc(cctx, c.Cmd(), func(v resp.Value) error { out = v.Clone(); return nil })
				if err != nil {
					fail("%s: %v", want, err)
					return out, false
				}
				sent[want]++
				return out, true
			}
			set := func(c Command, k, v, want string) {
				if r, ok := send(c, want); ok {
					if !r.Equal("OK") {
						fail("%s: reply %v", want, r)
					}
					have[k] = v
				}
			}
			// refused: c must not be sent: Err matches ErrStale (or
			// any error for the zero value), and the Client refuses it.
			refused := func(c Command, what string, stale bool) {
				if err := c.Err(); err == nil || stale && !errors.Is(err, ErrStale) {
					fail("%s: Err %v (%s), want ErrStale", what, err, c)
				}
				err := cl.DoFunc(ctx, c.Cmd(), func(resp.Value) error { return nil })
				if err == nil || stale && !errors.Is(err, ErrStale) {
					fail("%s: sent: %v", what, err)
				}
			}
			prev := func(i int) (string, string) {
				if i == 0 {
					return fmt.Sprintf("mis:%d:none", g), ""
				}
				k := fmt.Sprintf("mis:%d:%d", g, rng.IntN(i))
				return k, have[k]
			}
			for i := range rounds {
				k, v := fmt.Sprintf("mis:%d:%d", g, i), fmt.Sprintf("v%d:%d", g, i)
				junk := fmt.Sprintf("junk:%d:%d", g, i)
				switch rng.IntN(8) {
				case 0: // options after Build
					s := b1.Set(k, v)
					c := s.Build()
					s.Ex(600 * time.Second)
					s.Get().Nx()
					refused(s.Px(time.Hour).Build(), "an option after Build", true)
					set(c, k, v, "SET "+k+" "+v)
				case 1: // an option on a value whose Builder started another command
					s := b1.Set(junk, "x")
					d := b1.Del(junk)
					s.Get()
					s.Xx().Ex(time.Second)
					c := d.Build()
					refused(s.Build(), "a value after its Builder's next command", true)
					if r, ok := send(c, "DEL "+junk); ok {
						if n, err := r.AsInt(); err != nil || n != 0 {
							fail("DEL %s: %v", junk, r)
						}
					}
					set(b1.Set(k, v).Build(), k, v, "SET "+k+" "+v)
				case 2: // a Command used after its Builder built the next
					c1 := b1.Set(junk, "x").Build()
					c2 := b1.Set(k, v).Ex(600 * time.Second).Build()
					refused(c1, "a stale Command", true)
					set(c2, k, v, "SET "+k+" "+v+" EX 600")
				case 3: // values of two Builders, interleaved
					pk, pv := prev(i)
					s1 := b1.Set(k, v)
					s2 := b2.Set(junk, "x")
					gv := b2.Get(pk)
					s2.Ex(time.Second) // stale: b2 started GET
					c1 := s1.Ex(600 * time.Second).Build()
					cg := gv.Build()
					refused(s2.Build(), "a value of the other Builder", true)
					set(c1, k, v, "SET "+k+" "+v+" EX 600")
					if r, ok := send(cg, "GET "+pk); ok && r.Text() != pv {
						fail("GET %s read %q, want %q", pk, r.Text(), pv)
					}
				case 4: // Build twice, and options after it
					s := b1.Set(k, v)
					c := s.Build()
					s.Keepttl()
					again := s.Build()
					set(again, k, v, "SET "+k+" "+v)
					set(c, k, v, "SET "+k+" "+v)
				case 5: // a Batch: a stale Command queued, then the intended ones
					bt.Reset()
					cb := bt.Builder()
					stale := cb.Set(junk, "x").Build()
					bt.OK(cb.Set(k, v).Build())
					h := bt.OK(stale)
					if err := bt.Exec(ctx, cl); !errors.Is(err, ErrStale) {
						fail("batch with a stale command: %v", err)
					}
					if _, err := h.Value(); err == nil {
						fail("stale command's handle: nil error")
					}
					bt.Reset()
					pk, pv := prev(i)
					s := cb.Set(k, v)
					ok := bt.OK(s.Build())
					s.Get() // after Build: refused, the queued copy unchanged
					gr := bt.String(cb.Get(pk).Build())
					if err := bt.Exec(ctx, cl); err != nil {
						fail("batch: %v", err)
						continue
					}
					sent["SET "+k+" "+v]++
					sent["GET "+pk]++
					if set, err := ok.Value(); err != nil || !set {
						fail("batch SET %s: %v %v", k, set, err)
					} else {
						have[k] = v
					}
					if got, _, err := gr.Value(); err != nil || got != pv {
						fail("batch GET %s read %q (%v), want %q", pk, got, err, pv)
					}
				case 6: // the issue's: an option after Build, longer than the one built
					s := b1.Set(k, v)
					c := s.Ex(5 * time.Second).Build()
					s.Ex(600 * time.Second)
					c2 := b2.Set(k, v).Ex(600 * time.Second).Build()
					set(c, k, v, "SET "+k+" "+v+" EX 5")
					set(c2, k, v, "SET "+k+" "+v+" EX 600")
				case 7: // the zero builder value, then the command
					var z Set
					refused(z.Nx().Build(), "the zero builder value", false)
					refused(z.Build(), "the zero builder value", false)
					set(b1.Set(k, v).Build(), k, v, "SET "+k+" "+v)
				}
			}
			mu.Lock()
			for c, n := range sent {
				intended[c] += n
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, f := range failures[:min(len(failures), 20)] {
		t.Error(f)
	}
	if _, err := cl.Do(ctx, "ECHO", mon.stop); err != nil {
		t.Fatal(err)
	}
	select {
	case <-mon.done:
	case <-time.After(WaitLong):
		t.Fatal("MONITOR never saw the end")
	}
	mon.mu.Lock()
	defer mon.mu.Unlock()
	if mon.err != nil {
		t.Errorf("MONITOR: %v", mon.err)
	}
	// What the server ran for the Client: the intended commands, each as
	// many times as it was sent, and the test's own.
	delete(mon.seen, "CLIENT INFO")
	var extra, missing []string
	for c, n := range mon.seen {
		if intended[c] != n {
			extra = append(extra, fmt.Sprintf("%q ran %d times, sent %d", c, n, intended[c]))
		}
	}
	for c, n := range intended {
		if mon.seen[c] == 0 {
			missing = append(missing, fmt.Sprintf("%q sent %d times, never ran", c, n))
		}
	}
	slices.Sort(extra)
	slices.Sort(missing)
	for _, e := range append(extra, missing...)[:min(len(extra)+len(missing), 20)] {
		t.Error("MONITOR: " + e)
	}
	if d := infoField(t, "stats", "total_error_replies") - errs0; d != 0 {
		t.Errorf("the server counted %d error replies", d)
	}
	if id, err := cl.Do(ctx, "CLIENT", "ID"); err != nil || !id.Equal(id0.Text()) {
		t.Errorf("CLIENT ID %v (%v), was %v: the connection broke", id, err, id0)
	}
	// The data: every intended key with its value, nothing else.
	n, err := Srv().Do("DBSIZE")
	if err != nil || n != strconv.Itoa(goroutines*rounds) {
		t.Errorf("DBSIZE %s (%v), want %d", n, err, goroutines*rounds)
	}
	for g := range goroutines {
		for i := range rounds {
			k := fmt.Sprintf("mis:%d:%d", g, i)
			if got, err := Srv().Do("GET", k); err != nil || got != fmt.Sprintf("v%d:%d", g, i) {
				t.Fatalf("GET %s = %q (%v)", k, got, err)
			}
		}
	}
}
