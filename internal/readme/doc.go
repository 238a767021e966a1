// Package readme keeps the repository's README.md true: its examples
// (example_test.go) are the Go snippets the README shows that no other
// file of the repository holds, run against a private server where one
// can be, compiled at least where one cannot (a cluster, sentinels); and
// its test checks that every Go block of the README is cut, line for
// line, from a Go file of the repository that builds, that every link to
// a file of the repository names one, and that the set-up commands CI
// relies on are there.
package readme
