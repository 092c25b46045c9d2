package cli

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb/pgdbtest"
)

// TestStoreMustExist checks that a --store path that does not exist is an error that creates
// nothing, for every command that opens a store, unless --create asks for it; migrate creates.
func TestStoreMustExist(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "typo.db")
	for _, args := range [][]string{
		{"inspect", "--store", missing},
		{"inspect", "--store", missing, "some-id"},
		{"start", "--store", missing, "order"},
		{"send", "--store", missing, "o1", "cancel_order"},
		{"run", "--store", missing},
		{"serve", "--store", missing, "--addr", "127.0.0.1:0"},
		{"defs", "--store", missing},
		{"cancel", "--store", missing, "o1"},
		{"purge", "--store", missing, "o1"},
		{"diagram", "--store", missing, "--execution", "o1"},
		{"turns", "conversations", "--store", missing, "--account", "acme"},
	} {
		code, out, errOut := cli(t, t.Context(), args...)
		if code != exitUsage || !strings.Contains(errOut, "no such file: give --create") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q: want 2 and a word about --create", args, code, out, errOut)
		}
		if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%v created the store: %v", args, err)
		}
	}
	code, out, errOut := cli(t, t.Context(), "inspect", "--store", missing, "--create")
	if code != 0 || !strings.Contains(out, "ID") {
		t.Errorf("inspect --create: exit %d, %q %q", code, out, errOut)
	}
	if _, err := os.Stat(missing); err != nil {
		t.Errorf("--create made no store: %v", err)
	}
	fresh := filepath.Join(dir, "fresh.db")
	if code, _, errOut := cli(t, t.Context(), "migrate", "--store", fresh); code != 0 {
		t.Errorf("migrate of a new file: exit %d, %q", code, errOut)
	}
}

// TestOneMeaningPerFlag walks the whole command tree: --definition always loads a definition (a
// file, or the id of one compiled in) and --definition-id always selects executions by the id
// they record; inspect's old --definition filter is gone.
func TestOneMeaningPerFlag(t *testing.T) {
	t.Parallel()
	root := Command(testConfig(), new(strings.Builder), new(strings.Builder))
	meaning := map[string]string{"definition": "definition YAML file", "definition-id": "definition id"}
	seen := map[string]int{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			want, ok := meaning[f.Name]
			if !ok {
				return
			}
			seen[f.Name]++
			usage := strings.ToLower(f.Usage)
			if f.Name == "definition" && !strings.Contains(usage, "yaml file") {
				t.Errorf("%s --definition: %q does not load a definition file", c.CommandPath(), f.Usage)
			}
			if f.Name == "definition-id" && (!strings.Contains(usage, "definition id") || strings.Contains(usage, "yaml")) {
				t.Errorf("%s --definition-id: %q does not select by %s", c.CommandPath(), f.Usage, want)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if seen["definition"] < 8 || seen["definition-id"] < 7 {
		t.Errorf("flags seen: %v", seen)
	}
	db := newStore(t, filepath.Join(t.TempDir(), "s.db"))
	if code, _, errOut := cli(t, t.Context(), "inspect", "--store", db, "--definition", "order"); code != exitUsage || !strings.Contains(errOut, "unknown flag: --definition") {
		t.Errorf("inspect --definition: exit %d, %q: want the usage error of an unknown flag", code, errOut)
	}
	if code, _, errOut := cli(t, t.Context(), "inspect", "--store", db, "--definition-id", "order"); code != 0 {
		t.Errorf("inspect --definition-id: exit %d, %q", code, errOut)
	}
}

// TestConnectFailsFast checks that nothing listening and a missing database are reported in
// under three seconds with what to do, and that --wait-for-db waits as long as it says.
func TestConnectFailsFast(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // a port nothing listens on
	noDB, err := url.Parse(pgdbtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	noDB.Path = "/stead_no_such_database"
	for _, tc := range []struct {
		name     string
		args     []string
		say      string
		min, max time.Duration
	}{
		{"refused", []string{"inspect", "--store", "postgres://postgres@" + closed + "/postgres?sslmode=disable"},
			"is PostgreSQL installed and running there", 0, 3 * time.Second},
		{"missing database", []string{"inspect", "--store", noDB.String()},
			`database "stead_no_such_database" does not exist on that server`, 0, 3 * time.Second},
		{"waiting", []string{"inspect", "--store", "postgres://postgres@" + closed + "/postgres?sslmode=disable", "--wait-for-db", "1s"},
			"after 3 attempts", time.Second, 5 * time.Second},
		{"waiting on SQLite", []string{"inspect", "--store", "x.db", "--wait-for-db", "1s"}, "PostgreSQL only", 0, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			code, _, errOut := cli(t, t.Context(), tc.args...)
			took := time.Since(start)
			if code == 0 || !strings.Contains(errOut, tc.say) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("exit %d, stderr %q: want one line saying %q", code, errOut, tc.say)
			}
			if took < tc.min || took > tc.max {
				t.Errorf("took %v, want %v to %v", took, tc.min, tc.max)
			}
		})
	}
}

// TestMessage checks that the library's stacked package prefixes are said once.
func TestMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("stead: load: %w", stead.ErrUnavailable), "load: unavailable"},
		{fmt.Errorf("chart: %w: reset \"o1\": the context is not a JSON object", stead.ErrInvalid), `invalid input: reset "o1": the context is not a JSON object`},
		{errors.New("pgtransport: migrate:\n  relation exists"), "pgtransport: migrate: relation exists"},
		{errors.New("state \"stead\" is fine"), `state "stead" is fine`},
	} {
		if got := Message(tc.err); got != tc.want {
			t.Errorf("Message(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
	// Through the whole command: one "stead: " and no "chart: ".
	db := newStore(t, filepath.Join(t.TempDir(), "s.db"))
	for _, args := range [][]string{
		{"start", "--store", db, "order", "--context", "[1]", "--definition", "order"},
		{"reset", "--store", db, "ghost", "--context", "[1]"},
		{"send", "--store", db, "ghost", "x"},
	} {
		_, out, errOut := cli(t, t.Context(), args...)
		if strings.Count(out+errOut, "stead: ") > 1 || strings.Contains(out+errOut, "chart: ") {
			t.Errorf("%v: a prefix said twice: stdout %q, stderr %q", args, out, errOut)
		}
	}
}

// TestHowToStart checks that stead without a store says how to begin without a server.
func TestHowToStart(t *testing.T) {
	t.Parallel()
	code, out, _ := cli(t, t.Context())
	if code != 0 || !strings.Contains(out, "needs no database server") || !strings.Contains(out, "--create") {
		t.Errorf("stead: exit %d:\n%s", code, out)
	}
	code, _, errOut := cli(t, t.Context(), "run")
	if code != exitUsage || !strings.Contains(errOut, "--create for a new one: SQLite needs no server") {
		t.Errorf("stead run: exit %d, %q", code, errOut)
	}
	// A binary with no definition of its own says what run needs.
	db := newStore(t, filepath.Join(t.TempDir(), "s.db"))
	code, _, errOut = cliWith(t, t.Context(), Config{}, "run", "--store", db)
	if code != exitUsage || !strings.Contains(errOut, "no definition to run: give --definition <file>") {
		t.Errorf("run without definitions: exit %d, %q", code, errOut)
	}
	code, _, errOut = cliWith(t, t.Context(), Config{}, "diagram")
	if code != exitUsage || !strings.Contains(errOut, "compiled into this binary (it has none)") {
		t.Errorf("diagram without definitions: exit %d, %q", code, errOut)
	}
}
