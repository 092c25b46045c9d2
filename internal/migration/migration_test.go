package migration

import (
	"testing"
	"testing/fstest"
)

func TestLoad(t *testing.T) {
	fsys := fstest.MapFS{
		"m/002_more.sql":  {Data: []byte("B")},
		"m/001_init.sql":  {Data: []byte("A")},
		"m/readme.txt":    {Data: []byte("ignored")},
		"other/003_x.sql": {Data: []byte("elsewhere")},
	}
	ms, err := Load(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0] != (Migration{1, "init", "A"}) || ms[1] != (Migration{2, "more", "B"}) {
		t.Fatalf("Load = %+v", ms)
	}
}

func TestLoadRefusesBadNames(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"no number":       {"m/init.sql": {}},
		"zero":            {"m/000_init.sql": {}},
		"no name":         {"m/001.sql": {}},
		"repeated number": {"m/001_a.sql": {}, "m/001_b.sql": {}},
		"two digits":      {"m/01_init.sql": {}},
		"four digits":     {"m/0001_init.sql": {}},
		"upper case":      {"m/001_Init.sql": {}},
	} {
		if _, err := Load(fsys, "m"); err == nil {
			t.Errorf("%s: Load accepted it", name)
		}
	}
}
