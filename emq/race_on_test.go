//go:build race

package emq

const raceEnabled = true
