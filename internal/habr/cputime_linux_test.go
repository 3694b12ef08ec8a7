package habr

import (
	"syscall"
	"time"
)

// threadCPU returns the CPU time the calling OS thread has used; ok is false where it cannot be
// read. Unlike wall time, it does not grow while other processes have the CPU, so it measures
// the work on a machine shared with other jobs.
func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
