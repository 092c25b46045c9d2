package sqlitedb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
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
}

// DefaultBusyTimeout is the busy timeout when Config leaves it at zero.
const DefaultBusyTimeout = 5 * time.Second

// DB is one SQLite database opened for stead, shared by every component that keeps its tables in
// the file: open it once and hand it to sqlitestore.New, sqlitetransport.New and sqliteturn.New.
// The application owns it and closes it after them.
//
// Components write through d's one writer connection, taken out of the pool W for d's life: they
// prepare their write statements on it (PrepareWrites) and run them in d's write transactions
// (Write, Begin), which begin with BEGIN IMMEDIATE, so a writer never has to upgrade a read lock
// (the lock-upgrade deadlock that SQLITE_BUSY_SNAPSHOT reports in WAL mode), and do not wait
// for locks inside SQLite but in Retry, with BusyTimeout as its budget. Because every component
// writes on that one connection, one transaction can hold the writes of several (a store's
// commit and a transport's publish and acks: see Begin). W's other connections serve Migrate
// (through _txlock=immediate and Lock). R is a pool of read-only connections that run beside
// the writer, which WAL allows.
//
// SQLite has one writer at a time per file. Lock is the write gate of the process: the writes of
// every component on d queue on it in request order, instead of meeting in SQLite's busy
// handler, which sleeps 1, 2, 5 ... 100 ms even when the holder is done within microseconds
// (measured: that contention cost a worker more than half its throughput). Other processes on the
// same file still meet the busy handler, bounded by BusyTimeout.
//
// Memory opens a database that lives in this process only, shared by d's connections, until
// Close.
type DB struct {
	W, R        *sql.DB
	BusyTimeout time.Duration
	Memory      bool
	Readers     int // the size of R

	gate chan struct{}
	w    *writer   // the one write connection, used under gate (writer.go)
	keep *sql.Conn // Memory: holds the database open between uses
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
	d := &DB{BusyTimeout: c.BusyTimeout, Memory: c.Path == Memory, Readers: c.Readers, gate: make(chan struct{}, 1), w: &writer{}}
	path := c.Path
	if d.Memory {
		// A plain ":memory:" database exists on one connection only; the memdb VFS shares a
		// named in-memory database between the connections of one process.
		path = memoryName()
	}
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
	if d.W, err = sql.Open("sqlite", dsn(path, d.Memory, pragmas, "_txlock=immediate")); err != nil {
		return nil, fmt.Errorf("%w: open %s: %v", errs.Invalid, c.Path, err)
	}
	d.W.SetMaxIdleConns(4)
	d.W.SetConnMaxLifetime(0)
	d.W.SetConnMaxIdleTime(0)
	// The first connection switches the file to WAL, which needs an exclusive lock: retry it
	// like any other write when another process holds the database.
	if err := Retry(ctx, d.BusyTimeout, func() error { return d.W.PingContext(ctx) }); err != nil {
		d.W.Close()
		return nil, fmt.Errorf("open %s: %w", c.Path, Classify(err))
	}
	if d.Memory {
		if d.keep, err = d.W.Conn(ctx); err != nil {
			d.W.Close()
			return nil, fmt.Errorf("open %s: %w", c.Path, Classify(err))
		}
	}
	// Readers do wait inside SQLite (in WAL mode only for rare moments such as a recovery).
	rp := []string{"busy_timeout(" + strconv.FormatInt(c.BusyTimeout.Milliseconds(), 10) + ")", "foreign_keys(1)", "query_only(1)"}
	if d.R, err = sql.Open("sqlite", dsn(path, d.Memory, rp)); err != nil {
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

// Lock takes the write gate of d (see DB), waiting in request order; it honours ctx. Hold it for
// one write transaction, including its Retry, and Unlock after.
func (d *DB) Lock(ctx context.Context) error {
	select {
	case d.gate <- struct{}{}:
		return nil
	default:
	}
	select {
	case d.gate <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: waiting for the write gate: %w", errs.Unavailable, ctx.Err())
	}
}

// Unlock releases the write gate taken by Lock.
func (d *DB) Unlock() { <-d.gate }

// Close closes the writer connection and both pools. Close the components on d first.
func (d *DB) Close() error {
	d.closeWriter()
	if d.keep != nil {
		d.keep.Close()
	}
	err := d.W.Close()
	if d.R != nil {
		if e := d.R.Close(); err == nil {
			err = e
		}
	}
	return err
}

// memoryName returns a name for a new in-memory database, unique in the process.
func memoryName() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "/stead-" + hex.EncodeToString(b[:])
}

// dsn builds a modernc.org/sqlite data source name. A file path is written as a "file:" URI with
// the characters URIs reserve escaped, so that any file name works; the driver reads the
// underscore parameters and SQLite ignores them.
func dsn(path string, memory bool, pragmas []string, extra ...string) string {
	q := make([]string, 0, len(pragmas)+len(extra))
	for _, p := range pragmas {
		q = append(q, "_pragma="+url.QueryEscape(p))
	}
	q = append(q, extra...)
	if memory {
		return "file:" + path + "?vfs=memdb&" + strings.Join(q, "&")
	}
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return "file:" + r.Replace(path) + "?" + strings.Join(q, "&")
}
