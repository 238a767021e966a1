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
// # Setup without the client under test
//
// Server.Do is a tiny RESP2 client of its own, so that tests can prepare and
// inspect server state without trusting the code they test. This package
// imports no other package of the module, which lets the lowest-level
// packages use it from their internal tests.
package servertest
