// Command attributes measures what execution attributes cost in index bytes and what a filtered
// listing and count cost as the store grows: on PostgreSQL and SQLite it loads n executions with
// three attributes each (customer: an integer shared by 100 executions at every size; region: a
// string of 8 values; due: a time, one second apart), straight into the store's tables with
// INSERT … SELECT (a commit per row would take hours at 1M on a shared machine), then times
// Store.List and Store.Count through the store and shows the plan of each statement.
//
// On PostgreSQL the plan is that of the very statement the store sent (captured by a pgx
// tracer, then run under EXPLAIN ANALYZE); on SQLite it is EXPLAIN QUERY PLAN of the statement
// sqlitestore builds for that filter, written out here part for part. For comparison it also
// builds, on PostgreSQL, the other layout considered: a jsonb column of the same attributes with
// one GIN index (jsonb_path_ops).
//
// Usage (from the module root; the database URL as the tests take it):
//
//	STEAD_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres go run ./bench/attributes -n 10000,1000000
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// query is one measured filter.
type query struct {
	name string
	f    func(n int) stead.ListFilter
}

var queries = []query{
	{"customer=42", func(int) stead.ListFilter {
		return stead.ListFilter{Attributes: []stead.AttrFilter{stead.Where("customer", stead.AttrEq, stead.AttrInt(42))}}
	}},
	{"customer in (42, 43) and status=running", func(int) stead.ListFilter {
		return stead.ListFilter{Statuses: []stead.Status{stead.StatusRunning},
			Attributes: []stead.AttrFilter{stead.Where("customer", stead.AttrIn, stead.AttrInt(42), stead.AttrInt(43))}}
	}},
	{"due>=last 1000 s", func(n int) stead.ListFilter {
		return stead.ListFilter{Attributes: []stead.AttrFilter{
			stead.Where("due", stead.AttrGe, stead.AttrTime(t0.Add(time.Duration(n-1000)*time.Second)))}}
	}},
	{"region=eu and due>=last 1000 s", func(n int) stead.ListFilter {
		// In key order, as the Store sorts conditions, so that sqliteListSQL writes them in the
		// order the store sends them.
		return stead.ListFilter{Attributes: []stead.AttrFilter{
			stead.Where("due", stead.AttrGe, stead.AttrTime(t0.Add(time.Duration(n-1000)*time.Second))),
			stead.Where("region", stead.AttrEq, stead.AttrString("eu"))}}
	}},
	{"region=eu (1/8 of all)", func(int) stead.ListFilter {
		return stead.ListFilter{Attributes: []stead.AttrFilter{stead.Where("region", stead.AttrEq, stead.AttrString("eu"))}}
	}},
}

// tracer keeps the text and arguments of the last query a pool sent.
type tracer struct {
	mu   sync.Mutex
	sql  string
	args []any
}

func (t *tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	t.mu.Lock()
	t.sql, t.args = d.SQL, d.Args
	t.mu.Unlock()
	return ctx
}

func (t *tracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (t *tracer) last() (string, []any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sql, t.args
}

func main() {
	sizes := flag.String("n", "10000,1000000", "executions to load, comma-separated")
	out := flag.String("out", "", "append the report to this file (default: stdout only)")
	reps := flag.Int("reps", 7, "timed runs of each query (the median is reported)")
	skipPG := flag.Bool("nopg", false, "skip PostgreSQL")
	skipSQLite := flag.Bool("nosqlite", false, "skip SQLite")
	flag.Parse()
	var ns []int
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 2000 {
			log.Fatalf("bad size %q (want at least 2000)", s)
		}
		ns = append(ns, n)
	}
	var rep strings.Builder
	fmt.Fprintf(&rep, "## Attributes, %s\n\n`go run ./bench/attributes -n %s -reps %d`; medians of %d runs, the first run discarded.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), *sizes, *reps, *reps)
	ctx := context.Background()
	if !*skipPG {
		url := os.Getenv("STEAD_TEST_DATABASE_URL")
		if url == "" {
			log.Fatal("STEAD_TEST_DATABASE_URL is not set")
		}
		for _, n := range ns {
			pgRun(ctx, url, n, *reps, &rep)
		}
	}
	if !*skipSQLite {
		for _, n := range ns {
			sqliteRun(ctx, n, *reps, &rep)
		}
	}
	fmt.Print(rep.String())
	if *out != "" {
		f, err := os.OpenFile(*out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(rep.String()); err != nil {
			log.Fatal(err)
		}
	}
}

// timeQuery returns the medians of List (first page of 100) and Count under f, after one
// discarded run of each.
func timeQuery(ctx context.Context, s *stead.Store, f stead.ListFilter, reps int) (list, count time.Duration, items int, total int64) {
	var ls, cs []time.Duration
	for i := range reps + 1 {
		start := time.Now()
		p, err := s.List(ctx, f)
		if err != nil {
			log.Fatalf("list: %v", err)
		}
		d := time.Since(start)
		start = time.Now()
		c, err := s.Count(ctx, f)
		if err != nil {
			log.Fatalf("count: %v", err)
		}
		if i > 0 {
			ls, cs = append(ls, d), append(cs, time.Since(start))
		}
		items, total = len(p.Items), c.Total
	}
	slices.Sort(ls)
	slices.Sort(cs)
	return ls[len(ls)/2], cs[len(cs)/2], items, total
}

func pgRun(ctx context.Context, url string, n, reps int, rep *strings.Builder) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		log.Fatal(err)
	}
	tr := &tracer{}
	cfg.ConnConfig.Tracer = tr
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	schema := fmt.Sprintf("stead_bench_attrs_%d", time.Now().UnixNano())
	q := pgx.Identifier{schema}.Sanitize() + "."
	defer func() {
		if _, err := pool.Exec(context.Background(), `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			log.Printf("drop schema: %v", err)
		}
	}()
	s, err := pgstore.New(ctx, pool, pgstore.WithSchema(schema))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	for _, stmt := range []string{
		`INSERT INTO ` + q + `stead_executions (id, definition_id, status, version, created_at, updated_at, data)
		SELECT 'order-' || lpad(g::text, 8, '0'), 'order', CASE WHEN g % 10 = 0 THEN 'done' ELSE 'running' END,
			1, $1::timestamptz, $1::timestamptz, '{}' FROM generate_series(1, $2::int) g`,
		`INSERT INTO ` + q + `stead_attributes (execution_id, key, kind, s, n)
		SELECT 'order-' || lpad(g::text, 8, '0'), 'customer', 2, NULL, g % ($2::int / 100) FROM generate_series(1, $2::int) g
		UNION ALL
		SELECT 'order-' || lpad(g::text, 8, '0'), 'region', 1, (ARRAY['eu','us','ap','sa','af','oc','me','an'])[1 + g % 8], NULL
			FROM generate_series(1, $2::int) g
		UNION ALL
		SELECT 'order-' || lpad(g::text, 8, '0'), 'due', 3, NULL,
			(extract(epoch FROM $1::timestamptz)::bigint + g) * 1000000 FROM generate_series(1, $2::int) g`,
	} {
		if _, err := pool.Exec(ctx, stmt, t0, n); err != nil {
			log.Fatalf("load: %v", err)
		}
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE `+q+`stead_executions`); err != nil {
		log.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE `+q+`stead_attributes`); err != nil {
		log.Fatal(err)
	}
	load := time.Since(start)
	fmt.Fprintf(rep, "### PostgreSQL, %d executions (%d attribute rows; loaded and vacuumed in %s)\n\n", n, 3*n, load.Round(time.Second))
	fmt.Fprintf(rep, "| relation | bytes | per 1M executions |\n|---|---:|---:|\n")
	var idxTotal int64
	for _, rel := range []string{"stead_attributes", "stead_attributes_execution", "stead_attributes_n", "stead_attributes_s",
		"stead_executions", "stead_executions_pkey"} {
		var size int64
		if err := pool.QueryRow(ctx, `SELECT pg_relation_size($1::regclass)`, q+rel).Scan(&size); err != nil {
			log.Fatal(err)
		}
		if strings.HasPrefix(rel, "stead_attributes_") {
			idxTotal += size
		}
		fmt.Fprintf(rep, "| %s | %d | %s |\n", rel, size, mb(size*1_000_000/int64(n)))
	}
	fmt.Fprintf(rep, "| **attribute indexes, total** | %d | **%s** |\n", idxTotal, mb(idxTotal*1_000_000/int64(n)))
	// The alternative: one jsonb column with a GIN index, sized on a table of its own.
	if _, err := pool.Exec(ctx, `CREATE TABLE `+q+`alt_jsonb AS SELECT execution_id AS id,
			jsonb_object_agg(key, CASE kind WHEN 1 THEN to_jsonb(s) ELSE to_jsonb(n) END) AS attrs
		FROM `+q+`stead_attributes GROUP BY execution_id`); err != nil {
		log.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE INDEX alt_jsonb_gin ON `+q+`alt_jsonb USING gin (attrs jsonb_path_ops)`); err != nil {
		log.Fatal(err)
	}
	var gin int64
	if err := pool.QueryRow(ctx, `SELECT pg_relation_size($1::regclass)`, q+"alt_jsonb_gin").Scan(&gin); err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(rep, "| (alternative) jsonb column's GIN index, jsonb_path_ops | %d | %s |\n\n", gin, mb(gin*1_000_000/int64(n)))

	fmt.Fprintf(rep, "| filter | List (first page) | rows | Count | counted | plan (List, then Count) |\n|---|---:|---:|---:|---:|---|\n")
	var plans strings.Builder
	for _, qu := range queries {
		f := qu.f(n)
		list, count, items, total := timeQuery(ctx, s, f, reps)
		var shape []string
		for _, kind := range []string{"list", "count"} {
			if kind == "list" {
				if _, err := s.List(ctx, f); err != nil {
					log.Fatal(err)
				}
			} else if _, err := s.Count(ctx, f); err != nil {
				log.Fatal(err)
			}
			sql, args := tr.last()
			rows, err := pool.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "+sql, args...)
			if err != nil {
				log.Fatalf("explain %s: %v", sql, err)
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				log.Fatal(err)
			}
			shape = append(shape, summarizePlan(lines))
			fmt.Fprintf(&plans, "%s — %s:\n\n```\n%s\n```\n\n", qu.name, kind, strings.Join(lines, "\n"))
		}
		fmt.Fprintf(rep, "| %s | %s | %d | %s | %d | %s |\n", qu.name, ms(list), items, ms(count), total, strings.Join(shape, "; "))
	}
	fmt.Fprintf(rep, "\n<details><summary>EXPLAIN ANALYZE of the statements the store sent (%d executions)</summary>\n\n%s</details>\n\n", n, plans.String())
}

// summarizePlan names the scans of a plan: which index each one walks.
func summarizePlan(lines []string) string {
	var out []string
	for _, l := range lines {
		l = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "->"))
		l = strings.TrimPrefix(l, "Parallel ")
		for _, kw := range []string{"Index Only Scan", "Index Scan", "Bitmap Index Scan", "Seq Scan"} {
			if strings.HasPrefix(l, kw) {
				if i := strings.Index(l, "  ("); i > 0 {
					l = l[:i]
				}
				if i := strings.Index(l, " using "); i > 0 { // the index, rather than its table
					l = kw + " " + strings.Fields(l[i+7:])[0]
				} else if i := strings.Index(l, " on "); i > 0 {
					l = kw + " " + strings.Fields(l[i+4:])[0]
				}
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, ", ")
}

func sqliteRun(ctx context.Context, n, reps int, rep *strings.Builder) {
	dir, err := os.MkdirTemp("", "stead-attrs-*")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: filepath.Join(dir, "stead.db")})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	s, err := sqlitestore.New(ctx, db)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	gen := `WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < ?1) `
	id := `'order-' || substr('0000000' || x, -8, 8)`
	for _, stmt := range []string{
		gen + `INSERT INTO stead_executions (id, definition_id, status, version, created_at, updated_at, data)
		SELECT ` + id + `, 'order', CASE WHEN x % 10 = 0 THEN 'done' ELSE 'running' END, 1, ?2, ?2, '{}' FROM g`,
		gen + `INSERT INTO stead_attributes (execution_id, key, kind, s, n)
		SELECT ` + id + `, 'customer', 2, NULL, x % (?1 / 100) FROM g`,
		gen + `INSERT INTO stead_attributes (execution_id, key, kind, s, n)
		SELECT ` + id + `, 'region', 1, CASE x % 8 WHEN 0 THEN 'eu' WHEN 1 THEN 'us' WHEN 2 THEN 'ap' WHEN 3 THEN 'sa'
			WHEN 4 THEN 'af' WHEN 5 THEN 'oc' WHEN 6 THEN 'me' ELSE 'an' END, NULL FROM g`,
		gen + `INSERT INTO stead_attributes (execution_id, key, kind, s, n)
		SELECT ` + id + `, 'due', 3, NULL, ?2 + x * 1000000 FROM g`,
		`ANALYZE`,
	} {
		if _, err := db.W.ExecContext(ctx, stmt, n, t0.UnixMicro()); err != nil {
			log.Fatalf("load: %v", err)
		}
	}
	load := time.Since(start)
	fmt.Fprintf(rep, "### SQLite, %d executions (%d attribute rows; loaded in %s)\n\n", n, 3*n, load.Round(time.Second))
	fmt.Fprintf(rep, "| b-tree | bytes | per 1M executions |\n|---|---:|---:|\n")
	var idxTotal int64
	for _, name := range []string{"stead_attributes", "stead_attributes_n", "stead_attributes_s", "stead_executions"} {
		var size int64
		if err := db.W.QueryRowContext(ctx, `SELECT sum(pgsize) FROM dbstat WHERE name = ?`, name).Scan(&size); err != nil {
			log.Fatalf("dbstat (%s): %v", name, err)
		}
		if name != "stead_executions" {
			idxTotal += size
		}
		fmt.Fprintf(rep, "| %s | %d | %s |\n", name, size, mb(size*1_000_000/int64(n)))
	}
	fmt.Fprintf(rep, "| **attribute table and indexes, total** | %d | **%s** |\n\n", idxTotal, mb(idxTotal*1_000_000/int64(n)))
	fmt.Fprintf(rep, "(stead_attributes is WITHOUT ROWID: the table is its primary-key b-tree.)\n\n")
	fmt.Fprintf(rep, "| filter | List (first page) | rows | Count | counted | query plan (List) |\n|---|---:|---:|---:|---:|---|\n")
	for _, qu := range queries {
		f := qu.f(n)
		list, count, items, total := timeQuery(ctx, s, f, reps)
		sql, args := sqliteListSQL(f)
		rows, err := db.R.QueryContext(ctx, "EXPLAIN QUERY PLAN "+sql, args...)
		if err != nil {
			log.Fatalf("explain %s: %v", sql, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				log.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		fmt.Fprintf(rep, "| %s | %s | %d | %s | %d | %s |\n", qu.name, ms(list), items, ms(count), total, strings.Join(plan, "; "))
	}
	fmt.Fprintln(rep)
}

// sqliteListSQL writes the statement sqlitestore sends for List under f (its first page), part
// for part as sqlitestore's listSQL assembles it; f's conditions must be in key order, the
// order the Store hands them to the backend in.
func sqliteListSQL(f stead.ListFilter) (string, []any) {
	sql := `SELECT id, definition_id, status, outcome, active_path, parent_id, version,
	created_at, updated_at, finished_at FROM stead_executions WHERE id > ?`
	args := []any{""}
	if len(f.Statuses) > 0 {
		sql += ` AND status IN (?` + strings.Repeat(`, ?`, len(f.Statuses)-1) + `)`
		for _, st := range f.Statuses {
			args = append(args, string(st))
		}
	}
	for i, a := range f.Attributes {
		kind := a.Values[0].Kind()
		switch {
		case i > 0 && kind == stead.AttrKindString:
			sql += ` AND EXISTS (SELECT 1 FROM stead_attributes a WHERE a.execution_id = stead_executions.id
		AND a.key = ? AND a.s`
			args = append(args, a.Key)
		case i > 0:
			sql += ` AND EXISTS (SELECT 1 FROM stead_attributes a WHERE a.execution_id = stead_executions.id
		AND a.key = ? AND a.kind = ? AND a.n`
			args = append(args, a.Key, int(kind))
		case kind == stead.AttrKindString:
			sql += ` AND id IN (SELECT execution_id FROM stead_attributes WHERE key = ? AND s`
			args = append(args, a.Key)
		default:
			sql += ` AND id IN (SELECT execution_id FROM stead_attributes WHERE key = ? AND kind = ? AND n`
			args = append(args, a.Key, int(kind))
		}
		if a.Op == stead.AttrIn {
			sql += ` IN (?` + strings.Repeat(`, ?`, len(a.Values)-1) + `))`
		} else {
			sql += ` ` + string(a.Op) + ` ?)`
		}
		for _, v := range a.Values {
			if kind == stead.AttrKindString {
				args = append(args, v.Str())
			} else {
				args = append(args, v.Num())
			}
		}
	}
	return sql + ` ORDER BY id LIMIT ?`, append(args, 101)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }
