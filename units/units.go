// Package units holds the rate and size units of besim's model boundaries:
// the one place Gbps (and its kin) is declared. Time is not here: it is
// sim.Time, in picoseconds, with its own constants.
//
// The unit constants are untyped integers, so that one declaration scales a
// model's bits/s and bytes fields (int64), the Rate and Size types below,
// and the scenario format's scenarios.Rate and scenarios.Size alike:
// 25 * units.Gbps is 25e9 bit/s in each, with no conversion at the call
// site.
package units

// Rate is a rate in bits per second.
type Rate int64

// Rate units (SI: 1 Kbps = 1000 bit/s).
const (
	BitPerSecond = 1
	Kbps         = 1000 * BitPerSecond
	Mbps         = 1000 * Kbps
	Gbps         = 1000 * Mbps
	Tbps         = 1000 * Gbps
)

// BitsPerSecond returns r as the plain int64 the models compute with.
func (r Rate) BitsPerSecond() int64 { return int64(r) }

// Size is a number of bytes.
type Size int64

// Size units: KB..TB are powers of 1000, KiB..TiB powers of 1024.
const (
	Byte = 1
	KB   = 1000 * Byte
	MB   = 1000 * KB
	GB   = 1000 * MB
	TB   = 1000 * GB
	KiB  = 1024 * Byte
	MiB  = 1024 * KiB
	GiB  = 1024 * MiB
	TiB  = 1024 * GiB
)

// Bytes returns s as the plain int64 the models compute with.
func (s Size) Bytes() int64 { return int64(s) }
