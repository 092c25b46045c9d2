package migration

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// TestReleasedMigrationsAreFrozen holds every component's migrations in this repository to what
// was released: a released file that changes, goes or is overtaken by a new one fails here.
func TestReleasedMigrationsAreFrozen(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() && d.Name() == "migrations" {
			if sqls, _ := filepath.Glob(filepath.Join(p, "*.sql")); len(sqls) > 0 {
				rel, _ := filepath.Rel(root, p)
				dirs = append(dirs, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 6 {
		t.Fatalf("found migrations in %v only; want the six SQL backends'", dirs)
	}
	fsys := os.DirFS(root)
	for _, dir := range dirs {
		if err := CheckFrozen(fsys, filepath.ToSlash(dir)); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
}

func TestCheckFrozen(t *testing.T) {
	one, two := []byte("CREATE TABLE a (x int);"), []byte("ALTER TABLE a ADD COLUMN y int;")
	released := func(lines ...string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("# comment\n\n" + strings.Join(lines, "\n") + "\n")}
	}
	line := func(rel, file string, b []byte) string { return rel + " " + file + " " + Sum(b) }
	for _, tc := range []struct {
		name string
		fsys fstest.MapFS
		want string // "" for no error, else a part of it
	}{
		{"as released", fstest.MapFS{
			"m/001_a.sql": {Data: one}, "m/released.txt": released(line("v0.1.0", "001_a.sql", one)),
		}, ""},
		{"a new migration after the released", fstest.MapFS{
			"m/001_a.sql": {Data: one}, "m/002_b.sql": {Data: two},
			"m/released.txt": released(line("v0.1.0", "001_a.sql", one)),
		}, ""},
		{"changed", fstest.MapFS{
			"m/001_a.sql": {Data: two}, "m/released.txt": released(line("v0.1.0", "001_a.sql", one)),
		}, "001_a.sql, released in v0.1.0, changed"},
		{"gone", fstest.MapFS{
			"m/002_b.sql": {Data: two}, "m/released.txt": released(line("v0.1.0", "001_a.sql", one)),
		}, "is gone"},
		{"a new migration before a released one", fstest.MapFS{
			"m/001_a.sql": {Data: one}, "m/002_b.sql": {Data: two},
			"m/released.txt": released(line("v0.1.0", "002_b.sql", two)),
		}, "must sort after every released one"},
		{"no released file", fstest.MapFS{"m/001_a.sql": {Data: one}}, "released.txt"},
		{"a bad line", fstest.MapFS{
			"m/001_a.sql": {Data: one}, "m/released.txt": released("v0.1.0 001_a.sql"),
		}, "line 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckFrozen(tc.fsys, "m")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("CheckFrozen = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("CheckFrozen = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestAsOf(t *testing.T) {
	a, b, c := []byte("A"), []byte("B"), []byte("C")
	fsys := fstest.MapFS{
		"m/001_a.sql": {Data: a}, "m/002_b.sql": {Data: b}, "m/003_c.sql": {Data: c},
		"m/released.txt": {Data: []byte("v0.1.0 001_a.sql " + Sum(a) + "\nv0.1.0 002_b.sql " + Sum(b) + "\nv0.2.0 003_c.sql " + Sum(c) + "\n")},
	}
	old, err := AsOf(fsys, "m", "v0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := Load(old, ".")
	if err != nil || len(ms) != 2 || ms[0].SQL != "A" || ms[1].SQL != "B" {
		t.Fatalf("AsOf(v0.1.0) loads %+v, %v; want 001 and 002", ms, err)
	}
	if _, err := AsOf(fsys, "m", "v0.3.0"); err == nil {
		t.Fatal("AsOf of a release that shipped nothing succeeded")
	}
}
