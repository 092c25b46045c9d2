package scenario

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/internal/benchutil"
	"github.com/steadhq/stead/pgdb"
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
	if err := pgdb.CheckSchema(schema); err != nil || schema == "" {
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
	res, err := benchutil.Pgbench{
		Bin: bin, DSN: dsn, Clients: clients, Seconds: int(d.Seconds()),
		Script: fmt.Sprintf("\\set id random(1, %d)\nUPDATE %s SET n = n + 1 WHERE id = :id;\n", rows, q),
	}.Run(ctx)
	return res.TPS, err
}
