package chart

import (
	"go/ast"
	goparser "go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestYAMLReferenceCoversTheParser fails when the parser accepts a key that docs/yaml.md does not
// document. The keys are read two ways, so that neither can drift alone: from the parser's source
// (every string a case of a switch in parse.go matches, and every key list a transition is read
// with), and from the parser's behaviour (the keys each unknown-key error says it wants, for every
// place a key can go).
func TestYAMLReferenceCoversTheParser(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/yaml.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("\\| `([a-z_]+)`").FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	// A row may document several keys at once: "| `target`, `guard`, ... |".
	for _, m := range regexp.MustCompile("(?m)^\\| (`[a-z_]+`(?:, `[a-z_]+`)*) \\|").FindAllStringSubmatch(string(doc), -1) {
		for _, k := range strings.Split(m[1], ", ") {
			documented[strings.Trim(k, "`")] = true
		}
	}
	if len(documented) < 20 {
		t.Fatalf("found only %d documented keys in docs/yaml.md: the tables changed shape", len(documented))
	}

	accepted := map[string]string{} // key -> where it was found
	fset := token.NewFileSet()
	f, err := goparser.ParseFile(fset, "parse.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CaseClause:
			for _, e := range n.List {
				if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					accepted[s] = fset.Position(lit.Pos()).String()
				}
			}
		case *ast.CallExpr:
			// p.transitions(node, "target, guard, actions"): the keys a transition may have there.
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "transitions" && len(n.Args) == 2 {
				if lit, ok := n.Args[1].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					for _, k := range strings.Split(s, ", ") {
						accepted[k] = fset.Position(lit.Pos()).String()
					}
				}
			}
		}
		return true
	})
	// The special values of retry, by the same test: "none" and "default" are words a user
	// writes where a key goes.
	for _, word := range []string{"none", "default"} {
		if !strings.Contains(string(doc), "`"+word+"`") {
			t.Errorf("docs/yaml.md does not document the retry word %q", word)
		}
	}

	// What the parser says it wants, wherever a key can go.
	probes := map[string]string{
		"document":        "bogus_key: 1\ninitial: a\nstates: {a: {final: ok}}\n",
		"state":           "initial: a\nstates: {a: {bogus_key: 1, final: ok}}\n",
		"on transition":   "initial: a\nstates: {a: {on: {go: {bogus_key: 1}}}}\n",
		"done transition": "initial: a\nstates: {a: {done: [{bogus_key: 1}]}}\n",
		"timeout":         "initial: a\nstates: {a: {timeout: {after: 1s, bogus_key: 1}}}\n",
		"retry policy":    "initial: a\nstates: {a: {final: ok}}\nretry: {x: {bogus_key: 1}}\n",
		"select":          "initial: a\nstates: {a: {select: {bogus_key: 1}}}\n",
		"invoke":          "initial: a\nstates: {a: {invoke: {bogus_key: 1}}}\n",
		"context key":     "initial: a\ncontext: {k: {bogus_key: 1}}\nstates: {a: {final: ok}}\n",
	}
	want := regexp.MustCompile(`unknown key "bogus_key"[^(]*\(want ([^)]*)\)`)
	for where, src := range probes {
		_, err := Parse("probe.yaml", []byte(src))
		if err == nil {
			t.Errorf("%s: the parser accepted an unknown key", where)
			continue
		}
		m := want.FindStringSubmatch(err.Error())
		if m == nil {
			t.Errorf("%s: no unknown-key error listing what it wants: %v", where, err)
			continue
		}
		for _, k := range strings.Split(m[1], ", ") {
			k = strings.TrimPrefix(k, "or ")
			if _, ok := accepted[k]; !ok {
				accepted[k] = where + " (its error message)"
			}
		}
	}

	var missing []string
	for k, where := range accepted {
		if k == "none" || k == "shallow" || k == "deep" {
			continue // values, documented with their keys (checked above for none)
		}
		if !documented[k] {
			missing = append(missing, k+" (accepted at "+where+")")
		}
	}
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("docs/yaml.md does not document the key %s", m)
	}
}
