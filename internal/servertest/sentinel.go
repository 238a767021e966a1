package servertest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// SentinelOptions configure StartSentinels. Zero fields take the
// defaults.
type SentinelOptions struct {
	// MasterName is the name the sentinels monitor the primary as.
	// Default "mymaster".
	MasterName string
	// Replicas is how many replicas of the primary run. Default 2.
	Replicas int
	// Sentinels is how many sentinels run. Default 3.
	Sentinels int
	// Quorum is the sentinels that must agree the primary is down.
	// Default 2.
	Quorum int
	// DownAfter is down-after-milliseconds. Default 1 s.
	DownAfter time.Duration
	// FailoverTimeout is failover-timeout. Default 5 s.
	FailoverTimeout time.Duration
	// Password is the data nodes' requirepass (and masterauth, and the
	// sentinels' auth-pass for them).
	Password string
	// SentinelPassword is the sentinels' own requirepass (and
	// sentinel-pass, with which they talk to each other).
	SentinelPassword string
}

func (o SentinelOptions) withDefaults() SentinelOptions {
	if o.MasterName == "" {
		o.MasterName = "mymaster"
	}
	if o.Replicas <= 0 {
		o.Replicas = 2
	}
	if o.Sentinels <= 0 {
		o.Sentinels = 3
	}
	if o.Quorum <= 0 {
		o.Quorum = 2
	}
	if o.DownAfter <= 0 {
		o.DownAfter = time.Second
	}
	if o.FailoverTimeout <= 0 {
		o.FailoverTimeout = 5 * time.Second
	}
	return o
}

// SentinelSet is a private Sentinel deployment: a primary, its replicas
// and the sentinels that monitor it, each a process of its own on a free
// loopback port with persistence off. Stop ends them all, by pid.
type SentinelSet struct {
	// MasterName is the name the sentinels know the primary by.
	MasterName string
	// Data are the data nodes, the primary at start first.
	Data []*Server
	// Sentinels are the sentinel processes (valkey-sentinel, or
	// redis-server --sentinel). Do, Kill, Stop, Restart and Pid work on
	// them as on a data node.
	Sentinels []*Server

	opts SentinelOptions
}

// sentinelWait bounds how long StartSentinels and the waits poll.
const sentinelWait = 30 * time.Second

// StartSentinels starts a primary, o.Replicas replicas (from the binary
// Start uses) and, once the replicas are in sync, o.Sentinels sentinels
// from the matching sentinel binary, and waits until every sentinel knows
// every replica and every other sentinel, so that a failover can start
// at once. On error it stops whatever it started.
func StartSentinels(o SentinelOptions) (*SentinelSet, error) {
	o = o.withDefaults()
	set := &SentinelSet{MasterName: o.MasterName, opts: o}
	ok := false
	defer func() {
		if !ok {
			set.Stop()
		}
	}()
	// No delay before a full sync (5 s by default), so that replicas,
	// and the ones a failover points at their new primary, sync at once.
	data := Options{Password: o.Password, Args: []string{"--repl-diskless-sync-delay", "0"}}
	if o.Password != "" {
		data.Args = append(data.Args, "--masterauth", o.Password)
	}
	primary, err := Start(data)
	if err != nil {
		return nil, err
	}
	set.Data = append(set.Data, primary)
	for range o.Replicas {
		ro := data
		ro.Args = append(append([]string(nil), data.Args...), "--replicaof", "127.0.0.1", strconv.Itoa(primary.Port))
		r, err := Start(ro)
		if err != nil {
			return nil, err
		}
		set.Data = append(set.Data, r)
	}
	if err := poll("replicas in sync", func() (bool, error) {
		info, err := primary.Do("INFO", "replication")
		if err != nil {
			return false, err
		}
		return strings.Count(info, ",state=online,") == o.Replicas, nil
	}); err != nil {
		return nil, err
	}
	bin, err := sentinelBinary(primary)
	if err != nil {
		return nil, err
	}
	for range o.Sentinels {
		s, err := startSentinel(bin, primary, o)
		if err != nil {
			return nil, err
		}
		set.Sentinels = append(set.Sentinels, s)
	}
	if err := set.waitKnown(primary); err != nil {
		return nil, err
	}
	ok = true
	return set, nil
}

// sentinelBinary is the sentinel of the data nodes' binary: valkey-sentinel
// beside valkey-server when it is there, else the server binary itself,
// run with --sentinel.
func sentinelBinary(s *Server) (string, error) {
	if s.Name == "valkey" {
		p := filepath.Join(filepath.Dir(s.Bin), "valkey-sentinel")
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return s.Bin, nil
}

// startSentinel starts one sentinel monitoring primary, in a temp dir
// holding its (rewritable) config file.
func startSentinel(bin string, primary *Server, o SentinelOptions) (*Server, error) {
	s := &Server{Bin: bin, Name: primary.Name, Version: primary.Version, Password: o.SentinelPassword}
	var err error
	if s.Dir, err = os.MkdirTemp("", "servertest-sentinel-"); err != nil {
		return nil, fmt.Errorf("servertest: temp dir: %w", err)
	}
	s.logPath = filepath.Join(s.Dir, "server.log")
	conf := filepath.Join(s.Dir, "sentinel.conf")
	s.cmdline = func() []string {
		// The config is written before each launch, with the port of
		// the moment (a Restart keeps it); the sentinel rewrites it as
		// it learns, so a restart after a failover starts from the
		// config at start, which the other sentinels correct.
		m := o.MasterName
		lines := []string{
			"port " + strconv.Itoa(s.Port),
			"bind 127.0.0.1",
			"daemonize no",
			"protected-mode no",
			"dir " + s.Dir,
			fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d %d", m, primary.Port, o.Quorum),
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", m, o.DownAfter.Milliseconds()),
			fmt.Sprintf("sentinel failover-timeout %s %d", m, o.FailoverTimeout.Milliseconds()),
			fmt.Sprintf("sentinel parallel-syncs %s %d", m, max(1, o.Replicas)),
		}
		if o.Password != "" {
			lines = append(lines, fmt.Sprintf("sentinel auth-pass %s %s", m, o.Password))
		}
		if o.SentinelPassword != "" {
			lines = append(lines, "requirepass "+o.SentinelPassword, "sentinel sentinel-pass "+o.SentinelPassword)
		}
		if err := os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			return []string{"--no-such-config-" + err.Error()}
		}
		if filepath.Base(bin) == "valkey-sentinel" {
			return []string{conf}
		}
		return []string{conf, "--sentinel"}
	}
	for try := 1; ; try++ {
		if err = s.pickPorts(); err == nil {
			err = s.launch()
		}
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, errAddrInUse) || try == startTries {
			os.RemoveAll(s.Dir)
			return nil, err
		}
	}
}

// waitKnown waits until every sentinel names primary, knows every replica
// and every other sentinel.
func (set *SentinelSet) waitKnown(primary *Server) error {
	o := set.opts
	return poll("sentinels ready", func() (bool, error) {
		for _, s := range set.Sentinels {
			f, err := set.masterFields(s)
			if err != nil {
				return false, err
			}
			if f["port"] != strconv.Itoa(primary.Port) || f["num-slaves"] != strconv.Itoa(o.Replicas) ||
				f["num-other-sentinels"] != strconv.Itoa(o.Sentinels-1) || strings.Contains(f["flags"], "down") {
				return false, nil
			}
		}
		return true, nil
	})
}

// masterFields is SENTINEL MASTER's reply from s, as a map.
func (set *SentinelSet) masterFields(s *Server) (map[string]string, error) {
	reply, err := s.Do("SENTINEL", "MASTER", set.MasterName)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(reply, "\n")
	f := make(map[string]string, len(lines)/2)
	for i := 0; i+1 < len(lines); i += 2 {
		f[lines[i]] = lines[i+1]
	}
	return f, nil
}

// SentinelAddrs returns the sentinels' addresses.
func (set *SentinelSet) SentinelAddrs() []string {
	a := make([]string, len(set.Sentinels))
	for i, s := range set.Sentinels {
		a[i] = s.Addr
	}
	return a
}

// Node returns the data node listening on addr, or nil.
func (set *SentinelSet) Node(addr string) *Server {
	for _, s := range set.Data {
		if s.Addr == addr {
			return s
		}
	}
	return nil
}

// Primary returns the data node that the first answering sentinel names
// as primary.
func (set *SentinelSet) Primary() (*Server, error) {
	var last error
	for _, s := range set.Sentinels {
		if !s.Running() {
			continue
		}
		reply, err := s.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", set.MasterName)
		if err != nil {
			last = err
			continue
		}
		host, port, _ := strings.Cut(reply, "\n")
		if n := set.Node(host + ":" + port); n != nil {
			return n, nil
		}
		return nil, fmt.Errorf("servertest: sentinel %s names %s:%s, no node of the set", s.Addr, host, port)
	}
	return nil, fmt.Errorf("servertest: no sentinel answered: %v", last)
}

// WaitSwitch waits until every running sentinel names a primary other
// than old, the same one, and that node says it is a master with every
// other running data node but old its replica, in sync; it returns that
// node. (The sentinels turn a demoted primary that still runs into a
// replica later: WaitRole waits for that.)
func (set *SentinelSet) WaitSwitch(old *Server) (*Server, error) {
	var now *Server
	err := poll("failover from "+old.Addr, func() (bool, error) {
		now = nil
		for _, s := range set.Sentinels {
			if !s.Running() {
				continue
			}
			reply, err := s.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", set.MasterName)
			if err != nil {
				return false, nil
			}
			host, port, _ := strings.Cut(reply, "\n")
			n := set.Node(host + ":" + port)
			if n == nil || n == old || now != nil && n != now {
				return false, nil
			}
			now = n
		}
		if now == nil {
			return false, nil
		}
		info, err := now.Do("INFO", "replication")
		if err != nil || !strings.Contains(info, "role:master") {
			return false, nil
		}
		want := 0
		for _, d := range set.Data {
			if d != now && d != old && d.Running() {
				want++
			}
		}
		return strings.Count(info, ",state=online,") == want, nil
	})
	return now, err
}

// Current returns the primary the master set has now: the node every
// running sentinel names, which says it is a master. It fails while the
// sentinels disagree or the node named is not (yet) a master. A test of
// a client across a failover compares the client with Current rather
// than with WaitSwitch's node: a loaded machine can starve a node past
// down-after-milliseconds, and the sentinels then fail over again.
func (set *SentinelSet) Current() (*Server, error) {
	var now *Server
	for _, s := range set.Sentinels {
		if !s.Running() {
			continue
		}
		reply, err := s.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", set.MasterName)
		if err != nil {
			return nil, fmt.Errorf("servertest: sentinel %s: %w", s.Addr, err)
		}
		host, port, _ := strings.Cut(reply, "\n")
		n := set.Node(host + ":" + port)
		switch {
		case n == nil:
			return nil, fmt.Errorf("servertest: sentinel %s names %s:%s, no node of the set", s.Addr, host, port)
		case now != nil && n != now:
			return nil, fmt.Errorf("servertest: the sentinels disagree: %s and %s", now.Addr, n.Addr)
		}
		now = n
	}
	if now == nil {
		return nil, errors.New("servertest: no sentinel running")
	}
	info, err := now.Do("INFO", "replication")
	if err != nil {
		return nil, err
	}
	if !strings.Contains(info, "role:master\r\n") {
		return nil, fmt.Errorf("servertest: %s, named by the sentinels, is not a master yet", now.Addr)
	}
	return now, nil
}

// WaitCurrent waits for Current to name a primary, and returns it.
func (set *SentinelSet) WaitCurrent() (*Server, error) {
	var now *Server
	err := poll("the sentinels' primary", func() (bool, error) {
		n, err := set.Current()
		now = n
		return err == nil, nil
	})
	return now, err
}

// WaitRole waits until s says (INFO replication) it has the role, "master"
// or "slave", and, as a slave, that its link to its master is up.
func (set *SentinelSet) WaitRole(s *Server, role string) error {
	return poll(s.Addr+" role "+role, func() (bool, error) {
		info, err := s.Do("INFO", "replication")
		if err != nil {
			return false, err
		}
		if !strings.Contains(info, "role:"+role+"\r\n") {
			return false, nil
		}
		return role != "slave" || strings.Contains(info, "master_link_status:up"), nil
	})
}

// Stop stops every sentinel, then every data node.
func (set *SentinelSet) Stop() {
	for _, s := range set.Sentinels {
		s.Stop()
	}
	for _, s := range set.Data {
		s.Stop()
	}
}

// poll runs cond every 50 ms until it holds, for up to sentinelWait; the
// error names what was waited for and cond's last error.
func poll(what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(sentinelWait)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return nil
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("servertest: %s: not within %v (last error: %v)", what, sentinelWait, last)
}
