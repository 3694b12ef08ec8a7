package main

import (
	"testing"

	"github.com/ingest-dev/ingest/internal/status"
)

// A status's count reads the same in every status report: the number alone without codes, else
// followed by its codes, most common first as given, and the records without one.
func TestWithCodes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n     int64
		codes []status.CodeTally
		want  string
	}{
		{7, nil, "7"},
		{3, []status.CodeTally{{Code: "attempt_unfinished", Count: 2}, {Code: "http_404", Count: 1}}, "3: attempt_unfinished 2, http_404 1"},
		{4, []status.CodeTally{{Code: "attempt_unfinished", Count: 1}}, "4: attempt_unfinished 1, no code 3"},
	} {
		if got := withCodes(c.n, c.codes); got != c.want {
			t.Errorf("withCodes(%d, %v) = %q, want %q", c.n, c.codes, got, c.want)
		}
	}
}
