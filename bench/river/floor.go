package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/internal/benchutil"
)

// A ceiling is a pgbench script run at 8 clients in the same run as stead's unbatched rows.
// The single-row UPDATE is what the issue measures against. The other two bound what any
// one-event-a-transaction step can do on this server, whoever writes it: a step's transition
// is Go code, so the state must be read before it is written, in one transaction (two round
// trips at least); and a durable step also takes its message off the queue and marks the event
// processed in that transaction. Both are sent as compound statements (BEGIN with the read, the
// writes with COMMIT), so pgbench pays two round trips, as stead does (BEGIN with its claim and
// load, its writes with COMMIT).
type ceiling struct {
	name   string
	trips  int // round trips a transaction
	setup  func(rows int) []string
	script func(rows int) string
	drop   string
}

// counters is the setup of a table of rows counters, ids 1 to rows.
func counters(table string) func(rows int) []string {
	return func(rows int) []string {
		return []string{
			fmt.Sprintf("CREATE TABLE %s (id int PRIMARY KEY, n bigint NOT NULL DEFAULT 0)", table),
			fmt.Sprintf("INSERT INTO %s (id) SELECT g FROM generate_series(1, %d) g", table, rows),
		}
	}
}

// ceilings run in this order, and the report reads it: the single-row UPDATE first (what the
// issue measures against), the least durable step last (the floor of a one-event step).
var ceilings = []ceiling{
	{
		name:  "single-row UPDATE of a random row",
		trips: 1,
		setup: counters("speed_ceiling"),
		script: func(rows int) string {
			return fmt.Sprintf("\\set id random(1, %d)\nUPDATE speed_ceiling SET n = n + 1 WHERE id = :id;\n", rows)
		},
		drop: "DROP TABLE IF EXISTS speed_ceiling",
	},
	{
		name:  "read, then write, one random row in one transaction",
		trips: 2,
		setup: counters("speed_rmw"),
		script: func(rows int) string {
			return fmt.Sprintf("\\set id random(1, %d)\n"+
				"BEGIN \\; SELECT n FROM speed_rmw WHERE id = :id \\gset\n"+
				"UPDATE speed_rmw SET n = :n + 1 WHERE id = :id \\; COMMIT;\n", rows)
		},
		drop: "DROP TABLE IF EXISTS speed_rmw",
	},
	{
		// The least a durable step does: take the oldest message (skipping locked ones) and
		// delete it, read its execution's state, write the state at the next version, insert the
		// processed marker, commit. No group lock, no guard, no lease: less than stead does.
		name:  "least durable step: claim and delete a message, read the state, write it, mark the event",
		trips: 2,
		setup: func(rows int) []string {
			execs := max(1, rows/10)
			return []string{
				"CREATE TABLE speed_step_exec (id int PRIMARY KEY, state jsonb NOT NULL, version bigint NOT NULL)",
				"CREATE TABLE speed_step_msg (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, exec_id int NOT NULL, body jsonb NOT NULL)",
				"CREATE TABLE speed_step_done (exec_id int NOT NULL, msg_id bigint NOT NULL, PRIMARY KEY (exec_id, msg_id))",
				fmt.Sprintf(`INSERT INTO speed_step_exec SELECT g, '{"state":"idle","n":0}', 1 FROM generate_series(1, %d) g`, execs),
				// Enough messages that the queue outlasts the run at any rate this machine reaches
				// (pgbench aborts a client whose claim finds none), interleaved by execution as a
				// backlog of starts and ticks is.
				fmt.Sprintf(`INSERT INTO speed_step_msg (exec_id, body) SELECT e, '{"name":"tick"}'
				 FROM generate_series(1, 20) r, generate_series(1, %d) e ORDER BY r, e`, execs),
				"ANALYZE speed_step_exec, speed_step_msg",
			}
		},
		script: func(int) string {
			return "BEGIN \\; WITH m AS (DELETE FROM speed_step_msg WHERE id = (SELECT id FROM speed_step_msg " +
				"ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id, exec_id, body) " +
				"SELECT m.id AS mid, m.exec_id AS x, e.version AS v, e.state AS s, m.body AS b " +
				"FROM m JOIN speed_step_exec e ON e.id = m.exec_id \\gset\n" +
				`WITH u AS (UPDATE speed_step_exec SET state = '{"state":"busy","n":1}', version = :v + 1 ` +
				"WHERE id = :x AND version = :v RETURNING id) INSERT INTO speed_step_done SELECT :x, :mid FROM u \\; COMMIT;\n"
		},
		drop: "DROP TABLE IF EXISTS speed_step_exec, speed_step_msg, speed_step_done",
	},
}

type ceilingResult struct {
	ceiling
	tps float64
	m   measure
}

// runCeiling sets up c's tables (rows rows), checkpoints so that the run does not pay for the
// setup's WAL, runs pgbench with clients connections for d and drops the tables again.
func runCeiling(ctx context.Context, h *harness, c ceiling, clients, rows int, d time.Duration) (ceilingResult, error) {
	conn, err := pgx.Connect(ctx, h.url)
	if err != nil {
		return ceilingResult{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	defer conn.Exec(context.WithoutCancel(ctx), c.drop)
	for _, q := range append(append([]string{c.drop}, c.setup(rows)...), "CHECKPOINT") {
		if _, err := conn.Exec(ctx, q); err != nil {
			return ceilingResult{}, fmt.Errorf("%s: %w", c.name, err)
		}
	}
	st, err := h.begin(ctx, nil)
	if err != nil {
		return ceilingResult{}, err
	}
	res, err := benchutil.Pgbench{DSN: h.url, Clients: clients, Seconds: int(d.Seconds()), Script: c.script(rows)}.Run(ctx)
	if err != nil {
		return ceilingResult{}, fmt.Errorf("%s: %w", c.name, err)
	}
	m, err := h.end(ctx, st, int(res.Transactions), nil)
	return ceilingResult{ceiling: c, tps: res.TPS, m: m}, err
}
