package sqlitetransport

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sync/atomic"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/internal/wake"
)

// DefaultPollInterval is how long Wait blocks at most without a wake-up from this process.
const DefaultPollInterval = 50 * time.Millisecond

// Option configures New.
type Option func(*config)

type config struct {
	now  func() time.Time
	poll time.Duration
}

// WithClock sets the clock leases, parks and the round-robin are measured with (default
// time.Now).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithPollInterval sets how long Wait blocks at most without a wake-up from this process
// (default DefaultPollInterval): how late a worker notices another process's publish or a lease
// that ended.
func WithPollInterval(d time.Duration) Option { return func(c *config) { c.poll = d } }

// backend is the SQLite transport.Backend. It is safe for concurrent use.
type backend struct {
	cfg    config
	db     *sqlitedb.DB
	st     stmts // on db's writer connection, used in its write transactions (under its gate)
	sig    *wake.Signal
	closed atomic.Bool
	// due is the earliest time (unix microseconds; 0: none) at which this process knows a rate
	// token comes due for a waiting group: Wait wakes then rather than at the poll.
	due atomic.Int64
}

var _ transport.Backend = (*backend)(nil)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationsTable records which versions of the transport's schema a file has; it sits beside
// the execution store's own when both share a file.
const migrationsTable = "transport_migrations"

// migrations is the transport's schema history.
var migrations = func() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the directory is embedded: it is always there
	}
	return sub
}()

// New returns a transport on db, which the application opened (sqlitedb.Open) and still owns:
// closing the transport leaves db open. It creates or migrates the transport's tables, then
// prepares its statements on db's writer connection: its writes queue on db's write gate with
// those of every other component on db, and can share a transaction with them (PublishBatchTx).
func New(ctx context.Context, db *sqlitedb.DB, opts ...Option) (*transport.Transport, error) {
	c := config{now: time.Now, poll: DefaultPollInterval}
	for _, o := range opts {
		o(&c)
	}
	switch {
	case db == nil:
		return nil, check.Invalidf("sqlitetransport: db is nil")
	case c.now == nil:
		return nil, check.Invalidf("sqlitetransport: clock is nil")
	case c.poll <= 0:
		return nil, check.Invalidf("sqlitetransport: poll interval %v is not positive", c.poll)
	}
	if err := sqlitedb.Migrate(ctx, db, migrationsTable, migrations); err != nil {
		return nil, fmt.Errorf("sqlitetransport: %w", sqlitedb.Classify(err))
	}
	b := &backend{cfg: c, db: db, sig: wake.New()}
	if err := db.PrepareWrites(ctx, &b.st, statements); err != nil {
		return nil, fmt.Errorf("sqlitetransport: prepare: %w", classify(err))
	}
	return transport.New(b), nil
}

// Close waits for the write in flight, then releases the transport's statements. Waiters return
// at once with stead.ErrClosed.
func (b *backend) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	b.sig.Close()
	// Once the write in flight is done, which holds the gate; no ctx can end this wait early,
	// and none is needed: writes are short.
	b.db.ReleaseWrites(&b.st)
	return nil
}

var errClosed = fmt.Errorf("sqlitetransport: %w", stead.ErrClosed)

// tx runs fn in one write transaction of db (sqlitedb.DB.Write): under db's write gate, BEGIN
// IMMEDIATE on db's writer connection, fn, COMMIT. A transaction that found the file locked by
// another process is rolled back and run again, within db's busy timeout (sqlitedb.Retry): fn
// must have no effect outside the transaction. COMMIT runs without ctx: it is local and short,
// and interrupting it would leave the outcome unknown for no gain; a ctx done by then rolls back.
func (b *backend) tx(ctx context.Context, fn func(ctx context.Context) error) error {
	err := b.db.Write(ctx, func(*sqlitedb.Tx) error {
		if b.closed.Load() { // under the gate: Close releases the statements under it
			return errClosed
		}
		return fn(ctx)
	})
	return classify(interrupted(ctx, err))
}

// interrupted reports ctx's error along with err when ctx ended: SQLite then stopped the
// statement (SQLITE_INTERRUPT) and the transaction was rolled back, so nothing was written.
func interrupted(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}

// write runs an operation in tx and names it in errors.
func (b *backend) write(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	if err := b.tx(ctx, fn); err != nil {
		if errors.Is(err, stead.ErrClosed) || errors.Is(err, stead.ErrInvalid) {
			return err
		}
		return fmt.Errorf("sqlitetransport: %s: %w", op, err)
	}
	return nil
}

// classify maps an error to the stead sentinels with sqlitedb.Classify, keeping it in the
// chain, except that an error carrying its context's (an operation cut short by ctx, nothing
// written) is returned as it is: Classify would call a deadline ErrTimeout, which a transport
// reserves for a write that may have landed.
func classify(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return sqlitedb.Classify(err)
}

// micros is a time as stored: unix microseconds.
func micros(tm time.Time) int64 { return tm.UnixMicro() }

// now reads the clock in UTC at the precision the database keeps, so that what a lease reports is
// what the database compares.
func (b *backend) now() time.Time { return b.cfg.now().UTC().Truncate(time.Microsecond) }

// PublishBatch implements transport.Backend in one transaction.
func (b *backend) PublishBatch(ctx context.Context, msgs []transport.Outgoing) error {
	events, err := encodeEvents(msgs)
	if err != nil {
		return err
	}
	created := false
	err = b.write(ctx, "publish", func(ctx context.Context) error {
		var err error
		created, err = b.publish(ctx, msgs, events)
		return err
	})
	if err == nil && created {
		b.sig.Notify()
	}
	return err
}

// encodeEvents encodes the events of msgs, before a transaction, so that the write lock is held
// for the statements only.
func encodeEvents(msgs []transport.Outgoing) ([]string, error) {
	events := make([]string, len(msgs))
	for i := range msgs {
		b, err := json.Marshal(msgs[i].Event)
		if err != nil {
			return nil, check.Invalidf("message %d: event does not encode: %v", i, err)
		}
		events[i] = string(b)
	}
	return events, nil
}

// publish appends msgs (their events encoded in events) inside a write transaction. It reports
// whether a group became claimable, for a wake-up once the transaction commits.
func (b *backend) publish(ctx context.Context, msgs []transport.Outgoing, events []string) (bool, error) {
	created := false
	f := flows{b: b, now: b.now()}
	for i, m := range msgs {
		if m.Flow.Limited() {
			if err := f.remember(ctx, m.Group, m.Flow); err != nil {
				return false, err
			}
		}
		res, err := b.st.PublishGroup.ExecContext(ctx, m.Group, m.Priority)
		if err != nil {
			return false, err
		}
		if n, _ := res.RowsAffected(); n > 0 {
			// A group created with a remembered key waits for admission; one created without is
			// claimable at once.
			if res, err = b.st.PublishLimit.ExecContext(ctx, m.Group); err != nil {
				return false, err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				created = true
			} else if admitted, err := f.enqueueNew(ctx, m.Group); err != nil {
				return false, err
			} else if admitted {
				created = true
			}
		}
		if _, err := b.st.PublishMessage.ExecContext(ctx, m.Group, events[i]); err != nil {
			return false, err
		}
	}
	admitted, err := f.settle(ctx)
	return created || admitted, err
}

// ClaimBatch implements transport.Backend in one transaction.
func (b *backend) ClaimBatch(ctx context.Context, worker string, visibility time.Duration, minPriority, max int) ([]transport.Lease, error) {
	gen := b.sig.Gen()
	var out []transport.Lease
	admitted := false
	err := b.write(ctx, "claim", func(ctx context.Context) error {
		out = out[:0]
		now := b.now()
		// Admit the waiting groups whose rate token came due, so that this claim may take them.
		f := flows{b: b, now: now}
		var err error
		if admitted, err = f.due(ctx); err != nil {
			return err
		}
		until := now.Add(visibility)
		token := transport.NewToken(worker)
		pick := b.st.ClaimPick
		if minPriority > 0 {
			pick = b.st.ClaimPickPrioritised
		}
		for len(out) < max {
			heads, empty, err := b.heads(ctx, &f, pick, micros(now), minPriority, max-len(out))
			if err != nil {
				return err
			}
			for _, h := range heads {
				if _, err := b.st.ClaimLease.ExecContext(ctx, token, micros(until), h.Group); err != nil {
					return err
				}
				out = append(out, transport.Lease{Message: h, Token: token, Until: until})
			}
			// Empty groups (none normally: an ack deletes a drained group) were deleted; look
			// again for the places they took.
			if empty == 0 {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if admitted {
		b.sig.Notify() // for this process's other claimers: this claim may not take all it admitted
	}
	if len(out) == 0 {
		b.sig.Empty(gen)
	}
	return out, nil
}

// heads returns the head message of up to n claimable groups in claim order and deletes any
// empty group among them, reporting how many; an empty keyed group gives its place back.
func (b *backend) heads(ctx context.Context, f *flows, pick *sql.Stmt, now int64, minPriority, n int) ([]transport.Message, int, error) {
	rows, err := pick.QueryContext(ctx, now, minPriority, n)
	if err != nil {
		return nil, 0, err
	}
	var heads []transport.Message
	var empties []string
	for rows.Next() {
		var (
			group    string
			priority int
			seq      sql.NullInt64
			event    sql.NullString
		)
		if err := rows.Scan(&group, &priority, &seq, &event); err != nil {
			rows.Close()
			return nil, 0, err
		}
		if !seq.Valid {
			empties = append(empties, group)
			continue
		}
		m := transport.Message{Seq: seq.Int64, Group: group, Priority: priority}
		if err := json.Unmarshal([]byte(event.String), &m.Event); err != nil {
			rows.Close()
			return nil, 0, fmt.Errorf("message %d of %q does not decode: %w", seq.Int64, group, err)
		}
		heads = append(heads, m)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, 0, err
	}
	for _, g := range empties {
		var key sql.NullString
		if err := b.st.ClaimDeleteEmpty.QueryRowContext(ctx, g).Scan(&key); err != nil {
			return nil, 0, err
		}
		if key.Valid {
			if err := f.release(ctx, key.String); err != nil {
				return nil, 0, err
			}
		}
	}
	if _, err := f.settle(ctx); err != nil {
		return nil, 0, err
	}
	return heads, len(empties), nil
}

// AckBatch implements transport.Backend in one transaction.
func (b *backend) AckBatch(ctx context.Context, ls []transport.Lease) error {
	freed := false
	err := b.write(ctx, "ack", func(ctx context.Context) error {
		var err error
		freed, err = b.ack(ctx, ls)
		return err
	})
	if err == nil && freed {
		b.sig.Notify()
	}
	return err
}

// ack acknowledges ls inside a write transaction. It reports whether a group with messages
// became claimable, for a wake-up once the transaction commits.
func (b *backend) ack(ctx context.Context, ls []transport.Lease) (bool, error) {
	freed := false
	f := flows{b: b, now: b.now()}
	now := micros(f.now)
	for _, l := range ls {
		// Deletes the message only while the lease's token holds the group: a stale lease
		// deletes nothing and changes nothing else.
		res, err := b.st.AckMessage.ExecContext(ctx, l.Seq, l.Group, l.Token)
		if err != nil {
			return false, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			continue
		}
		// Free the group behind the waiting ones, or delete it if it is drained: the next
		// publish creates it afresh with its own priority.
		res, err = b.st.AckFree.ExecContext(ctx, now, l.Group)
		if err != nil {
			return false, err
		}
		if n, _ := res.RowsAffected(); n > 0 {
			freed = true
			continue
		}
		if res, err = b.st.AckDeleteGroup.ExecContext(ctx, l.Group); err != nil {
			return false, err
		}
		if n, _ := res.RowsAffected(); n > 0 {
			continue
		}
		// Neither: the group is keyed.
		again, err := f.ackKeyed(ctx, l.Group)
		if err != nil {
			return false, err
		}
		freed = freed || again
	}
	admitted, err := f.settle(ctx)
	return freed || admitted, err
}

// Nack implements transport.Backend in one transaction.
func (b *backend) Nack(ctx context.Context, l *transport.Lease, delay time.Duration) error {
	freed := false
	err := b.write(ctx, "nack", func(ctx context.Context) error {
		var err error
		freed, err = b.nack(ctx, l, delay)
		return err
	})
	if err == nil && freed {
		b.sig.Notify()
	}
	return err
}

// nack hands l back inside a write transaction. It reports whether its group became claimable,
// for a wake-up once the transaction commits.
func (b *backend) nack(ctx context.Context, l *transport.Lease, delay time.Duration) (bool, error) {
	if delay > 0 {
		_, err := b.st.NackPark.ExecContext(ctx, micros(b.now().Add(delay)), l.Group, l.Token)
		return false, err
	}
	res, err := b.st.NackRelease.ExecContext(ctx, l.Group, l.Token)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// Extend implements transport.Extender in one write transaction.
func (b *backend) Extend(ctx context.Context, ls []transport.Lease, visibility time.Duration) (int, error) {
	var n int64
	err := b.write(ctx, "extend", func(ctx context.Context) error {
		n = 0
		until := micros(b.now().Add(visibility))
		for _, l := range ls {
			res, err := b.st.Extend.ExecContext(ctx, until, l.Group, l.Token)
			if err != nil {
				return err
			}
			k, _ := res.RowsAffected()
			n += k
		}
		return nil
	})
	return int(n), err
}

// Wait implements transport.Backend: it wakes on this process's publishes, acks, nacks and
// forgets at once, when a rate token this process saw scheduled comes due, and after the poll
// interval otherwise.
func (b *backend) Wait(ctx context.Context) error {
	d := b.cfg.poll
	if due := b.due.Load(); due != 0 {
		left := time.UnixMicro(due).Sub(b.cfg.now())
		if left <= 0 {
			// Due: the next claim admits the group, and schedules the token after if need be.
			b.due.CompareAndSwap(due, 0)
			if err := ctx.Err(); err != nil {
				return err
			}
			if b.closed.Load() {
				return errClosed
			}
			return nil
		}
		d = min(d, left)
	}
	if err := b.sig.Wait(ctx, d); err != nil {
		if errors.Is(err, stead.ErrClosed) {
			return errClosed
		}
		return err
	}
	return nil
}
