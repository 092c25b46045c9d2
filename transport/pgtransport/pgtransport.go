package pgtransport

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/internal/wake"
)

// Backend is the PostgreSQL transport.Backend. New puts a transport.Transport in front of it;
// reach it with Transport.Backend for the methods that run inside the caller's transaction:
//
//	b := tr.Backend().(*pgtransport.Backend)
//
// Those methods (the ones ending in Tx, and the Queue ones) bypass the Transport, so each makes
// its refusals itself, in its order and with its checks: after Close (stead.ErrClosed), bad input
// (stead.ErrInvalid), a context already done. It is safe for concurrent use, and any number of
// Backends in any number of processes may share one schema.
type Backend struct {
	pool    *pgxpool.Pool
	cfg     config
	st      statements
	channel string // the NOTIFY channel of this schema
	sig     *wake.Signal
	cursor  cursor     // where claims resume the round-robin
	lost    lostClaims // claims whose answer was lost, to release
	closed  atomic.Bool

	// The listener starts with the first Wait and stops with Close, on listenConn: the pool's
	// server, or WithListenURL's.
	listenConn  *pgx.ConnConfig
	listenOnce  sync.Once
	listenReady chan struct{} // closed once the first LISTEN was tried
	listenDone  chan struct{} // closed when the listener goroutine has returned
	stop        context.CancelFunc
	stopCtx     context.Context
}

var _ transport.Backend = (*Backend)(nil)

// New returns a transport on pool, which the application opened (pgdb.Open, or its own pgxpool)
// and still owns: closing the transport leaves the pool open. Sharing the pool of a pgstore.Store
// lets a step's claim, commit and ack share a transaction (see the package doc). New migrates the
// schema unless WithoutMigrate is given; then it checks that the schema is at the version this
// package expects. An unsafe schema name is an error wrapping stead.ErrInvalid.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*transport.Transport, error) {
	cfg := newConfig(opts)
	switch {
	case pool == nil:
		return nil, check.Invalidf("pgtransport: pool is nil")
	case cfg.now == nil:
		return nil, check.Invalidf("pgtransport: clock is nil")
	}
	if err := checkSchema(cfg.schema); err != nil {
		return nil, err
	}
	st, err := newStatements(cfg.schema)
	if err != nil {
		return nil, err
	}
	listenConn, err := listenerConfig(pool, &cfg)
	if err != nil {
		return nil, err
	}
	if cfg.migrate {
		err = migrate(ctx, pool, cfg.schema)
	} else {
		err = checkMigrated(ctx, pool, cfg.schema)
	}
	if err != nil {
		return nil, err
	}
	b := &Backend{
		pool: pool, cfg: cfg, st: st, listenConn: listenConn,
		channel: channelName(cfg.schema), sig: wake.New(),
		listenReady: make(chan struct{}), listenDone: make(chan struct{}),
	}
	b.stopCtx, b.stop = context.WithCancel(context.Background())
	return transport.New(b), nil
}

func checkSchema(schema string) error {
	if schema == "" {
		return nil
	}
	if err := pgdb.CheckSchema(schema); err != nil {
		return fmt.Errorf("pgtransport: %w", err)
	}
	return nil
}

// channelName is the NOTIFY channel of a schema. Channel names are identifiers (at most 63
// bytes), so a long schema name is replaced by a digest.
func channelName(schema string) string {
	name := "stead_transport"
	if schema != "" {
		name += "." + schema
	}
	if len(name) > 63 {
		sum := sha256.Sum256([]byte(schema))
		name = "stead_transport." + hex.EncodeToString(sum[:16])
	}
	return name
}

// Pool returns the pool b runs on, for callers that enlist it in their own transactions.
func (b *Backend) Pool() *pgxpool.Pool { return b.pool }

// Close stops the listener and the release of lost claims (waiting for their goroutines to
// return) and wakes every Wait with stead.ErrClosed; the pool stays open. Its methods that run in the caller's transaction fail
// with stead.ErrClosed from then on.
func (b *Backend) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	b.sig.Close()
	b.stop()
	// If the listener never started, make sure it never will, then close its done channel.
	b.listenOnce.Do(func() { close(b.listenReady); close(b.listenDone) })
	<-b.listenDone
	// An empty critical section on purpose: once it is passed, no release starts, because
	// claimFailed checks closed under the same lock.
	b.lost.mu.Lock()
	//lint:ignore SA2001 the lock is a barrier, not a guard of state
	b.lost.mu.Unlock()
	b.lost.wg.Wait()
	return nil
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationTable records which migrations of this package a schema has.
const migrationTable = "transport_migrations"

// migrations returns the embedded migrations in version order.
func migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the directory is embedded: it is always there
	}
	return sub
}

// migrate brings the transport's tables and functions in schema ("" for the search_path) to the
// version this package expects. It is idempotent and safe to run from many processes at once; New
// calls it unless WithoutMigrate is given.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	if err := checkSchema(schema); err != nil {
		return err
	}
	if err := pgdb.Migrate(ctx, pool, schema, migrationTable, migrations()); err != nil {
		return fmt.Errorf("pgtransport: %w", err)
	}
	return nil
}

func checkMigrated(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	want, err := pgdb.LatestVersion(migrations())
	if err != nil {
		return fmt.Errorf("pgtransport: %w", err)
	}
	have, err := pgdb.AppliedVersion(ctx, pool, schema, migrationTable)
	if err != nil {
		return fmt.Errorf("pgtransport: check schema version (run the migration first?): %w", err)
	}
	if have != want {
		return fmt.Errorf("pgtransport: schema is at version %d, this package needs %d: run the migration", have, want)
	}
	return nil
}

var errClosed = fmt.Errorf("pgtransport: %w", stead.ErrClosed)

// fail wraps a driver error for op, mapping it to the stead sentinels.
func fail(op string, err error) error {
	if errors.Is(err, stead.ErrInvalid) {
		return err
	}
	return fmt.Errorf("pgtransport: %s: %w", op, pgdb.Classify(err))
}
