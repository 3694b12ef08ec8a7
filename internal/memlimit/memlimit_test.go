package memlimit

import (
	"runtime/debug"
	"testing"
)

func TestParseCgroup(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"536870912\n", 512 << 20, true},    // v2, a pod limit of 512Mi
		{"max\n", 0, false},                 // v2, no limit
		{"9223372036854771712\n", 0, false}, // v1, no limit
		{"", 0, false},                      // unreadable
		{"0\n", 0, false},                   // nonsense
		{" 268435456 ", 256 << 20, true},    // spaces
	}
	for _, c := range cases {
		if got, ok := ParseCgroup(c.in); got != c.want || ok != c.ok {
			t.Errorf("ParseCgroup(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// TestProcessPrefersGOMEMLIMIT: the runtime's soft limit, when set, is the answer.
func TestProcessPrefersGOMEMLIMIT(t *testing.T) {
	old := debug.SetMemoryLimit(300 << 20)
	defer debug.SetMemoryLimit(old)
	if got := Process(); got != 300<<20 {
		t.Errorf("Process() = %d with GOMEMLIMIT 300 MiB", got)
	}
}
