// Command sqlite measures the state-only commit rate of sqlitestore against its ceiling: a bare
// database/sql loop that runs the very statements a state-only commit runs (BEGIN IMMEDIATE, the
// compare-and-swap UPDATE, the conditional UPDATE of the indexed columns, optionally the dedupe
// INSERT, COMMIT), prepared on one pinned connection exactly as the store runs them, on the same
// driver, connection settings and schema, with the record already encoded. The texts are the
// store's own, from sqlitestore.Statements. For reference it also times the idiomatic loop
// (db.BeginTx, tx.Stmt, tx.Commit) and, when the sqlite3 shell is on PATH, the same transactions
// there (native SQLite, statements parsed every time).
//
// Runs alternate between the store and the bare loop, on a fresh file each, so that the noise of
// a shared machine hits both alike; the report gives medians and the median of the per-round
// ratios. Usage (from the module root):
//
//	go run ./bench/sqlite -out bench/results/sqlitestore.md
package main

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/benchutil"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"
)

// txStatements are the transaction's own statements, which sqlitedb's writer sends for every
// component.
var txStatements = map[string]string{"sqlTxBegin": "BEGIN IMMEDIATE", "sqlTxCommit": "COMMIT"}

// stmt returns the text the store sends under name (see sqlitestore.Statements).
func stmt(name string) string {
	if q, ok := txStatements[name]; ok {
		return q
	}
	q, ok := sqlitestore.Statements()[name]
	if !ok {
		log.Fatalf("sqlitestore sends no statement %s", name)
	}
	return q
}

// The arguments of the statements of a state-only commit, in the order the store binds them, for
// the commit that moves the execution from version v to v+1 with record rec.
func updateArgs(v int64, rec []byte) []any {
	e := exe()
	return []any{e.Outcome, e.ActivePath, v + 1, e.CreatedAt.UnixMicro(), e.UpdatedAt.UnixMicro(), rec, e.ID, v}
}

func indexedArgs() []any {
	e := exe()
	return []any{e.ID, e.DefinitionID, string(e.Status), e.ParentID, nil}
}

func processedArgs(i int) []any { return []any{exe().ID, fmt.Sprintf("ev-%d", i)} }

func main() {
	var (
		out    = flag.String("out", "", "write the markdown report here (default: stdout only)")
		rounds = flag.Int("rounds", 5, "alternating rounds per scenario")
		nNorm  = flag.Int("n", 5000, "commits per run with synchronous=NORMAL")
		nFull  = flag.Int("nfull", 1000, "commits per run with synchronous=FULL")
	)
	flag.Parse()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "stead-bench-sqlite")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cli, _ := exec.LookPath("sqlite3")

	var rep strings.Builder
	fmt.Fprintf(&rep, "# sqlitestore: state-only commit vs. the bare database/sql ceiling\n\n")
	fmt.Fprintf(&rep, "Command: `go run ./bench/sqlite -rounds %d -n %d -nfull %d", *rounds, *nNorm, *nFull)
	if *out != "" {
		fmt.Fprintf(&rep, " -out %s", *out)
	}
	fmt.Fprintf(&rep, "`\n\n")
	fmt.Fprintf(&rep, "Machine: %s/%s, GOMAXPROCS=%d, %s, load average at start %s. Date %s.\n\n",
		runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.Version(), loadavg(), time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&rep, "Each run commits one execution (about %d bytes encoded) N times on a fresh file in WAL mode; runs of the store and of the bare loop alternate, %d rounds each. ", len(record(0)), *rounds)
	fmt.Fprintf(&rep, "Rates are commits per second of wall-clock time, medians over rounds; ratios are medians of the per-round store/bare ratios (for CPU: bare CPU per commit / store CPU per commit, process user+system time from getrusage). ")
	fmt.Fprintf(&rep, "The bare loop runs the store's statements the store's way (one pinned connection, prepared BEGIN IMMEDIATE/COMMIT) with the record encoded ahead; the Tx loop is idiomatic database/sql (db.BeginTx/tx.Stmt/tx.Commit); the sqlite3 shell is native C SQLite parsing every statement (its figure subtracts the shell's start-up).\n\n")
	fmt.Fprintf(&rep, "| synchronous | bundle | N | store (commits/s) | bare loop (commits/s) | store / bare, wall | store (CPU us/commit) | bare loop (CPU us/commit) | store / bare, CPU | database/sql Tx loop (commits/s) | sqlite3 shell (commits/s) |\n")
	fmt.Fprintf(&rep, "|---|---|---|---|---|---|---|---|---|---|---|\n")

	for _, level := range []sqlitedb.Synchronous{sqlitedb.SyncNormal, sqlitedb.SyncFull} {
		n := *nNorm
		if level == sqlitedb.SyncFull {
			n = *nFull
		}
		for _, dedupe := range []bool{false, true} {
			var store, bare, tx []result
			var ratios, cpuRatios, cliRates []float64
			for r := range *rounds {
				var st, b result
				order := []func(){
					func() { st = must(runStore(ctx, file(dir), level, n, dedupe)) },
					func() { b = must(runBare(ctx, file(dir), level, n, dedupe, false)) },
				}
				if r%2 == 1 {
					slices.Reverse(order)
				}
				for _, f := range order {
					f()
				}
				store, bare = append(store, st), append(bare, b)
				ratios, cpuRatios = append(ratios, st.rate/b.rate), append(cpuRatios, b.cpu/st.cpu)
				fmt.Printf("  round %d %s dedupe=%t: store %.0f/s %.1fus cpu, bare %.0f/s %.1fus cpu, ratio %.2f wall %.2f cpu\n",
					r, level, dedupe, st.rate, st.cpu, b.rate, b.cpu, st.rate/b.rate, b.cpu/st.cpu)
				tx = append(tx, must(runBare(ctx, file(dir), level, n, dedupe, true)))
				if cli != "" {
					c, err := runCLI(ctx, cli, file(dir), level, n, dedupe)
					if err != nil {
						log.Fatal(err)
					}
					cliRates = append(cliRates, c)
				}
			}
			bundle := "record only"
			if dedupe {
				bundle = "record + dedupe marker"
			}
			cliCol := "n/a"
			if cli != "" {
				cliCol = fmt.Sprintf("%.0f", benchutil.Median(cliRates))
			}
			rate := func(rs []result) float64 { return benchutil.Median(mapf(rs, func(r result) float64 { return r.rate })) }
			cpu := func(rs []result) float64 { return benchutil.Median(mapf(rs, func(r result) float64 { return r.cpu })) }
			line := fmt.Sprintf("| %s | %s | %d | %.0f | %.0f | **%.2f** | %.1f | %.1f | **%.2f** | %.0f | %s |\n", level, bundle, n,
				rate(store), rate(bare), benchutil.Median(ratios), cpu(store), cpu(bare), benchutil.Median(cpuRatios), rate(tx), cliCol)
			fmt.Print(line)
			rep.WriteString(line)
		}
	}
	fmt.Fprintf(&rep, "\nPer-round figures are printed by the command; targets: >= 10,000 commits/s with NORMAL and >= 0.8x the bare loop.\n")
	if *out != "" {
		if err := os.WriteFile(*out, []byte(rep.String()), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

var files int

func file(dir string) string {
	files++
	return filepath.Join(dir, fmt.Sprintf("run-%d.db", files))
}

// result is one timed run: its wall-clock rate and the process CPU time (user + system) per
// commit. On a shared machine the wall rate mostly measures the wait for a core; CPU per commit
// stays put, so the CPU-based ratio is the steadier estimate of the ceiling ratio.
type result struct {
	rate float64 // commits per second, wall clock
	cpu  float64 // CPU microseconds per commit
}

func must(v result, err error) result {
	if err != nil {
		log.Fatal(err)
	}
	return v
}

type meter struct {
	wall time.Time
	cpu  time.Duration
}

func start() meter { return meter{time.Now(), benchutil.CPUTime()} }

func (m meter) done(n int) result {
	return result{float64(n) / time.Since(m.wall).Seconds(), float64(benchutil.CPUTime()-m.cpu) / float64(time.Microsecond) / float64(n)}
}

func exe() *stead.Execution {
	return &stead.Execution{
		ID: "e", DefinitionID: "order", Status: stead.StatusRunning, ActivePath: "order/paying/awaiting",
		History:   map[string]string{"order": "order/paying", "order/paying": "order/paying/awaiting"},
		Context:   json.RawMessage(`{"order_id":"A-1029","amount":4999,"currency":"EUR","items":[{"sku":"x","n":2},{"sku":"y","n":1}],"attempts":0}`),
		CreatedAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
		UpdatedAt: time.Date(2030, 1, 1, 0, 0, 1, 0, time.UTC),
	}
}

// record is the execution encoded at version v, as the store writes it.
func record(v int64) []byte {
	e := exe()
	e.Version = v
	b, err := stead.EncodeExecution(e)
	if err != nil {
		log.Fatal(err)
	}
	return b
}

func runStore(ctx context.Context, path string, level sqlitedb.Synchronous, n int, dedupe bool) (result, error) {
	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: path, Synchronous: level})
	if err != nil {
		return result{}, err
	}
	defer db.Close()
	s, err := sqlitestore.New(ctx, db)
	if err != nil {
		return result{}, err
	}
	defer s.Close()
	e := exe()
	c, err := s.Commit(ctx, e, stead.Bundle{})
	if err != nil {
		return result{}, err
	}
	e.Version = c.Version
	m := start()
	for i := range n {
		var b stead.Bundle
		if dedupe {
			b.ProcessedEventID = fmt.Sprintf("ev-%d", i)
		}
		if c, err = s.Commit(ctx, e, b); err != nil {
			return result{}, err
		}
		e.Version = c.Version
	}
	return m.done(n), nil
}

// seed creates the store's schema in a new file and commits the execution at version 1, as
// runStore starts, so that the other loops start from the same row.
func seed(ctx context.Context, path string, level sqlitedb.Synchronous) error {
	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: path, Synchronous: level})
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := sqlitestore.New(ctx, db)
	if err != nil {
		return err
	}
	defer s.Close()
	_, err = s.Commit(ctx, exe(), stead.Bundle{})
	return err
}

// runBare runs the store's statements with database/sql on a database opened exactly as the store
// opens it (sqlitedb.Open: one writer connection, the same pragmas), with the schema the store
// creates. Unless idiomatic, it runs them as the store does: prepared on one pinned connection,
// BEGIN IMMEDIATE and COMMIT included. Idiomatic uses db.BeginTx (whose BEGIN is IMMEDIATE by
// the _txlock the writer pool is opened with), tx.Stmt and tx.Commit.
func runBare(ctx context.Context, path string, level sqlitedb.Synchronous, n int, dedupe, idiomatic bool) (result, error) {
	if err := seed(ctx, path, level); err != nil {
		return result{}, err
	}
	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: path, Synchronous: level})
	if err != nil {
		return result{}, err
	}
	defer db.Close()
	conn, err := db.W.Conn(ctx)
	if err != nil {
		return result{}, err
	}
	defer conn.Close()
	var p interface {
		PrepareContext(context.Context, string) (*sql.Stmt, error)
	} = conn
	if idiomatic {
		conn.Close() // back to the pool: BeginTx takes it
		p = db.W
	}
	var stmts [5]*sql.Stmt
	for i, name := range []string{"sqlCommitUpdate", "sqlCommitIndexed", "sqlCommitProcessed", "sqlTxBegin", "sqlTxCommit"} {
		if stmts[i], err = p.PrepareContext(ctx, stmt(name)); err != nil {
			return result{}, err
		}
	}
	upd, idx, mark, begin, commit := stmts[0], stmts[1], stmts[2], stmts[3], stmts[4]
	recs := [][]byte{record(1), record(2)} // encoded ahead: the ceiling does no JSON work
	m := start()
	for i := range n {
		v := int64(i) + 1
		var (
			tx   *sql.Tx
			exec = func(st *sql.Stmt, args ...any) (sql.Result, error) { return st.ExecContext(ctx, args...) }
		)
		if idiomatic {
			if tx, err = db.W.BeginTx(ctx, nil); err != nil {
				return result{}, err
			}
			exec = func(st *sql.Stmt, args ...any) (sql.Result, error) {
				return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
			}
		} else if _, err := begin.ExecContext(ctx); err != nil {
			return result{}, err
		}
		r, err := exec(upd, updateArgs(v, recs[i%2])...)
		if err != nil {
			return result{}, err
		}
		if k, _ := r.RowsAffected(); k != 1 {
			return result{}, fmt.Errorf("bare loop lost its CAS at version %d", v)
		}
		if _, err := exec(idx, indexedArgs()...); err != nil {
			return result{}, err
		}
		if dedupe {
			if _, err := exec(mark, processedArgs(i)...); err != nil {
				return result{}, err
			}
		}
		if idiomatic {
			err = tx.Commit()
		} else {
			_, err = commit.ExecContext(ctx)
		}
		if err != nil {
			return result{}, err
		}
	}
	return m.done(n), nil
}

// runCLI feeds the same transactions to the sqlite3 shell as one script and times it, less the
// time the shell takes to run an empty script on the same file. The statements are the store's
// texts with their arguments written in as literals: the shell binds parameters from a table of
// its own, one more statement per argument, which would be the shell's cost, not SQLite's.
func runCLI(ctx context.Context, cli, path string, level sqlitedb.Synchronous, n int, dedupe bool) (float64, error) {
	if err := seed(ctx, path, level); err != nil {
		return 0, err
	}
	head := fmt.Sprintf(".bail on\nPRAGMA journal_mode=WAL;\nPRAGMA synchronous=%s;\nPRAGMA foreign_keys=1;\nPRAGMA busy_timeout=5000;\n", level)
	var sb strings.Builder
	sb.WriteString(head)
	recs := [][]byte{record(1), record(2)}
	statement := func(name string, args ...any) {
		q, err := inline(stmt(name), args)
		if err != nil {
			log.Fatalf("%s: %v", name, err)
		}
		sb.WriteString(q + ";\n")
	}
	for i := range n {
		v := int64(i) + 1
		statement("sqlTxBegin")
		statement("sqlCommitUpdate", updateArgs(v, recs[i%2])...)
		statement("sqlCommitIndexed", indexedArgs()...)
		if dedupe {
			statement("sqlCommitProcessed", processedArgs(i)...)
		}
		statement("sqlTxCommit")
	}
	run := func(script string) (time.Duration, error) {
		cmd := exec.CommandContext(ctx, cli, path)
		cmd.Stdin = strings.NewReader(script)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		cmd.Stdout = &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("sqlite3: %v: %s", err, stderr.String())
		}
		return time.Since(start), nil
	}
	base, err := run(head)
	if err != nil {
		return 0, err
	}
	d, err := run(sb.String())
	if err != nil {
		return 0, err
	}
	var version int
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	if err := db.QueryRowContext(ctx, stmt("sqlCommitVersion"), exe().ID).Scan(&version); err != nil || version != n+1 {
		return 0, fmt.Errorf("sqlite3 script left version %d (%v), want %d", version, err, n+1)
	}
	return float64(n) / (d - base).Seconds(), nil
}

// inline writes args into q as SQL literals: ?NNN is argument NNN, a bare ? the one after the
// largest number so far, as SQLite numbers them. The store's texts hold no '?' but parameters.
func inline(q string, args []any) (string, error) {
	var b strings.Builder
	last := 0
	for i := 0; i < len(q); i++ {
		if q[i] != '?' {
			b.WriteByte(q[i])
			continue
		}
		j := i + 1
		for j < len(q) && q[j] >= '0' && q[j] <= '9' {
			j++
		}
		k := last + 1
		if j > i+1 {
			var err error
			if k, err = strconv.Atoi(q[i+1 : j]); err != nil {
				return "", err
			}
		}
		last = max(last, k)
		if k < 1 || k > len(args) {
			return "", fmt.Errorf("parameter ?%d of %d arguments", k, len(args))
		}
		switch a := args[k-1].(type) {
		case nil:
			b.WriteString("NULL")
		case string:
			b.WriteString("'" + strings.ReplaceAll(a, "'", "''") + "'")
		case int64:
			b.WriteString(strconv.FormatInt(a, 10))
		case []byte:
			b.WriteString("X'" + hex.EncodeToString(a) + "'")
		default:
			return "", fmt.Errorf("argument %d: no literal for %T", k, a)
		}
		i = j - 1
	}
	return b.String(), nil
}

func mapf[T, U any](xs []T, f func(T) U) []U {
	out := make([]U, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
