package graphfake_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A fake must not import the client it fakes: it implements the documented behaviour on its
// own, so that a client's misreading of the documentation cannot hide in both.
func TestFakesDoNotImportTheirClients(t *testing.T) {
	for dir, client := range map[string]string{
		".":             "github.com/ingest-dev/ingest/internal/social/graph",
		"../enrichfake": "github.com/ingest-dev/ingest/internal/social/enrichapi",
	} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range parsed.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if path == client || strings.HasPrefix(path, "github.com/ingest-dev/ingest/internal/social") {
					t.Errorf("%s imports %s: a fake must not import the client it fakes", f, path)
				}
			}
		}
	}
}
