package servertest

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/echomq/echomq-go/internal/serverbin"
)

// ErrNoServer is returned by Start when neither valkey-server nor
// redis-server can be found.
var ErrNoServer = errors.New("servertest: no redis-server/valkey-server on PATH")

// ErrNoTLS is wrapped in the error Start returns when Options.TLS is set but
// the server binary was built without TLS support; the error quotes what
// the server said. Main then starts the package server without TLS and
// NeedTLS skips the tests that need it.
var ErrNoTLS = errors.New("server binary built without TLS")

const (
	readyTimeout = 30 * time.Second // Start and Restart wait this long for PING: only against a hang
	stopGrace    = 3 * time.Second  // SIGTERM, then SIGKILL after this
	startTries   = 5                // fresh ports tried when a bind fails
	rebindWindow = 30 * time.Second // Restart retries the same ports this long
)

// Options configures a server started by Start.
type Options struct {
	// Args are extra server arguments, appended after the defaults,
	// e.g. "--rename-command", "HELLO", "".
	Args []string
	// Password sets requirepass; Do authenticates with it.
	Password string
	// Unix also listens on a unix socket in the server's temp dir.
	Unix bool
	// TLS also listens with TLS on a second port, using a CA and server
	// certificate generated at start.
	TLS bool
	// Debug enables the DEBUG command.
	Debug bool
	// Cluster starts the server in cluster mode, with its cluster bus on
	// a port of its own (ClusterPort) and a node timeout of
	// ClusterNodeTimeout (default 2 s, so failovers are quick).
	Cluster            bool
	ClusterNodeTimeout time.Duration
}

// Server is a running private server process.
type Server struct {
	// Fixed at Start.

	// Addr is the plain TCP address, "127.0.0.1:port".
	Addr string
	// Port is the plain TCP port.
	Port int
	// UnixPath is the unix socket path when Options.Unix is set.
	UnixPath string
	// TLSAddr is the TLS address when Options.TLS is set.
	TLSAddr string
	// TLSPort is the TLS port when Options.TLS is set.
	TLSPort int
	// ClusterPort is the cluster bus port when Options.Cluster is set.
	ClusterPort int
	// CACertPool trusts the generated CA when Options.TLS is set.
	CACertPool *x509.CertPool
	// Password is Options.Password.
	Password string
	// Bin is the path of the server binary.
	Bin string
	// Version is the server version, e.g. "7.0.15".
	Version string
	// Name is "valkey" or "redis".
	Name string
	// Dir is the server's temporary working directory.
	Dir string
	// NoTLS is set by Main when Options.TLS was asked for but the binary
	// was built without TLS, so the server runs without a TLS port: it is
	// the reason, "servertest: server binary built without TLS: ...".
	NoTLS string

	opts    Options
	logPath string
	// cmdline, when set, replaces args as the command line after the
	// binary (a sentinel's: see sentinel.go).
	cmdline func() []string

	// Guarded by mu: the current process.
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Start starts a private server with opts and waits until it answers PING.
func Start(opts Options) (*Server, error) {
	bin, err := findBinary()
	if err != nil {
		return nil, err
	}
	s := &Server{Bin: bin, Password: opts.Password, opts: opts}
	s.Name = "redis"
	if strings.HasPrefix(filepath.Base(bin), "valkey") {
		s.Name = "valkey"
	}
	if s.Version, err = binaryVersion(bin); err != nil {
		return nil, err
	}
	if s.Dir, err = os.MkdirTemp("", "servertest-"); err != nil {
		return nil, fmt.Errorf("servertest: temp dir: %w", err)
	}
	s.logPath = filepath.Join(s.Dir, "server.log")
	if opts.Unix {
		s.UnixPath = filepath.Join(s.Dir, "server.sock")
	}
	if opts.TLS {
		if s.CACertPool, err = writeCerts(s.Dir); err != nil {
			os.RemoveAll(s.Dir)
			return nil, err
		}
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

// Pid returns the process id of the running server, or 0 when none runs.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Stop ends the server with SIGTERM (SIGKILL after 3 s), waits for it to
// exit and removes its temp dir. Stopping a stopped server is a no-op.
func (s *Server) Stop() error {
	s.terminate()
	if s.Dir == "" {
		return nil
	}
	err := os.RemoveAll(s.Dir)
	s.Dir = ""
	return err
}

// Kill ends the server with SIGKILL at once and waits for it to exit. The
// temp dir stays, so Restart can bring it back.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Restart stops the server if it still runs, then starts it again on the
// same port(s) with the same options, retrying the bind for up to 30 s.
func (s *Server) Restart() error {
	if s.Dir == "" {
		return errors.New("servertest: Restart after Stop")
	}
	s.terminate()
	deadline := time.Now().Add(rebindWindow)
	for {
		err := s.launch()
		if err == nil || !errors.Is(err, errAddrInUse) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Running reports whether the server process is alive.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// terminate sends SIGTERM, then SIGKILL after stopGrace, and waits.
func (s *Server) terminate() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(stopGrace):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
}

// errAddrInUse marks a start that failed because a port was taken.
var errAddrInUse = errors.New("address already in use")

// launch starts the process on the chosen ports and waits until it is ready.
func (s *Server) launch() error {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("servertest: log file: %w", err)
	}
	defer logf.Close() // the child keeps its own descriptor
	logStart, _ := logf.Seek(0, io.SeekEnd)

	args := s.args()
	if s.cmdline != nil {
		args = s.cmdline()
	}
	cmd := exec.Command(s.Bin, args...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("servertest: start %s: %w", s.Bin, err)
	}
	done := make(chan struct{})
	go func() { // owned by the Server: ends when the process exits
		_ = cmd.Wait()
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	err = s.waitReady(done)
	if err == nil && !s.answersAs(cmd.Process.Pid) {
		err = errors.New("another server answers on the port")
	}
	if err != nil {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		log := s.logSince(logStart)
		if s.opts.TLS {
			if why, ok := noTLSEvidence(log); ok {
				return fmt.Errorf("servertest: %w: %s %s (%s) refused --tls-port: %s",
					ErrNoTLS, s.Name, s.Version, s.Bin, why)
			}
		}
		if strings.Contains(log, "ddress already in use") || strings.HasPrefix(err.Error(), "another") {
			return fmt.Errorf("servertest: %s on port %d: %w", s.Name, s.Port, errAddrInUse)
		}
		return fmt.Errorf("servertest: %s %s did not start: %v\n--- server log ---\n%s",
			s.Name, s.Version, err, log)
	}
	return nil
}

// args is the full server command line after the binary.
func (s *Server) args() []string {
	a := []string{
		"--save", "", "--appendonly", "no",
		"--bind", "127.0.0.1", "--port", strconv.Itoa(s.Port),
		"--dir", s.Dir, "--daemonize", "no", "--protected-mode", "no",
	}
	if s.opts.Password != "" {
		a = append(a, "--requirepass", s.opts.Password)
	}
	if s.opts.Unix {
		a = append(a, "--unixsocket", s.UnixPath, "--unixsocketperm", "700")
	}
	if s.opts.TLS {
		a = append(a, "--tls-port", strconv.Itoa(s.TLSPort),
			"--tls-cert-file", filepath.Join(s.Dir, serverCertFile),
			"--tls-key-file", filepath.Join(s.Dir, serverKeyFile),
			"--tls-ca-cert-file", filepath.Join(s.Dir, caCertFile),
			"--tls-auth-clients", "no")
	}
	if s.opts.Debug && s.major() >= 7 {
		// DEBUG is off by default from Redis 7.0 and in every Valkey;
		// older servers have it on and know no such option.
		a = append(a, "--enable-debug-command", "yes")
	}
	if s.opts.Cluster {
		timeout := s.opts.ClusterNodeTimeout
		if timeout <= 0 {
			timeout = 2 * time.Second
		}
		a = append(a, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(s.ClusterPort),
			"--cluster-node-timeout", strconv.FormatInt(timeout.Milliseconds(), 10))
	}
	return append(a, s.opts.Args...)
}

// noTLSEvidence finds in a failed start's log the sign that the binary has
// no TLS support, and returns that line. Redis up to 7.0 built without TLS
// has no tls-* directives at all: a fatal config error quotes the tls- line
// and calls it a bad directive. Redis 7.2+ and Valkey know the directives
// but find no TLS connection type (TLS may also be a module not loaded).
// Other TLS failures (an unreadable certificate) are not this.
func noTLSEvidence(log string) (string, bool) {
	lines := strings.Split(log, "\n")
	for i, line := range lines {
		line = strings.TrimSpace(line)
		for _, sign := range []string{
			"Missing implement of connection type tls",
			"Failed finding TLS support",
			"Failed finding connection listener of tls",
		} {
			if strings.Contains(line, sign) {
				return line, true
			}
		}
		if strings.HasPrefix(line, ">>> 'tls-") && i+1 < len(lines) {
			if next := strings.TrimSpace(lines[i+1]); strings.HasPrefix(next, "Bad directive") {
				return line + " " + next, true
			}
		}
	}
	return "", false
}

// waitReady polls with PING until any reply but LOADING comes back, the
// process exits, or readyTimeout passes.
func (s *Server) waitReady(done <-chan struct{}) error {
	deadline := time.Now().Add(readyTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return errors.New("process exited")
		default:
		}
		// Any reply proves the server serves; NOAUTH or a renamed PING
		// answer with an error, which is fine here.
		_, last = s.do(false, 500*time.Millisecond, "PING")
		var re Error
		if last == nil || errors.As(last, &re) && !strings.HasPrefix(string(re), "LOADING") {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("no PING reply within %v (last: %v)", readyTimeout, last)
}

// answersAs reports whether the server on Addr is the process pid, so that a
// port lost to another server is not mistaken for ours. Without access to
// INFO (an unknown password, a renamed command) it trusts the PING.
func (s *Server) answersAs(pid int) bool {
	info, err := s.do(true, time.Second, "INFO", "server")
	if err != nil {
		return true
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return v == strconv.Itoa(pid)
		}
	}
	return true
}

// logSince returns the server log written after offset, at most its last 8 KiB.
func (s *Server) logSince(offset int64) string {
	b, _ := os.ReadFile(s.logPath)
	if offset < int64(len(b)) {
		b = b[offset:]
	}
	if len(b) > 8<<10 {
		b = b[len(b)-8<<10:]
	}
	return string(bytes.TrimSpace(b))
}

// pickPorts chooses free loopback ports for the plain and TLS listeners.
func (s *Server) pickPorts() error {
	n := 1
	if s.opts.TLS {
		n++
	}
	if s.opts.Cluster {
		n++
	}
	ports, err := serverbin.FreePorts(n)
	if err != nil {
		return err
	}
	if s.opts.Cluster {
		s.ClusterPort = ports[n-1]
	}
	s.Port = ports[0]
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
	if s.opts.TLS {
		s.TLSPort = ports[1]
		s.TLSAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.TLSPort))
	}
	return nil
}

// Where findBinary looks, in order of preference; tests may change them.
// binaryNames and binaryDirs, when set (by tests), replace the default
// search.
var binaryNames, binaryDirs []string

// findBinary returns $ECHOMQ_SERVER when set, else valkey-server if it
// exists, else redis-server (serverbin.Default).
func findBinary() (string, error) {
	var bin string
	var err error
	if binaryNames == nil {
		bin, err = serverbin.Default()
	} else {
		bin, err = serverbin.Find(binaryNames, binaryDirs)
	}
	switch {
	case errors.Is(err, serverbin.ErrNotFound):
		return "", ErrNoServer
	case err != nil:
		return "", fmt.Errorf("servertest: %w", err)
	}
	return bin, nil
}

// binaryVersion runs "bin --version" and returns the v= field.
func binaryVersion(bin string) (string, error) {
	v, err := serverbin.Version(bin)
	if err != nil {
		return "", fmt.Errorf("servertest: %w", err)
	}
	return v, nil
}
