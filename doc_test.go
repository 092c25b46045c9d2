package stead_test

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// TestPackageDocNamesTheWayIn holds the package comment (what `go doc
// github.com/steadhq/stead` prints first) to naming the packages a newcomer writes a flow with.
func TestPackageDocNamesTheWayIn(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	doc := f.Doc.Text()
	for _, want := range []string{"package chart", "package worker", "package turn", "examples/firstflow", "docs/yaml.md"} {
		if !strings.Contains(doc, want) {
			t.Errorf("the package comment does not mention %q", want)
		}
	}
}
