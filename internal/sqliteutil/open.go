package sqliteutil

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/internal/errs"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Synchronous is SQLite's synchronous pragma as stead exposes it.
type Synchronous string

// The durability levels. In WAL mode NORMAL syncs the WAL only at checkpoints: a commit survives a
// crash of the process but the last commits before a power loss or kernel crash may be lost (the
// database stays consistent). FULL syncs the WAL at every commit: every commit survives power
// loss, at the price of one fsync per transaction.
const (
	SyncNormal Synchronous = "NORMAL"
	SyncFull   Synchronous = "FULL"
)

// Memory is the path that opens a private in-memory database.
const Memory = ":memory:"

// Config says how to open a database. Zero values take the defaults documented on each field.
type Config struct {
	// Path is the database file, created if missing, or Memory.
	Path string
	// BusyTimeout is how long a writer waits for the write lock held by another process before
	// giving up with errs.Unavailable (default 5 s).
	BusyTimeout time.Duration
	// Synchronous is the durability level (default SyncNormal).
	Synchronous Synchronous
	// Readers bounds the reader pool (default: GOMAXPROCS, at least 2).
	Readers int
	// WriterOnly opens no reader pool: R is W, as for Memory. For a component that only ever
	// writes (the SQLite transport), a reader pool would be connections never used.
	WriterOnly bool
}

// DefaultBusyTimeout is the busy timeout when Config leaves it at zero.
const DefaultBusyTimeout = 5 * time.Second

// DB is one SQLite database opened for stead: W has a single connection whose transactions begin
// with BEGIN IMMEDIATE (through _txlock, or explicitly), so in-process writers queue on it and a
// writer never has to upgrade a read lock (the lock-upgrade deadlock that SQLITE_BUSY_SNAPSHOT
// reports in WAL mode); W does not wait for locks itself: run its transactions under Retry with
// BusyTimeout as the budget. R is a pool
// of read-only connections that run beside the writer, which WAL allows. For Memory, R and W are
// the same single connection: a private in-memory database exists only on the connection that
// created it. With Config.WriterOnly, R is W as well.
type DB struct {
	W, R        *sql.DB
	BusyTimeout time.Duration
	Memory      bool
	Readers     int // the size of R
}

// Open opens (creating if needed) the database described by c and checks that it answers. A path
// that cannot be opened wraps errs.Unavailable; a bad option wraps errs.Invalid.
func Open(ctx context.Context, c Config) (*DB, error) {
	if err := check.TextMax("database path", c.Path, 4096); err != nil {
		return nil, err
	}
	if c.Path == "" {
		return nil, check.Invalidf("database path is empty (use %q for an in-memory database)", Memory)
	}
	if c.BusyTimeout < 0 {
		return nil, check.Invalidf("negative busy timeout %v", c.BusyTimeout)
	}
	if c.BusyTimeout == 0 {
		c.BusyTimeout = DefaultBusyTimeout
	}
	switch c.Synchronous {
	case "":
		c.Synchronous = SyncNormal
	case SyncNormal, SyncFull:
	default:
		return nil, check.Invalidf("unknown synchronous level %q", c.Synchronous)
	}
	if c.Readers <= 0 {
		c.Readers = max(2, runtime.GOMAXPROCS(0))
	}
	d := &DB{BusyTimeout: c.BusyTimeout, Memory: c.Path == Memory, Readers: c.Readers}
	// The writer has no busy timeout: a BEGIN IMMEDIATE that finds the write lock taken fails at
	// once with SQLITE_BUSY and Retry waits, polling as SQLite's own handler would but honouring
	// ctx. Waiting inside SQLite would need ctx bound to the statement, which costs the driver a
	// watcher goroutine and handler setup per statement: more CPU than the rest of a small commit.
	pragmas := []string{
		"busy_timeout(0)",
		"foreign_keys(1)",
		"synchronous(" + string(c.Synchronous) + ")",
	}
	if !d.Memory {
		pragmas = append(pragmas, "journal_mode(WAL)")
	}
	var err error
	if d.W, err = sql.Open("sqlite", dsn(c.Path, pragmas, "_txlock=immediate")); err != nil {
		return nil, fmt.Errorf("%w: open %s: %v", errs.Invalid, c.Path, err)
	}
	single(d.W)
	// The first connection switches the file to WAL, which needs an exclusive lock: retry it
	// like any other write when another process holds the database.
	if err := Retry(ctx, d.BusyTimeout, func() error { return d.W.PingContext(ctx) }); err != nil {
		d.W.Close()
		return nil, fmt.Errorf("open %s: %w", c.Path, Classify(err))
	}
	if d.Memory || c.WriterOnly {
		d.R, d.Readers = d.W, 1
		return d, nil
	}
	// Readers do wait inside SQLite (in WAL mode only for rare moments such as a recovery).
	rp := []string{"busy_timeout(" + strconv.FormatInt(c.BusyTimeout.Milliseconds(), 10) + ")", "foreign_keys(1)", "query_only(1)"}
	if d.R, err = sql.Open("sqlite", dsn(c.Path, rp)); err != nil {
		d.W.Close()
		return nil, fmt.Errorf("%w: open %s: %v", errs.Invalid, c.Path, err)
	}
	d.R.SetMaxOpenConns(c.Readers)
	d.R.SetMaxIdleConns(c.Readers)
	d.R.SetConnMaxIdleTime(0)
	if err := Retry(ctx, d.BusyTimeout, func() error { return d.R.PingContext(ctx) }); err != nil {
		d.Close()
		return nil, fmt.Errorf("open %s: %w", c.Path, Classify(err))
	}
	return d, nil
}

// single makes db a pool of exactly one connection that is never recycled, so that every write
// queues on it (database/sql hands connections out in request order and honours ctx while
// waiting) and an in-memory database lives as long as db.
func single(db *sql.DB) {
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
}

// Close closes both pools.
func (d *DB) Close() error {
	err := d.W.Close()
	if d.R != d.W {
		if e := d.R.Close(); err == nil {
			err = e
		}
	}
	return err
}

// dsn builds a modernc.org/sqlite data source name. A file path is written as a "file:" URI with
// the characters URIs reserve escaped, so that any file name works; the driver reads the
// underscore parameters and SQLite ignores them.
func dsn(path string, pragmas []string, extra ...string) string {
	q := make([]string, 0, len(pragmas)+len(extra))
	for _, p := range pragmas {
		q = append(q, "_pragma="+url.QueryEscape(p))
	}
	q = append(q, extra...)
	if path == Memory {
		return Memory + "?" + strings.Join(q, "&")
	}
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return "file:" + r.Replace(path) + "?" + strings.Join(q, "&")
}
