//go:build race

package tcpx

const raceEnabled = true
