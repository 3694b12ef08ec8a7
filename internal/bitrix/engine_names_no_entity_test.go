package bitrix_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
)

// engineNamesKnown lists the engine's lines that name an entity in code, not in a comment, by
// file and a text of the line, each with why it stays for now: changing them changes behaviour
// (a message another test reads), which is not this check's to do. An entry whose text is gone
// fails the test, so the list only shrinks.
var engineNamesKnown = []struct{ file, text, why string }{}

// TestEngineNamesNoEntity: the engine is generic code over a registry, so neither its code nor
// its comments name an entity of the catalog; an entity's name in the engine is knowledge that
// belongs to the entity (its hooks, its declaration) or a comment that will go stale. The names
// come from bitrix.Catalog, not a list kept here, so an entity added to the catalog is checked
// too; the engine cannot import the catalog (the catalog imports it), hence this test lives in
// the catalog's package and reads the engine's files. A name is matched as a word, in any case
// ("Users" and "users"), underscores being part of a word (task_comments is not tasks). The
// engine's own tests are left out: they may use any name they like for a synthetic entity.
func TestEngineNamesNoEntity(t *testing.T) {
	names := bitrix.Catalog().Names()
	if len(names) == 0 {
		t.Fatal("the catalog has no entities: nothing would be checked")
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	entity := regexp.MustCompile(`(?i)\b(` + strings.Join(quoted, "|") + `)\b`)

	files, err := filepath.Glob(filepath.Join("engine", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	seen := make([]bool, len(engineNamesKnown))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checked++
	lines:
		for i, line := range strings.Split(string(src), "\n") {
			if m := entity.FindString(line); m != "" {
				for k, kn := range engineNamesKnown {
					if filepath.ToSlash(f) == kn.file && strings.Contains(line, kn.text) {
						seen[k] = true
						continue lines
					}
				}
				t.Errorf("%s:%d names the entity %q: %s", f, i+1, m, strings.TrimSpace(line))
			}
		}
	}
	for k, kn := range engineNamesKnown {
		if !seen[k] {
			t.Errorf("%s no longer has %q naming an entity: take it off the known list", kn.file, kn.text)
		}
	}
	// The engine has dozens of files: a handful means the glob no longer finds the engine (moved,
	// or the test run from elsewhere), and the test must not pass by reading nothing.
	if checked < 20 {
		t.Fatalf("read %d of the engine's files, want the whole engine (at least 20) in ./engine", checked)
	}
}
