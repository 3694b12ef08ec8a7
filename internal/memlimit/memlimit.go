// Package memlimit tells how much memory the process may use, so that work which holds data
// in memory can size itself to it: the Go runtime's soft limit (GOMEMLIMIT) when set, else the
// limit of the container it runs in (cgroup v2 memory.max, or v1 memory.limit_in_bytes), as a
// Kubernetes pod's resources.limits.memory sets it.
package memlimit

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// cgroupFiles are where Linux shows the container's limit, v2 first.
var cgroupFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// Process returns the memory the process may use in bytes, 0 when nothing limits it.
func Process() int64 {
	if soft := debug.SetMemoryLimit(-1); soft > 0 && soft < math.MaxInt64 {
		return soft
	}
	for _, f := range cgroupFiles {
		if b, err := os.ReadFile(f); err == nil {
			if n, ok := ParseCgroup(string(b)); ok {
				return n
			}
		}
	}
	return 0
}

// ParseCgroup reads a cgroup memory limit file: bytes, or "max" (v2) or a value near
// math.MaxInt64 (v1, rounded down to a page) for none, which it reports as not ok.
func ParseCgroup(s string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/2 {
		return 0, false
	}
	return n, true
}
