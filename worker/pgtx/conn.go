package pgtx

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The statements that open a transaction, sent in front of its first statement. The timeouts are
// parameters, so that every transaction sends the same two prepared texts.
const (
	sqlBegin    = "BEGIN"
	sqlTimeouts = "SELECT set_config('idle_in_transaction_session_timeout', $1::text, true), " +
		"set_config('statement_timeout', $1::text, true)"
)

// connTx is a transaction on a pooled connection that BEGINs lazily: its first statement goes to
// the server behind BEGIN (and the transaction's timeouts) in one round trip. It is the pgx.Tx
// that pgstore's and pgtransport's …Tx methods run on; pgtx itself sends the COMMIT (pipelined
// with the transaction's last statements) and ends it with ended or Rollback, which give the
// connection back to the pool.
type connTx struct {
	conn    *pgxpool.Conn
	timeout string // milliseconds, for both timeouts ("" for none)
	begun   bool   // BEGIN was sent
	done    bool   // the connection went back to the pool
}

var _ pgx.Tx = (*connTx)(nil)

// opening returns a batch that opens the transaction and how many results that takes.
func (c *connTx) opening() (*pgx.Batch, int) {
	b := &pgx.Batch{}
	b.Queue(sqlBegin)
	if c.timeout == "" {
		return b, 1
	}
	b.Queue(sqlTimeouts, c.timeout)
	return b, 2
}

func (c *connTx) finished() bool { return c.done }

// ended gives the connection back after the transaction committed.
func (c *connTx) ended() {
	if !c.done {
		c.done = true
		c.conn.Release()
	}
}

// Query runs sql in the transaction, behind BEGIN when it is the first statement.
func (c *connTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if c.done {
		return nil, pgx.ErrTxClosed
	}
	if c.begun {
		return c.conn.Query(ctx, sql, args...)
	}
	b, n := c.opening()
	b.Queue(sql, args...)
	c.begun = true
	br := c.conn.SendBatch(ctx, b)
	for range n {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return nil, err
		}
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// QueryRow is Query for one row.
func (c *connTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := c.Query(ctx, sql, args...)
	return &oneRow{rows: rows, err: err}
}

// Exec runs sql in the transaction, behind BEGIN when it is the first statement.
func (c *connTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if c.done {
		return pgconn.CommandTag{}, pgx.ErrTxClosed
	}
	if c.begun {
		return c.conn.Exec(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	var tag pgconn.CommandTag
	b.Queue(sql, args...).Exec(func(t pgconn.CommandTag) error { tag = t; return nil })
	err := c.SendBatch(ctx, b).Close()
	return tag, err
}

// SendBatch sends b in the transaction, behind BEGIN when it holds the first statements.
func (c *connTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if c.done {
		return errResults{pgx.ErrTxClosed}
	}
	if c.begun {
		return c.conn.SendBatch(ctx, b)
	}
	open, n := c.opening()
	open.QueuedQueries = append(open.QueuedQueries, b.QueuedQueries...)
	c.begun = true
	return &skipResults{BatchResults: c.conn.SendBatch(ctx, open), skip: n}
}

// Commit commits the transaction (pgtx pipelines its COMMIT instead; this is for the pgx.Tx
// contract).
func (c *connTx) Commit(ctx context.Context) error {
	if c.done {
		return pgx.ErrTxClosed
	}
	if c.begun {
		if _, err := c.conn.Exec(ctx, "COMMIT"); err != nil {
			return err
		}
	}
	c.ended()
	return nil
}

// Rollback ends the transaction unless it is over already (committed, or ended by a failed
// COMMIT: the server is then outside any transaction and nothing is sent), and gives the
// connection back. A connection whose ROLLBACK failed is closed by the pool.
func (c *connTx) Rollback(ctx context.Context) error {
	if c.done {
		return nil
	}
	c.done = true
	defer c.conn.Release()
	if !c.begun || c.conn.Conn().PgConn().TxStatus() == 'I' {
		return nil
	}
	_, err := c.conn.Exec(ctx, "ROLLBACK")
	return err
}

// Begin would open a savepoint; the store and the transport never ask for one.
func (c *connTx) Begin(context.Context) (pgx.Tx, error) {
	return nil, errors.New("pgtx: savepoints are not supported")
}

func (c *connTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if _, err := c.Exec(ctx, "SELECT 1"); err != nil { // opens the transaction first
		return 0, err
	}
	return c.conn.CopyFrom(ctx, table, columns, src)
}

// LargeObjects is not supported: pgx builds them on its own transactions only.
func (c *connTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

func (c *connTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return c.conn.Conn().Prepare(ctx, name, sql)
}

func (c *connTx) Conn() *pgx.Conn { return c.conn.Conn() }

// batchRows are the rows of a statement sent behind BEGIN: closing them closes the batch.
type batchRows struct {
	pgx.Rows
	br  pgx.BatchResults
	err error
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if r.br != nil {
		r.err = r.br.Close()
		r.br = nil
	}
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// oneRow is a pgx.Row over rows, as pgx's own QueryRow makes.
type oneRow struct {
	rows pgx.Rows
	err  error
}

func (r *oneRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		r.rows.Close()
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

// skipResults hides the results of the statements that opened the transaction from a caller
// that reads a batch's results one by one.
type skipResults struct {
	pgx.BatchResults
	skip int
	err  error
}

func (s *skipResults) drain() error {
	for ; s.skip > 0 && s.err == nil; s.skip-- {
		_, s.err = s.BatchResults.Exec()
	}
	return s.err
}

func (s *skipResults) Exec() (pgconn.CommandTag, error) {
	if err := s.drain(); err != nil {
		return pgconn.CommandTag{}, err
	}
	return s.BatchResults.Exec()
}

func (s *skipResults) Query() (pgx.Rows, error) {
	if err := s.drain(); err != nil {
		return nil, err
	}
	return s.BatchResults.Query()
}

func (s *skipResults) QueryRow() pgx.Row {
	if err := s.drain(); err != nil {
		return &oneRow{err: err}
	}
	return s.BatchResults.QueryRow()
}

// errResults is the BatchResults of a batch that was not sent.
type errResults struct{ err error }

func (e errResults) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, e.err }
func (e errResults) Query() (pgx.Rows, error)         { return nil, e.err }
func (e errResults) QueryRow() pgx.Row                { return &oneRow{err: e.err} }
func (e errResults) Close() error                     { return e.err }
func (e errResults) Tx() pgx.Tx                       { return nil }
