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

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/internal/wake"
)

// Transport is the PostgreSQL transport. It is safe for concurrent use, and any number of
// Transports in any number of processes may share one schema.
type Transport struct {
	pool     *pgxpool.Pool
	ownsPool bool
	cfg      config
	sql      statements
	channel  string // the NOTIFY channel of this schema
	sig      *wake.Signal
	cursor   cursor // where claims resume the round-robin
	closed   atomic.Bool

	// The listener starts with the first Wait and stops with Close.
	listenOnce  sync.Once
	listenReady chan struct{} // closed once the first LISTEN was tried
	listenDone  chan struct{} // closed when the listener goroutine has returned
	stop        context.CancelFunc
	stopCtx     context.Context
}

var _ transport.Transport = (*Transport)(nil)

// Open connects to the database at dsn, retrying the first connection (see WithConnectRetry),
// migrates the schema unless WithoutMigrate is given, and returns a Transport that owns its pool:
// Close closes it. A malformed dsn or an unsafe schema name is an error wrapping stead.ErrInvalid;
// a database that never answered is stead.ErrUnavailable.
func Open(ctx context.Context, dsn string, opts ...Option) (*Transport, error) {
	cfg := newConfig(opts)
	if err := checkSchema(cfg.schema); err != nil {
		return nil, err
	}
	pool, err := pgdb.Open(ctx, dsn, cfg.pool)
	if err != nil {
		return nil, fmt.Errorf("pgtransport: open: %w", err)
	}
	t, err := newTransport(ctx, pool, true, cfg)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return t, nil
}

// New returns a Transport on a pool the application already has (for example the one of a
// pgstore.Store, to share transactions with it), migrating the schema unless WithoutMigrate is
// given. Close does not close the pool. Pool options are ignored.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Transport, error) {
	cfg := newConfig(opts)
	if err := checkSchema(cfg.schema); err != nil {
		return nil, err
	}
	return newTransport(ctx, pool, false, cfg)
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

func newTransport(ctx context.Context, pool *pgxpool.Pool, owns bool, cfg config) (*Transport, error) {
	t := &Transport{
		pool: pool, ownsPool: owns, cfg: cfg, sql: newStatements(cfg.schema),
		channel: channelName(cfg.schema), sig: wake.New(),
		listenReady: make(chan struct{}), listenDone: make(chan struct{}),
	}
	t.stopCtx, t.stop = context.WithCancel(context.Background())
	var err error
	if cfg.migrate {
		err = t.Migrate(ctx)
	} else {
		err = t.checkMigrated(ctx)
	}
	if err != nil {
		t.stop()
		return nil, err
	}
	return t, nil
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

// Pool returns the transport's pool, for callers that enlist it in their own transactions.
func (t *Transport) Pool() *pgxpool.Pool { return t.pool }

// Schema returns the schema the transport's objects live in ("" for the search_path).
func (t *Transport) Schema() string { return t.cfg.schema }

// Close stops the listener (waiting for its goroutine to return), wakes every Wait with
// stead.ErrClosed, and closes the pool when Open created it. Later calls fail with ErrClosed.
func (t *Transport) Close() error {
	if t.closed.Swap(true) {
		return nil
	}
	t.sig.Close()
	t.stop()
	// If the listener never started, make sure it never will, then close its done channel.
	t.listenOnce.Do(func() { close(t.listenReady); close(t.listenDone) })
	<-t.listenDone
	if t.ownsPool {
		t.pool.Close()
	}
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

// Migrate brings the schema to the version this package expects. It is idempotent and safe to
// run from many processes at once. Open and New call it unless WithoutMigrate is given.
func (t *Transport) Migrate(ctx context.Context) error {
	if t.closed.Load() {
		return errClosed
	}
	if err := pgdb.Migrate(ctx, t.pool, t.cfg.schema, migrationTable, migrations()); err != nil {
		return fmt.Errorf("pgtransport: %w", err)
	}
	return nil
}

func (t *Transport) checkMigrated(ctx context.Context) error {
	want, err := pgdb.LatestVersion(migrations())
	if err != nil {
		return fmt.Errorf("pgtransport: %w", err)
	}
	have, err := pgdb.AppliedVersion(ctx, t.pool, t.cfg.schema, migrationTable)
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
