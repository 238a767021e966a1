//go:build race

package cache_test

const raceOn = true
