// Command turn measures the PostgreSQL turn store (turn/pgturn) beside the ceiling of the same
// server: pgbench's single-row INSERT, run in the same session, interleaved with the Go
// benchmarks so that both see the same load. It writes medians, ratios and the command that
// produced them to bench/results/turn.md.
//
// Run it from the repository root:
//
//	go run ./bench/turn
//
// The server is STEAD_TEST_DATABASE_URL (default the local test server); pgbench must be on the
// PATH. Flags: -count rounds (default 5), -benchtime per Go benchmark (default 2s), -pgbench-time
// seconds per pgbench run (default 5), -out the report path.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/internal/benchutil"
	"github.com/steadhq/stead/pgdb/pgdbtest"
)

const benchmarks = `^(BenchmarkCommitBundle|BenchmarkReadFrom|BenchmarkClaimDue|BenchmarkBeginCommand)$`

func main() {
	count := flag.Int("count", 5, "rounds; every figure is the median of this many")
	benchtime := flag.String("benchtime", "2s", "go test -benchtime of each benchmark")
	pgbenchTime := flag.Int("pgbench-time", 5, "seconds of each pgbench run")
	out := flag.String("out", "bench/results/turn.md", "report path")
	flag.Parse()
	if err := run(*count, *benchtime, *pgbenchTime, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench/turn:", err)
		os.Exit(1)
	}
}

func run(count int, benchtime string, pgbenchTime int, out string) error {
	ctx := context.Background()
	url := pgdbtest.URL()
	if _, err := exec.LookPath("pgbench"); err != nil {
		return fmt.Errorf("pgbench is not on the PATH (apt-get install postgresql-client): %w", err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", url, err)
	}
	defer conn.Close(ctx)
	var version string
	if err := conn.QueryRow(ctx, `SHOW server_version`).Scan(&version); err != nil {
		return err
	}

	// pgbench's table: an identity key and one integer, the smallest durable single-row write.
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	schema := "stead_bench_pgbench_" + hex.EncodeToString(suffix[:])
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+schema+`;
		CREATE TABLE `+schema+`.t (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v int NOT NULL)`); err != nil {
		return err
	}
	defer conn.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`)
	script := fmt.Sprintf("INSERT INTO %s.t (v) VALUES (1);\n", schema)

	insert1 := []float64{} // pgbench, 1 client: µs per INSERT
	insert8 := []float64{} // pgbench, 8 clients: µs of wall time per INSERT
	goRuns := map[string][]float64{}
	ratios := map[string][]float64{} // per round: the operation over that round's pgbench INSERT
	var order []string
	for round := 1; round <= count; round++ {
		fmt.Fprintf(os.Stderr, "round %d/%d: pgbench\n", round, count)
		tps1, err := pgbench(url, script, 1, pgbenchTime)
		if err != nil {
			return err
		}
		tps8, err := pgbench(url, script, 8, pgbenchTime)
		if err != nil {
			return err
		}
		insert1 = append(insert1, 1e6/tps1)
		insert8 = append(insert8, 1e6/tps8)
		fmt.Fprintf(os.Stderr, "round %d/%d: go test -bench\n", round, count)
		res, err := goBench(benchtime)
		if err != nil {
			return err
		}
		for _, r := range res {
			if _, seen := goRuns[r.name]; !seen {
				order = append(order, r.name)
			}
			us := r.nsPerOp / 1e3
			goRuns[r.name] = append(goRuns[r.name], us)
			ratios[r.name] = append(ratios[r.name], us/baseline(r.name, insert1[len(insert1)-1], insert8[len(insert8)-1]))
		}
	}

	var b strings.Builder
	cmd := fmt.Sprintf("go run ./bench/turn -count %d -benchtime %s -pgbench-time %d", count, benchtime, pgbenchTime)
	fmt.Fprintf(&b, "# turn/pgturn benchmarks\n\n")
	fmt.Fprintf(&b, "Command (from the repository root): `%s`\n\n", cmd)
	fmt.Fprintf(&b, "Produced %s at commit %s on PostgreSQL %s, GOMAXPROCS %d (the machine shared with other work); every figure is the median of %d rounds, each round running pgbench and then the Go benchmarks (`go test -run '^$' -bench '%s' -benchtime %s ./turn/pgturn`) against the same server.\n\n",
		time.Now().UTC().Format(time.RFC3339), commit(), version, runtime.GOMAXPROCS(0), count, benchmarks, benchtime)
	m1, m8 := benchutil.Median(insert1), benchutil.Median(insert8)
	fmt.Fprintf(&b, "## The ceiling: pgbench, single-row INSERT (prepared, autocommit)\n\n")
	fmt.Fprintf(&b, "| clients | µs per INSERT | INSERTs/s |\n|---|---:|---:|\n")
	fmt.Fprintf(&b, "| 1 | %.0f | %.0f |\n| 8 | %.0f (wall time per insert) | %.0f |\n\n", m1, 1e6/m1, m8, 1e6/m8)
	fmt.Fprintf(&b, "## turn/pgturn\n\n")
	fmt.Fprintf(&b, "The ratio is the operation's time over the time of one single-row INSERT by pgbench with as many clients (1, or 8 for the 8 concurrent dispatchers) in the same round, the median of the %d per-round ratios (the machine's load drifts between rounds; within a round both see the same): how many durable single-row inserts one operation costs.\n\n", count)
	fmt.Fprintf(&b, "| benchmark | µs/op (median) | ops/s | per item | × pgbench INSERT |\n|---|---:|---:|---:|---:|\n")
	for _, name := range order {
		us := benchutil.Median(goRuns[name])
		clients := "1 client"
		if strings.Contains(name, "dispatchers=8") {
			clients = "8 clients"
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %s | %.2f (%s) |\n", name, us, 1e6/us, perItem(name, us), benchutil.Median(ratios[name]), clients)
	}
	fmt.Fprintf(&b, "\nWhat each operation is:\n\n")
	fmt.Fprintf(&b, "- CommitBundle/events=N: one `Commit` of a bundle with a batch of N events, an outbox entry, the replay record and the turn's phase: BEGIN and the four statements in one round trip (a pgx batch), COMMIT in a second: one durable commit.\n")
	fmt.Fprintf(&b, "- ReadFrom/page=N: one page of N events of an account's stream from the previous page's cursor, with as many events of another tenant interleaved (read-only, no commit).\n")
	fmt.Fprintf(&b, "- ClaimDue/rows=16/dispatchers=8: one `ClaimDue` of 16 due rows while 7 other dispatchers claim from the same outbox (FOR UPDATE SKIP LOCKED); µs/op is wall time over all dispatchers' claims.\n")
	fmt.Fprintf(&b, "- BeginCommand/fresh: a journal admission with a new idempotency key (BEGIN and one INSERT ... ON CONFLICT DO NOTHING in one round trip, then COMMIT); /replay: a known key (the same statement inserts nothing and returns the stored entry; the empty transaction commits without a flush).\n")
	fmt.Fprintf(&b, "\nRaw rounds (µs/op): pgbench 1 client %s; 8 clients %s.\n", fmtList(insert1), fmtList(insert8))
	for _, name := range order {
		fmt.Fprintf(&b, "%s %s.\n", name, fmtList(goRuns[name]))
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Print(b.String())
	return nil
}

// pgbench runs the insert script (its text) with the given number of clients and returns
// transactions/s.
func pgbench(url, script string, clients, seconds int) (float64, error) {
	res, err := benchutil.Pgbench{DSN: url, Script: script, Clients: clients, Threads: min(clients, 2),
		Seconds: seconds, Prepared: true}.Run(context.Background())
	return res.TPS, err
}

type result struct {
	name    string
	nsPerOp float64
}

var benchLine = regexp.MustCompile(`^Benchmark(\S+?)(-\d+)?\s+\d+\s+([0-9.]+) ns/op`)

func goBench(benchtime string) ([]result, error) {
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", benchmarks, "-benchtime", benchtime, "-count", "1", "./turn/pgturn")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	outb, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go test -bench: %w\n%s%s", err, outb, errb.String())
	}
	var res []result
	sc := bufio.NewScanner(bytes.NewReader(outb))
	for sc.Scan() {
		if m := benchLine.FindStringSubmatch(sc.Text()); m != nil {
			ns, err := strconv.ParseFloat(m[3], 64)
			if err != nil {
				return nil, err
			}
			res = append(res, result{name: m[1], nsPerOp: ns})
		}
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("go test -bench printed no results:\n%s", outb)
	}
	return res, nil
}

// perItem spreads an operation's time over the events or rows it carries.
func perItem(name string, us float64) string {
	for _, prefix := range []string{"events=", "page=", "rows="} {
		if i := strings.Index(name, prefix); i >= 0 {
			rest := name[i+len(prefix):]
			if j := strings.IndexByte(rest, '/'); j >= 0 {
				rest = rest[:j]
			}
			if n, err := strconv.Atoi(rest); err == nil && n > 0 {
				return fmt.Sprintf("%.1f µs/item, %.0f items/s", us/float64(n), float64(n)*1e6/us)
			}
		}
	}
	return "—"
}

func fmtList(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 0, 64)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// baseline is the pgbench figure an operation compares with: 8 clients for the concurrent claim,
// 1 client otherwise.
func baseline(name string, one, eight float64) float64 {
	if strings.Contains(name, "dispatchers=8") {
		return eight
	}
	return one
}

// commit names the code measured: the checked-out commit, marked when the tree has changes.
func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		c += " (with uncommitted changes)"
	}
	return c
}
