// Command pgstore measures the PostgreSQL execution store against pgbench running the very same
// SQL on the same server, in the same run, and writes the figures and their ratios to
// bench/results/pgstore.md. Run it from the repository root:
//
//	go run ./bench/pgstore
//
// Flags set the server (-dsn, default STEAD_TEST_DATABASE_URL or the local server), the length of
// each measurement (-seconds), how many alternating rounds to take the median of (-rounds), the
// size of the big tables (-big) and the output file (-out). Everything it creates lives in a
// fresh schema that is dropped at the end.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/benchutil"
	"github.com/steadhq/stead/internal/pgbenchwork"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/pgstore"
)

type bench struct {
	ctx     context.Context
	dsn     string
	pgbench string
	secs    int
	rounds  int
	big     int
	schema  string
	q       string // the schema qualifier
	pool    *pgxpool.Pool
	store   *stead.Store
	admin   *pgxpool.Pool
	sql     map[string]string // the store's statements (pgstore.Statements)
	out     strings.Builder
	runID   atomic.Int64
	only    string
	nosync  *stead.Store // the same schema on connections with synchronous_commit off
	nspool  *pgxpool.Pool
}

func main() {
	b := &bench{ctx: context.Background()}
	flag.StringVar(&b.dsn, "dsn", pgdbtest.URL(), "PostgreSQL URL")
	flag.StringVar(&b.pgbench, "pgbench", "/usr/bin/pgbench", "pgbench binary")
	flag.IntVar(&b.secs, "seconds", 2, "length of each measurement in seconds")
	flag.IntVar(&b.rounds, "rounds", 11, "alternating rounds per comparison (the median is reported)")
	flag.IntVar(&b.big, "big", 1_000_000, "rows in the big outbox and listing tables")
	out := flag.String("out", "bench/results/pgstore.md", "where to write the results")
	flag.StringVar(&b.only, "only", "", "comma-separated subset of: state,complex,load,batch,claim,list (default all)")
	flag.Parse()
	if err := b.run(*out); err != nil {
		log.Fatal(err)
	}
}

func (b *bench) run(outPath string) error {
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	b.schema = "stead_bench_" + hex.EncodeToString(rnd[:])
	b.q = pgdb.Qualifier(b.schema)
	b.sql = pgstore.Statements(b.schema)
	var err error
	if b.admin, err = pgxpool.New(b.ctx, b.dsn); err != nil {
		return err
	}
	defer b.admin.Close()
	if b.pool, err = pgdb.Open(b.ctx, b.dsn, pgdb.Config{MaxConns: 16}); err != nil {
		return err
	}
	defer b.pool.Close()
	if b.store, err = pgstore.New(b.ctx, b.pool, pgstore.WithSchema(b.schema)); err != nil {
		return err
	}
	defer func() {
		b.store.Close()
		if _, err := b.admin.Exec(context.Background(), `DROP SCHEMA `+pgx.Identifier{b.schema}.Sanitize()+` CASCADE`); err != nil {
			log.Printf("drop schema %s: %v", b.schema, err)
		}
	}()
	cfg, err := pgxpool.ParseConfig(b.dsn)
	if err != nil {
		return err
	}
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	cfg.MaxConns = 16
	if b.nspool, err = pgxpool.NewWithConfig(b.ctx, cfg); err != nil {
		return err
	}
	defer b.nspool.Close()
	if b.nosync, err = pgstore.New(b.ctx, b.nspool, pgstore.WithSchema(b.schema), pgstore.WithoutMigrate()); err != nil {
		return err
	}
	defer b.nosync.Close()
	b.header()
	steps := []struct {
		name string
		run  func() error
	}{
		{"state", b.stateOnly}, {"complex", b.complexCommit}, {"load", b.loadForEvent},
		{"batch", b.batch}, {"claim", b.claim}, {"list", b.listing},
	}
	for _, step := range steps {
		if b.only != "" && !slices.Contains(strings.Split(b.only, ","), step.name) {
			continue
		}
		if err := step.run(); err != nil {
			return err
		}
	}
	if err := os.WriteFile(outPath, []byte(b.out.String()), 0o644); err != nil {
		return err
	}
	fmt.Print(b.out.String())
	return nil
}

func (b *bench) printf(format string, args ...any) { fmt.Fprintf(&b.out, format, args...) }

func (b *bench) header() {
	var version, fsync, syncCommit string
	_ = b.admin.QueryRow(b.ctx, `SELECT version(), current_setting('fsync'), current_setting('synchronous_commit')`).Scan(&version, &fsync, &syncCommit)
	b.printf("# pgstore benchmarks\n\n")
	only := ""
	if b.only != "" {
		only = " -only " + b.only
	}
	b.printf("Produced by `go run ./bench/pgstore -seconds %d -rounds %d -big %d%s` on %s.\n\n",
		b.secs, b.rounds, b.big, only, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	load, _ := os.ReadFile("/proc/loadavg")
	b.printf("- machine: %d CPUs (GOMAXPROCS %d), shared with other jobs while measuring (load average at start: %s); %s\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " "), version)
	b.printf("- fsync=%s, synchronous_commit=%s: every commit waits for a WAL flush, so commit rates are bounded by the disk's flush latency, which varies a lot on this machine\n", fsync, syncCommit)
	b.printf("- each comparison alternates its two sides %d times (%d s each, the first side alternating) and reports the median of each side and the median of the per-round ratios\n", b.rounds, b.secs)
	b.printf("- the ceiling is pgbench (`%s -n -M prepared -f script.sql -c N -j N -T %d`) running the statement the store sends, taken from pgstore.Statements, with pgbench variables in place of the parameters\n\n", b.pgbench, b.secs)
}

// measure runs fn on callers goroutines for the measurement time and returns calls per second.
func (b *bench) measure(callers int, fn func(w, i int) error) (float64, error) {
	var n atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	deadline := time.Now().Add(time.Duration(b.secs) * time.Second)
	start := time.Now()
	for w := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				if err := fn(w, i); err != nil {
					errs <- err
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return float64(n.Load()) / time.Since(start).Seconds(), nil
}

// runPgbench runs script on callers clients and returns its tps and transaction count.
func (b *bench) runPgbench(script string, callers int, vars map[string]string) (float64, int64, error) {
	res, err := benchutil.Pgbench{Bin: b.pgbench, DSN: b.dsn, Script: script, Clients: callers,
		Threads: callers, Seconds: b.secs, Prepared: true, Vars: vars}.Run(b.ctx)
	return res.TPS, res.Transactions, err
}

// pgbenchSQL turns a store statement into a pgbench script line: each $n becomes args[n-1].
func pgbenchSQL(stmt string, args ...string) string {
	s := regexp.MustCompile(`\$(\d+)`).ReplaceAllStringFunc(stmt, func(m string) string {
		n, _ := strconv.Atoi(m[1:])
		return args[n-1]
	})
	return strings.Join(strings.Fields(s), " ") + ";\n"
}

// compare alternates a and b for the configured rounds and returns both medians and the median
// of the per-round ratios a/b.
func (b *bench) compare(a, c func() (float64, error)) (ma, mc, ratio float64, as, cs []float64, err error) {
	var ratios []float64
	for r := range b.rounds {
		var x, y float64
		if r%2 == 0 {
			if x, err = a(); err == nil {
				y, err = c()
			}
		} else {
			if y, err = c(); err == nil {
				x, err = a()
			}
		}
		if err != nil {
			return
		}
		as, cs = append(as, x), append(cs, y)
		ratios = append(ratios, x/y)
	}
	return benchutil.Median(as), benchutil.Median(cs), benchutil.Median(ratios), as, cs, nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

func fmtRuns(xs []float64) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.FormatFloat(x, 'f', 0, 64))
	}
	return strings.Join(s, ", ")
}

// stateOnlyScript is the fast-path call as pgbench sends it: client i commits execution "i" at
// the version it counts itself (old starts at -1, so the first call inserts), with its version as
// the processed event id. pgbench variables cannot be empty, so the two empty strings and the
// NULL finish time the store sends for a running execution are written as literals.
func (b *bench) stateOnlyScript() (string, map[string]string, error) {
	exe := pgbenchwork.Execution("0")
	exe.Version = 1
	data, err := stead.EncodeExecution(exe)
	if err != nil {
		return "", nil, err
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	script := "\\set old :old + 1\n" + pgbenchSQL(b.sql["CommitState"],
		":client_id", ":def", ":status", "''", ":path", "''", ":created", ":updated", "NULL",
		":data", ":old", ":old")
	vars := map[string]string{"old": "-1", "def": exe.DefinitionID, "status": string(exe.Status),
		"path": exe.ActivePath, "created": now, "updated": now, "data": string(data)}
	return script, vars, nil
}

// pgbenchStateOnly runs the fast-path script and checks that every call won its CAS.
func (b *bench) pgbenchStateOnly(callers int) (float64, error) {
	script, vars, err := b.stateOnlyScript()
	if err != nil {
		return 0, err
	}
	// pgbench's executions are named by client number; start each run from scratch.
	if _, err := b.admin.Exec(b.ctx, `DELETE FROM `+b.q+`stead_executions WHERE id ~ '^[0-9]+$';
		DELETE FROM `+b.q+`stead_processed_events WHERE execution_id ~ '^[0-9]+$'`); err != nil {
		return 0, err
	}
	tps, tx, err := b.runPgbench(script, callers, vars)
	if err != nil {
		return 0, err
	}
	var sum int64
	if err := b.admin.QueryRow(b.ctx, `SELECT COALESCE(sum(version), 0) FROM `+b.q+`stead_executions WHERE id ~ '^[0-9]+$'`).Scan(&sum); err != nil {
		return 0, err
	}
	if sum != tx {
		return 0, fmt.Errorf("pgbench ran %d transactions but the versions add up to %d: some calls lost their CAS", tx, sum)
	}
	return tps, nil
}

func (b *bench) storeStateOnly(callers int) (float64, error) {
	run := b.runID.Add(1)
	exes := pgbenchwork.Executions(fmt.Sprintf("go-%d-", run), callers)
	return b.measure(callers, func(w, i int) error {
		exes[w].UpdatedAt = time.Now()
		return commit(b.ctx, b.store, exes[w], stead.Bundle{ProcessedEventID: strconv.Itoa(i)})
	})
}

func (b *bench) stateOnly() error {
	log.Print("state-only commit")
	b.printf("## State-only commit (fast path, one round-trip)\n\n")
	b.printf("Each caller commits its own execution (about 400 bytes of JSON) with a processed-event marker, through `stead_commit_state`. pgbench runs that same `SELECT` with `-M prepared`; the run is checked afterwards (the versions add up to pgbench's transaction count, so every call won its CAS).\n\n")
	b.printf("| callers | pgstore commits/s | pgbench commits/s | ratio | target ≥ 0.9× | rounds (pgstore; pgbench) |\n|---|---|---|---|---|---|\n")
	for _, callers := range []int{1, 8} {
		ms, mp, ratio, ss, ps, err := b.compare(
			func() (float64, error) { return b.storeStateOnly(callers) },
			func() (float64, error) { return b.pgbenchStateOnly(callers) })
		if err != nil {
			return err
		}
		b.printf("| %d | %.0f | %.0f | %.2f× | %s | %s; %s |\n", callers, ms, mp, ratio, verdict(ratio >= 0.9), fmtRuns(ss), fmtRuns(ps))
	}
	b.printf("\n")
	return nil
}

func (b *bench) complexCommit() error {
	log.Print("complex commit")
	b.printf("## Complex commit: 2 emits + dedupe + 1 timer + trace\n\n")
	b.printf("pgstore sends the whole bundle in one round-trip, a call of the `stead_commit_bundle` function (pgstore/migrations/001_init.sql), which runs the CAS and then only the side-effect statements the bundle needs. The baseline sends the same bundle one statement per round-trip inside BEGIN/COMMIT (9 round-trips: BEGIN, CAS UPDATE, 2 outbox INSERTs, dedupe, timer upsert, trace INSERT with MAX()+1, trace cap DELETE, COMMIT; `internal/pgbenchwork.PerStatementCommit`), on the same pool and tables.\n\n")
	b.printf("The second table runs both on connections with `synchronous_commit = off` (a session setting, nothing else changes): without the wait for the WAL flush, what remains is the round-trips and the server's work, which is what pipelining saves.\n\n")
	for _, variant := range []struct {
		title string
		s     *stead.Store
		pool  *pgxpool.Pool
	}{{"synchronous_commit = on (durable; the target)", b.store, b.pool}, {"synchronous_commit = off (round-trips and server work only)", b.nosync, b.nspool}} {
		b.printf("### %s\n\n", variant.title)
		b.printf("| callers | pgstore commits/s | one statement per round-trip | ratio | target ≥ 1.5× | rounds (pgstore; per statement) |\n|---|---|---|---|---|---|\n")
		s := variant.s
		for _, callers := range []int{1, 8} {
			ms, mp, ratio, ss, ps, err := b.compare(
				func() (float64, error) {
					run := b.runID.Add(1)
					exes := pgbenchwork.Executions(fmt.Sprintf("cx-%d-", run), callers)
					return b.measure(callers, func(w, i int) error {
						return commit(b.ctx, s, exes[w], pgbenchwork.ComplexBundle(i))
					})
				},
				func() (float64, error) {
					run := b.runID.Add(1)
					exes := pgbenchwork.Executions(fmt.Sprintf("ps-%d-", run), callers)
					for _, e := range exes {
						if err := commit(b.ctx, s, e, stead.Bundle{}); err != nil {
							return 0, err
						}
					}
					return b.measure(callers, func(w, i int) error {
						return pgbenchwork.PerStatementCommit(b.ctx, variant.pool, b.q, exes[w], pgbenchwork.ComplexBundle(i), pgstore.DefaultTraceCap)
					})
				})
			if err != nil {
				return err
			}
			b.printf("| %d | %.0f | %.0f | %.2f× | %s | %s; %s |\n", callers, ms, mp, ratio, verdict(ratio >= 1.5), fmtRuns(ss), fmtRuns(ps))
		}
		b.printf("\n")
	}
	// The side effects pile up; keep later measurements on small tables.
	_, err := b.admin.Exec(b.ctx, `TRUNCATE `+b.q+`stead_outbox, `+b.q+`stead_trace, `+b.q+`stead_timers`)
	return err
}

func (b *bench) loadForEvent() error {
	log.Print("load for event")
	b.printf("## Load for event (one query: the execution and its dedupe marker)\n\n")
	b.printf("| callers | pgstore loads/s | pgbench loads/s | ratio | rounds (pgstore; pgbench) |\n|---|---|---|---|---|\n")
	for w := range 8 {
		exe := pgbenchwork.Execution(fmt.Sprintf("load-%d", w))
		if err := commit(b.ctx, b.store, exe, stead.Bundle{ProcessedEventID: "seen"}); err != nil {
			return err
		}
	}
	script := "\\set w :client_id\n" + pgbenchSQL(b.sql["LoadForEvent"], "('load-' || :w)", ":ev")
	for _, callers := range []int{1, 8} {
		ms, mp, ratio, ss, ps, err := b.compare(
			func() (float64, error) {
				return b.measure(callers, func(w, _ int) error {
					_, ok, err := b.store.LoadForEvent(b.ctx, fmt.Sprintf("load-%d", w), "seen")
					if err == nil && !ok {
						err = errors.New("marker not seen")
					}
					return err
				})
			},
			func() (float64, error) {
				tps, _, err := b.runPgbench(script, callers, map[string]string{"ev": "seen"})
				return tps, err
			})
		if err != nil {
			return err
		}
		b.printf("| %d | %.0f | %.0f | %.2f× | %s; %s |\n", callers, ms, mp, ratio, fmtRuns(ss), fmtRuns(ps))
	}
	b.printf("\n(pgbench builds the id with `'load-' || :client_id`, the only change to the statement.)\n\n")
	return nil
}

func (b *bench) batch() error {
	log.Print("batch commit")
	const callers, size = 8, 100
	b.printf("## Batch commit of %d state-only steps, %d callers\n\n", size, callers)
	b.printf("Each caller owns %d executions and commits a step of every one of them per `CommitBatch` (one statement, one transaction, one WAL flush). The ceiling is pgbench's single-row fast path at %d clients, alternated with it.\n\n", size, callers)
	ms, mp, ratio, ss, ps, err := b.compare(
		func() (float64, error) {
			run := b.runID.Add(1)
			batches := make([][]stead.CommitItem, callers)
			for w := range batches {
				for j := range size {
					batches[w] = append(batches[w], stead.CommitItem{Execution: pgbenchwork.Execution(fmt.Sprintf("b-%d-%d-%d", run, w, j))})
				}
			}
			calls, err := b.measure(callers, func(w, i int) error {
				for j := range batches[w] {
					batches[w][j].Bundle.ProcessedEventID = strconv.Itoa(i)
				}
				res, err := b.store.CommitBatch(b.ctx, batches[w])
				for j, r := range res {
					if err == nil {
						err = r.Err
					}
					batches[w][j].Execution.Version = r.Version
				}
				return err
			})
			return calls * size, err
		},
		func() (float64, error) { return b.pgbenchStateOnly(callers) })
	if err != nil {
		return err
	}
	b.printf("| pgstore steps/s (batches of %d) | pgbench single-row steps/s | ratio | target ≥ 3× | rounds (pgstore; pgbench) |\n|---|---|---|---|---|\n", size)
	b.printf("| %.0f | %.0f | %.2f× | %s | %s; %s |\n\n", ms, mp, ratio, verdict(ratio >= 3), fmtRuns(ss), fmtRuns(ps))
	return nil
}

// latencies times fn n times, running after (untimed, when set) after each call, and returns the
// median and the 90th percentile.
func latencies(n int, fn, after func() error) (time.Duration, time.Duration, error) {
	var ds []float64
	for range n {
		start := time.Now()
		if err := fn(); err != nil {
			return 0, 0, err
		}
		ds = append(ds, float64(time.Since(start)))
		if after != nil {
			if err := after(); err != nil {
				return 0, 0, err
			}
		}
	}
	slices.Sort(ds)
	return time.Duration(benchutil.Median(ds)), time.Duration(ds[len(ds)*9/10]), nil
}

// claimSide is one outbox of the claim comparison: a store on its own schema and its backlog.
type claimSide struct {
	pending int
	s       *stead.Store
	schema  string
	q       string
	claimed []stead.OutboxEntry
	calls   []float64 // ClaimOutbox latencies
	alone   []float64 // the statement alone, rolled back
}

func (b *bench) claim() error {
	log.Print("claim")
	const iterations = 300
	b.printf("## Claim of 100 outbox rows against the backlog\n\n")
	b.printf("Two outboxes, in two schemas of the same database, are filled with `generate_series` (1,000 and %d rows), vacuumed and analyzed. Then, %d times and alternating between the two, 100 rows are claimed (timed) and acknowledged and 100 new rows appended (not timed), so each backlog stays constant; alternating call by call lets the machine's noise hit both alike. A claim writes its 100 leases and waits for the WAL flush, which dominates.\n\n", b.big, iterations)
	b.printf("The last two columns time the claim statement alone (the SQL of pgstore.Statements, one round-trip) inside a transaction that is rolled back, so no WAL flush is waited for: that is the part of the cost a backlog could make grow.\n\n")
	small := &claimSide{pending: 1000, s: b.store, schema: b.schema, q: b.q}
	bigSchema := b.schema + "_big"
	big, err := pgstore.New(b.ctx, b.pool, pgstore.WithSchema(bigSchema))
	if err != nil {
		return err
	}
	defer func() {
		big.Close()
		if _, err := b.admin.Exec(context.Background(), `DROP SCHEMA `+pgx.Identifier{bigSchema}.Sanitize()+` CASCADE`); err != nil {
			log.Printf("drop schema %s: %v", bigSchema, err)
		}
	}()
	sides := []*claimSide{small, {pending: b.big, s: big, schema: bigSchema, q: pgdb.Qualifier(bigSchema)}}
	fill := func(c *claimSide, n int) error {
		_, err := b.admin.Exec(b.ctx, `INSERT INTO `+c.q+`stead_outbox (source_id, target_id, event)
			SELECT 'src-' || (g % 1000), 'dst-' || (g % 1000), '{"id":"e' || g || '","kind":"Tick"}'
			FROM generate_series(1, $1::int) g`, n)
		return err
	}
	for _, c := range sides {
		if _, err := b.admin.Exec(b.ctx, `TRUNCATE `+c.q+`stead_outbox`); err != nil {
			return err
		}
		if err := fill(c, c.pending); err != nil {
			return err
		}
		if _, err := b.admin.Exec(b.ctx, `VACUUM ANALYZE `+c.q+`stead_outbox`); err != nil {
			return err
		}
	}
	for range iterations {
		for _, c := range sides {
			start := time.Now()
			c.claimed, err = c.s.ClaimOutbox(b.ctx, time.Now(), time.Minute, 100)
			if err == nil && len(c.claimed) != 100 {
				err = fmt.Errorf("claimed %d rows", len(c.claimed))
			}
			if err != nil {
				return err
			}
			c.calls = append(c.calls, float64(time.Since(start)))
			seqs := make([]int64, len(c.claimed))
			for i, e := range c.claimed {
				seqs[i] = e.Seq
			}
			if err := c.s.AckOutbox(b.ctx, seqs); err != nil {
				return err
			}
			if err := fill(c, 100); err != nil {
				return err
			}
		}
	}
	for range iterations {
		for _, c := range sides {
			d, err := b.claimAlone(c)
			if err != nil {
				return err
			}
			c.alone = append(c.alone, float64(d))
		}
	}
	b.printf("| pending rows | ClaimOutbox median | ClaimOutbox p90 | statement alone, median | statement alone, p90 |\n|---|---|---|---|---|\n")
	for _, c := range sides {
		b.printf("| %d | %s | %s | %s | %s |\n", c.pending, dur(benchutil.Median(c.calls)), dur(pct(c.calls, 90)), dur(benchutil.Median(c.alone)), dur(pct(c.alone, 90)))
	}
	b.printf("\nRatio of the medians (%d / 1,000 pending): ClaimOutbox %.2f×, statement alone %.2f× (target: the same time).\n\n",
		b.big, benchutil.Median(sides[1].calls)/benchutil.Median(sides[0].calls), benchutil.Median(sides[1].alone)/benchutil.Median(sides[0].alone))
	_, err = b.admin.Exec(b.ctx, `TRUNCATE `+b.q+`stead_outbox`)
	return err
}

// claimAlone times the claim statement in a transaction it then rolls back.
func (b *bench) claimAlone(c *claimSide) (time.Duration, error) {
	tx, err := b.admin.Begin(b.ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(b.ctx) //nolint:errcheck // the point is to roll back
	claimSQL := strings.Replace(pgstore.Statements(c.schema)["ClaimOutbox"], "{limit}", "100", 1)
	now := time.Now()
	start := time.Now()
	tag, err := tx.Exec(b.ctx, claimSQL, now, now.Add(time.Minute))
	d := time.Since(start)
	if err == nil && tag.RowsAffected() != 100 {
		err = fmt.Errorf("claimed %d rows", tag.RowsAffected())
	}
	return d, err
}

// commit commits exe and moves it to its new version, for the caller's next commit.
func commit(ctx context.Context, s *stead.Store, exe *stead.Execution, bundle stead.Bundle) error {
	c, err := s.Commit(ctx, exe, bundle)
	if err == nil {
		exe.Version = c.Version
	}
	return err
}

func pct(xs []float64, p int) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)*p/100]
}

func dur(ns float64) time.Duration { return time.Duration(ns).Round(time.Microsecond) }

func (b *bench) listing() error {
	log.Print("listing")
	b.printf("## Listing: page 1 against page 1,000 of %d executions\n\n", b.big)
	b.printf("%d executions are inserted with `generate_series` (two definitions, alternating) and analyzed. Pages hold 100 summaries; the cursor of page 1,000 is reached by walking the 999 pages before it (not timed). Each figure is the median of 200 calls.\n\n", b.big)
	// Start from an empty table, so that every page sees the same mix of definitions.
	if _, err := b.admin.Exec(b.ctx, `TRUNCATE `+b.q+`stead_executions, `+b.q+`stead_processed_events`); err != nil {
		return err
	}
	if _, err := b.admin.Exec(b.ctx, `INSERT INTO `+b.q+`stead_executions (id, definition_id, status, active_path, version, created_at, updated_at, data)
		SELECT 'exe-' || lpad(g::text, 9, '0'), 'def-' || (g % 2), 'running', 'order.payment.waiting', 1, now(), now(),
			'{"id":"exe-' || lpad(g::text, 9, '0') || '","definition_id":"def-' || (g % 2) || '","status":"running","version":1}'
		FROM generate_series(1, $1::int) g`, b.big); err != nil {
		return err
	}
	if _, err := b.admin.Exec(b.ctx, `VACUUM ANALYZE `+b.q+`stead_executions`); err != nil {
		return err
	}
	b.printf("| filter | page 1 median | page 1,000 median | ratio |\n|---|---|---|---|\n")
	for _, c := range []struct {
		name string
		f    stead.ListFilter
	}{
		{"none (primary key)", stead.ListFilter{Limit: 100}},
		{"definition_id (index definition_id, id)", stead.ListFilter{DefinitionID: "def-1", Limit: 100}},
		{"status running (index status, id)", stead.ListFilter{Statuses: []stead.Status{stead.StatusRunning}, Limit: 100}},
	} {
		deep := c.f
		for range 999 {
			p, err := b.store.List(b.ctx, deep)
			if err != nil {
				return err
			}
			if p.NextCursor == "" {
				return fmt.Errorf("listing %s: fewer than 1,000 pages; raise -big", c.name)
			}
			deep.Cursor = p.NextCursor
		}
		list := func(f stead.ListFilter) func() error {
			return func() error {
				p, err := b.store.List(b.ctx, f)
				if err == nil && len(p.Items) != 100 {
					err = fmt.Errorf("page of %d", len(p.Items))
				}
				return err
			}
		}
		// Interleave the two so that machine noise hits both alike.
		var first, deepest []float64
		for range 10 {
			m1, _, err := latencies(20, list(c.f), nil)
			if err != nil {
				return err
			}
			m2, _, err := latencies(20, list(deep), nil)
			if err != nil {
				return err
			}
			first, deepest = append(first, float64(m1)), append(deepest, float64(m2))
		}
		m1, m2 := time.Duration(benchutil.Median(first)), time.Duration(benchutil.Median(deepest))
		b.printf("| %s | %s | %s | %.2f× |\n", c.name, m1.Round(time.Microsecond), m2.Round(time.Microsecond), float64(m2)/float64(m1))
	}
	b.printf("\nWith a filter, PostgreSQL may walk the primary key and skip the rows that do not match rather than use the filter's index; a page then costs in proportion to how many rows it skips around it (the local density of matches), still not to how deep it is.\n\n")
	_, err := b.admin.Exec(b.ctx, `TRUNCATE `+b.q+`stead_executions`)
	return err
}
