// Package servertest runs a real, private valkey-server or redis-server for
// the tests of every other package in this module.
//
// # Starting a server
//
// Start finds valkey-server (preferred) or redis-server, picks free loopback
// ports, starts the server as a child process in its own temporary directory
// with persistence off, and waits until it answers PING. Options add a
// password, a unix socket, a TLS port with a freshly generated CA, the DEBUG
// command, or any other server argument.
//
// # One server per test package
//
// A package's TestMain hands its lifetime to Main:
//
//	var srv *servertest.Server
//
//	func TestMain(m *testing.M) {
//		os.Exit(servertest.Main(m, &srv, servertest.Options{}))
//	}
//
//	func TestSomething(t *testing.T) {
//		servertest.Need(t, srv)
//		srv.Flush(t)
//		...
//	}
//
// Without a server binary the tests are skipped with a clear message, except
// when CI=true, where the package fails instead.
//
// # TLS
//
// With Options.TLS, Start fails with an error wrapping ErrNoTLS when the
// binary was built without TLS: Redis up to 7.0 refuses the --tls-port
// directive as unknown, Redis 7.2+ and Valkey find no TLS connection type.
// Main then runs the package server without TLS and records the reason in
// Server.NoTLS; a test that uses the TLS port calls NeedTLS, which skips it
// with that reason ("server binary built without TLS: ..."), under CI=true
// too: that is a property of the binary, not a missing server.
//
// # Redis and Valkey
//
// Options.Debug passes --enable-debug-command only to servers of major
// version 7 or later (Redis 7.0+ and every Valkey), where DEBUG is off by
// default; older servers have it on and would refuse the option.
//
// # Setup without the client under test
//
// Server.Do is a tiny RESP2 client of its own, so that tests can prepare and
// inspect server state without trusting the code they test. This package
// imports no other package of the module, which lets the lowest-level
// packages use it from their internal tests.
package servertest
