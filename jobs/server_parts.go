package jobs

// A Server is made of components, each with its own goroutines, started
// by Start and stopped, in order, by Shutdown:
//
//   - the claimer (the round loop: claims, hands jobs to the handlers,
//     settles their outcomes), stopped first: it releases the jobs
//     claimed ahead and settles what the handlers return;
//   - the extender (renews the lease of each running job);
//   - the maintainer (each queue's promoter and reaper, and the reading
//     again of the queues' limits);
//   - the trimmer (each queue's dead set);
//   - the beater (the registries of workers) and the listener (the
//     queues' cancel channels).
//
// Each owns its goroutines: stop signals them and returns once they all
// returned. A part's task runs its function on a goroutine of its own
// until its stop channel closes.

// part is one component of a Server.
type part interface {
	start()
	stop()
	tasks() []*task // its goroutines' owners
}

// task owns one goroutine running a component's loop until stopped.
type task struct {
	quit chan struct{} // closed by stop: the loop returns
	done chan struct{} // closed when the loop has returned
}

// begin runs run on a goroutine of its own, given the task's stop channel.
func (t *task) begin(run func(stop <-chan struct{})) {
	t.quit, t.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(t.done)
		run(t.quit)
	}()
}

// end closes the stop channel and waits for the loop to return. A task
// never begun ends at once.
func (t *task) end() {
	if t.quit == nil {
		return
	}
	close(t.quit)
	<-t.done
}

// claimer is the round loop.
type claimer struct {
	srv *Server
	t   task
}

func (c *claimer) start()         { c.t.begin(c.srv.roundLoop) }
func (c *claimer) stop()          { c.t.end() }
func (c *claimer) tasks() []*task { return []*task{&c.t} }

// extender renews the leases of the running jobs.
type extender struct {
	srv *Server
	t   task
}

func (e *extender) start()         { e.t.begin(e.srv.extendLoop) }
func (e *extender) stop()          { e.t.end() }
func (e *extender) tasks() []*task { return []*task{&e.t} }

// maintainer runs each queue's promoter and reaper, and reads the limits
// of the queues without their own again, each on its interval.
type maintainer struct {
	srv                     *Server
	promote, reap, readLims task
}

func (m *maintainer) start() {
	m.promote.begin(m.srv.promoteLoop)
	m.reap.begin(m.srv.reapLoop)
	m.readLims.begin(m.srv.limitsLoop)
}

func (m *maintainer) stop() {
	m.promote.end()
	m.reap.end()
	m.readLims.end()
}

func (m *maintainer) tasks() []*task { return []*task{&m.promote, &m.reap, &m.readLims} }

// trimmer bounds each queue's dead set.
type trimmer struct {
	srv *Server
	t   task
}

func (tr *trimmer) start()         { tr.t.begin(tr.srv.trimLoop) }
func (tr *trimmer) stop()          { tr.t.end() }
func (tr *trimmer) tasks() []*task { return []*task{&tr.t} }

// beater keeps the server in the registries of workers.
type beater struct {
	srv *Server
	t   task
}

func (b *beater) start()         { b.t.begin(b.srv.beatLoop) }
func (b *beater) stop()          { b.t.end() }
func (b *beater) tasks() []*task { return []*task{&b.t} }

// listener hears the queues' cancel channels.
type listener struct {
	srv *Server
	t   task
}

func (l *listener) start()         { l.t.begin(l.srv.listen) }
func (l *listener) stop()          { l.t.end() }
func (l *listener) tasks() []*task { return []*task{&l.t} }
