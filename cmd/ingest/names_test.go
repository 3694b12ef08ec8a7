package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ingest-dev/ingest/internal/bitrix"
)

// otherSenses are the phrases of cmd/ingest's strings where a word that is also an entity's
// name means something else: Habr's RSS feeds, groups of records or of metrics. Each is left
// out before the words are matched; any other use of an entity's name fails the test.
var otherSenses = []string{
	"--feed", "a feed to read", "feed categories", // Habr's feeds (habr.go)
	"many groups of records", "more groups", "shard groups", // groups of listed records, of pushed metrics
	// The portal's delegated reading (BITRIX_AUTHOR_WEBHOOKS) is the bitrix command's option,
	// migrate's too; its help says where it matters.
	"feed get reads their comments' text through them", "feed comments of these authors are read",
}

// TestCommandLineNamesNoEntity fails when cmd/ingest's code names a Bitrix24 entity: in a string
// (a command's words, a help line, a flag) or through one of package bitrix's names for them
// (bitrix.Chats). The command line is built from the registry: an entity declares its commands'
// help, flags and id formats itself, so adding one touches no file here.
func TestCommandLineNamesNoEntity(t *testing.T) {
	names := bitrix.Catalog().Names()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	// package bitrix's constants that hold an entity's name.
	consts := map[string]string{}
	bitrixFiles, _ := filepath.Glob("../../internal/bitrix/*.go")
	for _, f := range bitrixFiles {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if v, ok := n.(*ast.ValueSpec); ok {
				for i, id := range v.Names {
					if i < len(v.Values) {
						if lit, ok := v.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							if s, _ := strconv.Unquote(lit.Value); slices.Contains(names, s) {
								consts[id.Name] = s
							}
						}
					}
				}
			}
			return true
		})
	}
	if consts["Chats"] != "chats" {
		t.Fatalf("package bitrix's entity constants not found (%v): this test cannot tell", consts)
	}
	word := regexp.MustCompile(`[a-z0-9_]+`)
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(n.Value)
				if err != nil {
					t.Fatalf("%s: %v", fset.Position(n.Pos()), err)
				}
				for _, other := range otherSenses {
					s = strings.ReplaceAll(s, other, "")
				}
				for _, w := range word.FindAllString(s, -1) {
					if slices.Contains(names, w) {
						t.Errorf("%s: names the entity %q: %.120s", fset.Position(n.Pos()), w, n.Value)
					}
				}
			case *ast.SelectorExpr:
				if pkg, ok := n.X.(*ast.Ident); ok && pkg.Name == "bitrix" && consts[n.Sel.Name] != "" {
					t.Errorf("%s: names the entity %q as bitrix.%s", fset.Position(n.Pos()), consts[n.Sel.Name], n.Sel.Name)
				}
			}
			return true
		})
	}
	if checked < 20 {
		t.Fatalf("checked %d files: not cmd/ingest's", checked)
	}
}
