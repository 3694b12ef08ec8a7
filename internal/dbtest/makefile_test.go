package dbtest

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// An exported DATABASE_URL (a staging server the user tries the CLI on) reaches neither the
// tests nor the demo: make hands scripts/with-pg.sh only TEST_DATABASE_URL or DEMO_DATABASE_URL,
// and with-pg.sh replaces DATABASE_URL for its command.
func TestExportedDatabaseURLIsNotUsed(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	const staging = "postgres://me@staging.example/prod"
	env := slices.DeleteFunc(os.Environ(), func(e string) bool {
		return strings.HasPrefix(e, "TEST_DATABASE_URL=") || strings.HasPrefix(e, "DEMO_DATABASE_URL=") ||
			strings.HasPrefix(e, "PG_URL=")
	})
	env = append(env, "DATABASE_URL="+staging)
	for _, target := range []string{"test", "demo", "bench"} {
		cmd := exec.Command("make", "-n", "-C", "../..", target)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make -n %s: %v\n%s", target, err, out)
		}
		if !strings.Contains(string(out), "PG_URL='' ") || strings.Contains(string(out), staging) {
			t.Errorf("make %s would not start a cluster of its own:\n%s", target, out)
		}
	}

	const explicit = "postgres://me@testdb.example/postgres"
	cmd := exec.Command("../../scripts/with-pg.sh", "sh", "-c", `echo "$DATABASE_URL $TEST_DATABASE_URL"`)
	cmd.Env = append(env, "PG_URL="+explicit)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("with-pg.sh: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != explicit+" "+explicit {
		t.Errorf("with-pg.sh with PG_URL gave its command %q, want %s for both", got, explicit)
	}
}
