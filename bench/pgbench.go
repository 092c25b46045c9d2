package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/internal/pgutil"
)

// PgbenchCeiling runs pgbench with `clients` connections for d, each transaction one
// single-row UPDATE of a random row among `rows` (in a scratch table of schema, dropped after),
// and returns the transactions per second: the most single-row commits this server does at that
// concurrency, the ceiling an unbatched step (one commit per event) can approach.
func PgbenchCeiling(ctx context.Context, dsn, schema string, clients, rows int, d time.Duration) (float64, error) {
	bin, err := exec.LookPath("pgbench")
	if err != nil {
		return 0, fmt.Errorf("pgbench not installed: %w", err)
	}
	if err := pgutil.CheckSchema(schema); err != nil || schema == "" {
		return 0, fmt.Errorf("pgbench: need a plain schema name, got %q", schema)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	q := pgx.Identifier{schema, "ceiling"}.Sanitize()
	for _, sql := range []string{
		"CREATE SCHEMA IF NOT EXISTS " + pgx.Identifier{schema}.Sanitize(),
		"DROP TABLE IF EXISTS " + q,
		"CREATE TABLE " + q + " (id int PRIMARY KEY, n bigint NOT NULL DEFAULT 0)",
		fmt.Sprintf("INSERT INTO %s (id) SELECT g FROM generate_series(1, %d) g", q, rows),
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return 0, fmt.Errorf("pgbench setup: %w", err)
		}
	}
	defer conn.Exec(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+q)
	dir, err := os.MkdirTemp("", "stead-pgbench")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "update.sql")
	body := fmt.Sprintf("\\set id random(1, %d)\nUPDATE %s SET n = n + 1 WHERE id = :id;\n", rows, q)
	if err := os.WriteFile(script, []byte(body), 0o600); err != nil {
		return 0, err
	}
	threads := min(clients, 4)
	cmd := exec.CommandContext(ctx, bin, "-n", "-c", strconv.Itoa(clients), "-j", strconv.Itoa(threads),
		"-T", strconv.Itoa(max(1, int(d.Seconds()))), "-f", script, dsn)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("pgbench: %w: %s", err, lastLine(out.Bytes()))
	}
	m := tpsRE.FindSubmatch(out.Bytes())
	if m == nil {
		return 0, fmt.Errorf("pgbench: no tps in its output: %s", lastLine(out.Bytes()))
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

var tpsRE = regexp.MustCompile(`tps = ([0-9.]+)`)

func lastLine(b []byte) string {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return string(b)
}
