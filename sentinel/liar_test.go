package sentinel_test

import "testing"

// lyingSentinel names addr as the primary of every master set.
func lyingSentinel(t *testing.T, addr string) string {
	return scriptedSentinel(t, func() string { return addr })
}
