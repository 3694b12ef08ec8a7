//go:build !linux

package habr

import "time"

// threadCPU is only read on Linux.
func threadCPU() (time.Duration, bool) { return 0, false }
