package emq

// trimLoop keeps the dead set within the worker's retention (DeadMaxAge,
// DeadMaxCount), every TrimInterval with ±20% jitter, until bgStop
// closes.
func (w *Worker) trimLoop() {
	t := newJitterTimer(w.cfg.TrimInterval)
	defer t.stop()
	for {
		select {
		case <-w.bgStop:
			return
		case <-t.c():
			w.trim()
			t.reset()
		}
	}
}

// trim removes what the retention allows, MaintainLimit jobs per
// trim_dead call, until a call removes fewer, 100 calls have run, or
// bgStop closes; a failure is an EventError with Op "trim".
func (w *Worker) trim() {
	for range 100 {
		n, err := w.q.trimDead(w.life, w.cfg.DeadMaxAge, w.cfg.DeadMaxCount, w.cfg.MaintainLimit)
		w.stats.trimmed.Add(uint64(n))
		if err != nil {
			w.emit(Event{Kind: EventError, Op: "trim", Err: err})
			return
		}
		if n < w.cfg.MaintainLimit {
			return
		}
		select {
		case <-w.bgStop:
			return
		default:
		}
	}
}
