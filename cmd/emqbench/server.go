package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/echomq/echomq-go/conn"
	"github.com/echomq/echomq-go/internal/serverbin"
)

// localServer is a private valkey-server or redis-server that emqbench
// started for one run: persistence off, loopback only, a free port, its
// own temporary directory. It is stopped when the run ends, however it
// ends (see stop and the signal handling in main).
type localServer struct {
	bin     string // path of the binary
	name    string // "valkey" or "redis"
	version string // from "bin --version"
	addr    string // 127.0.0.1:port
	dir     string // temporary working directory, removed by stop
	module  string // loaded with --loadmodule when not ""

	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	logf *os.File
}

const (
	serverReady = 10 * time.Second // wait this long for the first PING
	serverGrace = 3 * time.Second  // SIGTERM, then SIGKILL after this
	serverTries = 5                // fresh ports tried when a bind fails
)

// errNoServer is returned when neither valkey-server nor redis-server is
// installed.
var errNoServer = errors.New("no valkey-server or redis-server on PATH (install one, e.g. apt-get install redis-server, name one with ECHOMQ_SERVER=/path/to/server, or give -url)")

// findServer returns the path of $ECHOMQ_SERVER when set, else of
// valkey-server, else redis-server.
func findServer() (string, error) {
	bin, err := serverbin.Default()
	switch {
	case errors.Is(err, serverbin.ErrNotFound):
		return "", errNoServer
	case err != nil:
		return "", err
	}
	return bin, nil
}

// startServer starts a private server, loading module when it is not "",
// and waits until it answers PING. On error nothing is left running and
// the temporary directory is gone.
func startServer(ctx context.Context, module string) (*localServer, error) {
	bin, err := findServer()
	if err != nil {
		return nil, err
	}
	s := &localServer{bin: bin, name: serverbin.Kind(bin), module: module}
	if s.version, err = serverbin.Version(bin); err != nil {
		return nil, err
	}
	if s.dir, err = os.MkdirTemp("", "emqbench-"); err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	for try := 1; ; try++ {
		err = s.launch(ctx)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, errPortTaken) || try == serverTries {
			os.RemoveAll(s.dir)
			return nil, err
		}
	}
}

// errPortTaken marks a launch that lost its port to another process.
var errPortTaken = errors.New("port taken")

// launch starts the process on a fresh free port and waits for it.
func (s *localServer) launch(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	logPath := filepath.Join(s.dir, "server.log")
	if s.logf, err = os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600); err != nil {
		return fmt.Errorf("server log: %w", err)
	}
	s.cmd = exec.Command(s.bin,
		"--save", "", "--appendonly", "no",
		"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--dir", s.dir, "--daemonize", "no", "--protected-mode", "no")
	if s.module != "" {
		s.cmd.Args = append(s.cmd.Args, "--loadmodule", s.module)
	}
	s.cmd.Dir = s.dir
	s.cmd.Stdout, s.cmd.Stderr = s.logf, s.logf
	s.cmd.SysProcAttr = sysProcAttr()
	if err := s.cmd.Start(); err != nil {
		s.logf.Close()
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	s.done = make(chan struct{})
	go func() { // owned by s: ends when the process exits
		_ = s.cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(ctx); err != nil {
		s.kill()
		log, _ := os.ReadFile(logPath)
		if bytes.Contains(log, []byte("ddress already in use")) {
			return errPortTaken
		}
		return fmt.Errorf("%s on %s did not start: %v (log: %s)", s.name, s.addr, err, lastLine(log))
	}
	return nil
}

// waitReady dials until the server answers the handshake, the process
// exits, or serverReady passes.
func (s *localServer) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(serverReady)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return errors.New("the process exited")
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		c, err := conn.Dial(ctx, conn.Options{Addr: s.addr, DialTimeout: 500 * time.Millisecond})
		if err == nil {
			_, err = c.Do(ctx, "PING")
			c.Close()
			if err == nil {
				return nil
			}
		}
		last = err
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("no PING reply within %v (last: %v)", serverReady, last)
}

// stop ends the server (SIGTERM, SIGKILL after serverGrace), waits for
// it and removes its directory. It is safe to call more than once.
func (s *localServer) stop() {
	if s == nil || s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(serverGrace):
		s.kill()
	}
	s.logf.Close()
	os.RemoveAll(s.dir)
	s.cmd = nil
}

// kill ends the process at once and waits for it.
func (s *localServer) kill() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
	s.logf.Close()
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	ports, err := serverbin.FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// lastLine returns the last non-empty line of a log, for error messages.
func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
