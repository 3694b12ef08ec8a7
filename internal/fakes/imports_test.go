package fakes

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// notYetIndependent lists fakes that still import a client, each with who removes the import. An
// entry fails the test once its fake no longer imports anything, so the list cannot outlive it.
var notYetIndependent = map[string]string{}

// TestFakesImportNoProjectPackage scans the non-test Go files of every fake: an import of the
// module's own packages outside internal/fakes is a fake leaning on a client (or on what the
// client uses). The fakes' tests may drive a client against the fake; that checks the client,
// not the fake.
func TestFakesImportNoProjectPackage(t *testing.T) {
	module := modulePath(t)
	found := map[string][]string{} // fake -> project imports
	fakes := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		fake, _, nested := strings.Cut(filepath.ToSlash(path), "/")
		if !nested {
			return nil // this package
		}
		fakes[fake] = true
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if strings.HasPrefix(p, module+"/") && !strings.HasPrefix(p, module+"/internal/fakes/") &&
				!slices.Contains(found[fake], p) {
				found[fake] = append(found[fake], p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(fakes) < 5 {
		t.Fatalf("found %d fakes under internal/fakes, want at least 5: the scan looks in the wrong place", len(fakes))
	}
	for fake := range fakes {
		why, pending := notYetIndependent[fake]
		switch {
		case len(found[fake]) > 0 && !pending:
			t.Errorf("internal/fakes/%s imports %s: a fake implements the documented contract on its own", fake, strings.Join(found[fake], ", "))
		case len(found[fake]) == 0 && pending:
			t.Errorf("internal/fakes/%s imports no project package any more: remove it from notYetIndependent (%s)", fake, why)
		}
	}
}

// modulePath reads the module path from the go.mod above this directory.
func modulePath(t *testing.T) string {
	t.Helper()
	f, err := os.Open("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(sc.Text(), "module "); ok {
			return strings.TrimSpace(m)
		}
	}
	t.Fatal("go.mod names no module")
	return ""
}
