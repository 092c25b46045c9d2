package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// defs refuses a set of definition files that drops a version unfinished executions still run on.
func TestDefsGuardsVersionsInUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db := newStore(t, filepath.Join(dir, "s.db"))
	write := func(name string, version int) string {
		p := filepath.Join(dir, name)
		src := "id: flow\nversion: " + string(rune('0'+version)) + "\ninitial: a\nstates:\n  a: {on: {go: b}}\n  b: {final: success}\n"
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	v1, v2 := write("v1.yaml", 1), write("v2.yaml", 2)
	for _, id := range []string{"x1", "x2"} {
		if code, _, errOut := cli(t, ctx, "start", "--store", db, "flow@1", "--id", id); code != 0 {
			t.Fatalf("start: %d %q", code, errOut)
		}
	}
	code, out, errOut := cli(t, ctx, "defs", "--store", db, "--definition", v2)
	if code != 1 || !strings.Contains(errOut, "flow@1") || !strings.Contains(out, "flow@1") || !strings.Contains(out, "NOT LOADED") {
		t.Fatalf("dropping v1: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = cli(t, ctx, "defs", "--store", db, "--definition", v1, "--definition", v2)
	if code != 0 || !strings.Contains(out, "flow@1") || !strings.Contains(out, "2 unfinished") ||
		!strings.Contains(out, "flow@2") || !strings.Contains(out, "newest") {
		t.Fatalf("both versions: exit %d\n%s\n%s", code, out, errOut)
	}
}

// start with the definitions given starts an unversioned id on the newest version and refuses a
// context the definition's declared keys refuse, writing nothing.
func TestStartChecksAgainstTheDefinitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db := newStore(t, filepath.Join(dir, "s.db"))
	for v := 1; v <= 2; v++ {
		src := "id: flow\nversion: " + string(rune('0'+v)) + "\ncontext: {n: {type: integer, required: true}}\ninitial: a\nstates: {a: {}}\n"
		if err := os.WriteFile(filepath.Join(dir, "v"+string(rune('0'+v))+".yaml"), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	v1, v2 := filepath.Join(dir, "v1.yaml"), filepath.Join(dir, "v2.yaml")
	if code, _, errOut := cli(t, ctx, "start", "--store", db, "flow", "--id", "bad", "--context", `{"n":"x"}`,
		"--definition", v1, "--definition", v2); code != 1 || !strings.Contains(errOut, `context key "n" is string, not a integer`) {
		t.Fatalf("a bad context: %d %q", code, errOut)
	}
	if code, _, errOut := cli(t, ctx, "start", "--store", db, "flow", "--id", "good", "--context", `{"n":1}`,
		"--definition", v1, "--definition", v2); code != 0 {
		t.Fatalf("start: %d %q", code, errOut)
	}
	code, out, _ := cli(t, ctx, "inspect", "--store", db, "--json", "good")
	if code != 0 || !strings.Contains(out, `"definition_id": "flow@2"`) && !strings.Contains(out, `"definition_id":"flow@2"`) {
		t.Fatalf("inspect: %d\n%s", code, out)
	}
	if code, _, _ := cli(t, ctx, "inspect", "--store", db, "bad"); code == 0 {
		t.Fatal("the refused execution was stored")
	}
}
