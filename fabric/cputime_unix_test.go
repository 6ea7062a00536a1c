//go:build unix

package fabric

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time: benchmark metrics based on
// it do not depend on how busy the shared machine is.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
