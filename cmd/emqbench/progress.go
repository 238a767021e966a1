package main

import (
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// progressEvery is how often the progress line is redrawn.
const progressEvery = 500 * time.Millisecond

// progress redraws one status line on a terminal while a run goes on:
// ops/s over the last interval, operations done, elapsed time and an ETA.
// It owns one goroutine, started by startProgress and ended by finish.
type progress struct {
	w        io.Writer
	name     string
	total    int64     // math.MaxInt64 when only a deadline bounds the run
	deadline time.Time // zero when only total bounds it
	done     *atomic.Int64

	stop chan struct{}
	wg   sync.WaitGroup
}

// startProgress starts redrawing on w when w is a terminal; otherwise it
// returns nil, and finish on nil does nothing.
func startProgress(w io.Writer, name string, total int64, deadline time.Time, done *atomic.Int64) *progress {
	if !isTerminal(w) {
		return nil
	}
	p := &progress{w: w, name: name, total: total, deadline: deadline, done: done, stop: make(chan struct{})}
	p.wg.Add(1)
	go p.loop()
	return p
}

// loop redraws the line every progressEvery until finish.
func (p *progress) loop() {
	defer p.wg.Done()
	start := time.Now()
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	last, lastAt := int64(0), start
	for {
		select {
		case <-p.stop:
			return
		case now := <-t.C:
			d := p.done.Load()
			rate := float64(d-last) / now.Sub(lastAt).Seconds()
			last, lastAt = d, now
			fmt.Fprintf(p.w, "\r%s  %s ops/s  done %s%s  elapsed %s  ETA %s\033[K",
				p.name, group(int64(rate)), group(d), p.of(), now.Sub(start).Round(100*time.Millisecond),
				p.eta(now, d, float64(d)/now.Sub(start).Seconds()))
		}
	}
}

// of returns " / total" when the run is bounded by a count.
func (p *progress) of() string {
	if p.total == math.MaxInt64 {
		return ""
	}
	return " / " + group(p.total)
}

// eta estimates the time left from the average rate so far, or the
// deadline, whichever comes first.
func (p *progress) eta(now time.Time, done int64, rate float64) string {
	left := time.Duration(math.MaxInt64)
	if p.total != math.MaxInt64 && rate > 0 {
		left = time.Duration(float64(p.total-done) / rate * float64(time.Second))
	}
	if !p.deadline.IsZero() {
		left = min(left, p.deadline.Sub(now))
	}
	if left == time.Duration(math.MaxInt64) {
		return "?"
	}
	return max(left, 0).Round(100 * time.Millisecond).String()
}

// finish stops the redraws and clears the line.
func (p *progress) finish() {
	if p == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	fmt.Fprint(p.w, "\r\033[K")
}
