package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/pgdb/pgdbtest"
)

// envRunCLI turns the test binary into the stead command (see TestMain), so that a test can run
// the real process and see its exit code and everything it printed, a panic's stack included.
const envRunCLI = "STEAD_TEST_RUN_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(envRunCLI) == "1" {
		Main(testConfig()) // exits
	}
	os.Exit(m.Run())
}

// steadProcess runs the stead command in a process of its own and returns its exit code and output.
func steadProcess(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...) // TestMain hands them to main
	cmd.Env = append(os.Environ(), envRunCLI+"=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errOut.String()
	}
	if err != nil {
		t.Fatalf("run stead %v: %v", args, err)
	}
	return 0, out.String(), errOut.String()
}

// TestMigrateTransportFailsToOpen opens the store successfully and then fails the transport's
// migration (a table of the transport's name that is not the transport's is in the way): stead
// migrate must close what it opened and exit 1 with one line, never panic.
func TestMigrateTransportFailsToOpen(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.Schema(t)
	pool := pgdbtest.Pool(t)
	if _, err := pool.Exec(context.Background(), "CREATE TABLE "+pgx.Identifier{schema, "transport_messages"}.Sanitize()+" (x int)"); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := steadProcess(t, "migrate", "--store", pgdbtest.URL(), "--schema", schema)
	lines := strings.Split(strings.TrimRight(errOut, "\n"), "\n")
	if code != 1 || len(lines) != 1 || !strings.HasPrefix(errOut, "stead: ") || !strings.Contains(errOut, "pgtransport") ||
		strings.Contains(errOut, "panic") || strings.Contains(errOut, "goroutine") {
		t.Fatalf("exit %d, stdout %q, stderr %q: want exit 1 and one line naming pgtransport", code, out, errOut)
	}
	// The store did open: its tables are there.
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'stead_executions'", schema).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the store's table: %d %v; the transport must fail after the store opened", n, err)
	}
}
