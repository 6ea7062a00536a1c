//go:build !race

package tcpx

const raceEnabled = false
