package pgtransport

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/errs"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/transport"
)

// statements are the SQL texts of one schema, expanded once.
type statements struct {
	publish, claim, ack, nack string
}

func newStatements(schema string) statements {
	q := pgdb.Qualifier(schema)
	return statements{
		// Every parameter is cast, so the statements also work unprepared (WithPgBouncer), when
		// the server is not asked for their types.
		publish: `SELECT ` + q + `transport_publish($1::text[], $2::text[], $3::int[], $4::text)`,
		claim: `SELECT r_group, r_priority, r_seq, r_event, r_key FROM ` + q +
			`transport_claim($1::timestamptz, $2::timestamptz, $3::text, $4::int, $5::int, $6::timestamptz, $7::text, $8::boolean)`,
		ack:  `SELECT ` + q + `transport_ack($1::text[], $2::bigint[], $3::text[], $4::timestamptz, $5::text)`,
		nack: `SELECT ` + q + `transport_nack($1::text, $2::text, $3::timestamptz, $4::text)`,
	}
}

// querier is what a pool and a transaction have in common.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// run calls fn on the pool, or on a connection acquired within the acquire timeout.
func (t *Transport) run(ctx context.Context, fn func(q querier) error) error {
	if t.closed.Load() {
		return errClosed
	}
	if t.cfg.acquireTimeout <= 0 {
		return fn(t.pool)
	}
	actx, cancel := context.WithTimeout(ctx, t.cfg.acquireTimeout)
	conn, err := t.pool.Acquire(actx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: no free connection within %v: %w", errs.Unavailable, t.cfg.acquireTimeout, err)
	}
	defer conn.Release()
	return fn(conn)
}

// now reads the clock at the precision PostgreSQL keeps, so that what a lease reports is what
// the database compares.
func (t *Transport) now() time.Time { return t.cfg.now().Truncate(time.Microsecond) }

func (t *Transport) notifyChannel() string {
	if t.cfg.notify {
		return t.channel
	}
	return ""
}

// Publish implements transport.Transport. It is one round-trip.
func (t *Transport) Publish(ctx context.Context, group string, ev stead.Event, priority int) error {
	return t.PublishBatch(ctx, []transport.Outgoing{{Group: group, Event: ev, Priority: priority}})
}

// PublishBatch implements transport.Transport in one round-trip.
func (t *Transport) PublishBatch(ctx context.Context, msgs []transport.Outgoing) error {
	return t.run(ctx, func(q querier) error { return t.publish(ctx, q, msgs) })
}

// PublishBatchTx is PublishBatch inside the caller's transaction: the messages become visible
// (and waiters are notified) when it commits, and vanish if it rolls back.
func (t *Transport) PublishBatchTx(ctx context.Context, tx pgx.Tx, msgs []transport.Outgoing) error {
	if t.closed.Load() {
		return errClosed
	}
	return t.publish(ctx, tx, msgs)
}

func (t *Transport) publish(ctx context.Context, q querier, msgs []transport.Outgoing) error {
	args, err := t.publishArgs(msgs)
	if err != nil || args == nil {
		return err
	}
	return t.published(q.QueryRow(ctx, t.sql.publish, args...))
}

// publishArgs validates msgs and returns the publish's arguments, nil for nothing to publish.
func (t *Transport) publishArgs(msgs []transport.Outgoing) ([]any, error) {
	if err := transport.ValidateBatch(msgs); err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	groups := make([]string, len(msgs))
	events := make([]string, len(msgs))
	prios := make([]int32, len(msgs))
	for i := range msgs {
		b, err := json.Marshal(msgs[i].Event)
		if err != nil {
			return nil, fmt.Errorf("%w: message %d: event does not encode: %v", stead.ErrInvalid, i, err)
		}
		groups[i], events[i], prios[i] = msgs[i].Group, string(b), int32(msgs[i].Priority)
	}
	return []any{groups, events, prios, t.notifyChannel()}, nil
}

// published reads the answer of a publish.
func (t *Transport) published(r pgx.Row) error {
	var created bool
	if err := r.Scan(&created); err != nil {
		return fail("publish", err)
	}
	if created {
		t.sig.Notify() // this process's waiters, without the round-trip through the listener
	}
	return nil
}

// Claim implements transport.Transport. It is one round-trip.
func (t *Transport) Claim(ctx context.Context, worker string, visibility time.Duration, minPriority int) (*transport.Lease, error) {
	return transport.FirstLease(t.ClaimBatch(ctx, worker, visibility, minPriority, 1))
}

// ClaimBatch implements transport.Transport in one round-trip.
func (t *Transport) ClaimBatch(ctx context.Context, worker string, visibility time.Duration, minPriority, max int) ([]transport.Lease, error) {
	var out []transport.Lease
	err := t.run(ctx, func(q querier) error {
		var err error
		out, err = t.claim(ctx, q, worker, visibility, minPriority, max, true)
		return err
	})
	return out, err
}

// ClaimBatchTx is ClaimBatch inside the caller's transaction. The claimed group rows stay locked
// until the transaction ends, so no other claimer can take them meanwhile even if the lease runs
// out; acking them with AckBatchTx in the same transaction makes the claim, the step and the ack
// one atomic commit. A rollback undoes the claim: the messages are claimable again at once.
func (t *Transport) ClaimBatchTx(ctx context.Context, tx pgx.Tx, worker string, visibility time.Duration, minPriority, max int) ([]transport.Lease, error) {
	if t.closed.Load() {
		return nil, errClosed
	}
	return t.claim(ctx, tx, worker, visibility, minPriority, max, false)
}

// claim leases up to max groups. deleteEmpty lets it delete an empty group it meets: never inside
// the caller's transaction, where the deletion would hold publishers to that group until the
// caller commits.
func (t *Transport) claim(ctx context.Context, q querier, worker string, visibility time.Duration, minPriority, max int, deleteEmpty bool) ([]transport.Lease, error) {
	if err := transport.ValidateClaim(worker, visibility, minPriority, max); err != nil {
		return nil, err
	}
	gen := t.sig.Gen()
	now := t.now()
	until := now.Add(visibility)
	token := transport.NewToken(worker)
	after := t.cursor.from()
	rows, err := q.Query(ctx, t.sql.claim, now, until, token, minPriority, max, after.key, after.group, deleteEmpty)
	if err != nil {
		return nil, fail("claim", err)
	}
	var out []transport.Lease
	var (
		group, event string
		priority     int32
		seq          int64
		key          pgtype.Timestamptz
		last         place
	)
	_, err = pgx.ForEachRow(rows, []any{&group, &priority, &seq, &event, &key}, func() error {
		l := transport.Lease{
			Message: transport.Message{Seq: seq, Group: group, Priority: int(priority)},
			Token:   token, Until: until,
		}
		if err := json.Unmarshal([]byte(event), &l.Event); err != nil {
			return fmt.Errorf("message %d of %q does not decode: %w", seq, group, err)
		}
		out = append(out, l)
		if p := (place{key, pgtype.Text{String: group, Valid: true}}); p.after(last) {
			last = p
		}
		return nil
	})
	if err != nil {
		return nil, fail("claim", err)
	}
	if len(out) == 0 {
		t.sig.Empty(gen)
	} else if minPriority == 0 {
		t.cursor.moveTo(last)
	}
	slices.SortFunc(out, func(a, b transport.Lease) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

// Ack implements transport.Transport. It is one round-trip.
func (t *Transport) Ack(ctx context.Context, l *transport.Lease) error {
	if err := transport.ValidateLease(l); err != nil {
		return err
	}
	return t.AckBatch(ctx, []transport.Lease{*l})
}

// AckBatch implements transport.Transport in one round-trip.
func (t *Transport) AckBatch(ctx context.Context, ls []transport.Lease) error {
	return t.run(ctx, func(q querier) error { return t.ack(ctx, q, ls) })
}

// AckBatchTx is AckBatch inside the caller's transaction: the messages are gone, and their groups
// free, when it commits.
func (t *Transport) AckBatchTx(ctx context.Context, tx pgx.Tx, ls []transport.Lease) error {
	if t.closed.Load() {
		return errClosed
	}
	return t.ack(ctx, tx, ls)
}

func (t *Transport) ack(ctx context.Context, q querier, ls []transport.Lease) error {
	args, err := t.ackArgs(ls)
	if err != nil || args == nil {
		return err
	}
	return t.acked(q.QueryRow(ctx, t.sql.ack, args...))
}

// ackArgs validates ls and returns the ack's arguments, nil for nothing to ack.
//
// An ack tells only this process's waiters that it freed a group with messages (the empty
// channel): on a busy fleet nearly every ack does, and a NOTIFY per ack would serialise the
// commits of every worker on PostgreSQL's notification lock. Waiters elsewhere find the group at
// their next poll, or the acking worker itself takes it with its next claim.
func (t *Transport) ackArgs(ls []transport.Lease) ([]any, error) {
	if err := transport.ValidateLeases(ls); err != nil {
		return nil, err
	}
	if len(ls) == 0 {
		return nil, nil
	}
	groups := make([]string, len(ls))
	seqs := make([]int64, len(ls))
	tokens := make([]string, len(ls))
	for i := range ls {
		groups[i], seqs[i], tokens[i] = ls[i].Group, ls[i].Seq, ls[i].Token
	}
	return []any{groups, seqs, tokens, t.now(), ""}, nil
}

// acked reads the answer of an ack.
func (t *Transport) acked(r pgx.Row) error {
	var freed int
	if err := r.Scan(&freed); err != nil {
		return fail("ack", err)
	}
	if freed > 0 {
		t.sig.Notify()
	}
	return nil
}

// Nack implements transport.Transport. It is one round-trip.
func (t *Transport) Nack(ctx context.Context, l *transport.Lease, delay time.Duration) error {
	return t.run(ctx, func(q querier) error { return t.nack(ctx, q, l, delay) })
}

// NackTx is Nack inside the caller's transaction.
func (t *Transport) NackTx(ctx context.Context, tx pgx.Tx, l *transport.Lease, delay time.Duration) error {
	if t.closed.Load() {
		return errClosed
	}
	return t.nack(ctx, tx, l, delay)
}

func (t *Transport) nack(ctx context.Context, q querier, l *transport.Lease, delay time.Duration) error {
	args, err := t.nackArgs(l, delay)
	if err != nil {
		return err
	}
	return t.nacked(q.QueryRow(ctx, t.sql.nack, args...))
}

// nackArgs validates the nack and returns its arguments.
func (t *Transport) nackArgs(l *transport.Lease, delay time.Duration) ([]any, error) {
	if err := transport.ValidateLease(l); err != nil {
		return nil, err
	}
	if err := transport.ValidateDelay(delay); err != nil {
		return nil, err
	}
	var park *time.Time
	if delay > 0 {
		p := t.now().Add(delay)
		park = &p
	}
	return []any{l.Group, l.Token, park, t.notifyChannel()}, nil
}

// nacked reads the answer of a nack.
func (t *Transport) nacked(r pgx.Row) error {
	var released bool
	if err := r.Scan(&released); err != nil {
		return fail("nack", err)
	}
	if released {
		t.sig.Notify()
	}
	return nil
}

// QueuePublish, QueueAck and QueueNack are PublishBatchTx, AckBatchTx and NackTx queued on b
// instead of sent, for a caller that sends several statements of one transaction in one round
// trip (pgx.Batch): typically a runtime that queues a step's commit (pgstore's QueueCommit), the
// events the step emitted and the acknowledgement of the message it claimed in the transaction,
// then commits if the step's commit won. Each validates its input now (an invalid one is an
// error wrapping stead.ErrInvalid, and queues nothing) and queues one statement, or none when
// there is nothing to do; its outcome is an error of the batch's Close.
func (t *Transport) QueuePublish(b *pgx.Batch, msgs []transport.Outgoing) error {
	return t.queue(b, func() ([]any, error) { return t.publishArgs(msgs) }, t.sql.publish, t.published)
}

// QueueAck: see QueuePublish.
func (t *Transport) QueueAck(b *pgx.Batch, ls []transport.Lease) error {
	return t.queue(b, func() ([]any, error) { return t.ackArgs(ls) }, t.sql.ack, t.acked)
}

// QueueNack: see QueuePublish.
func (t *Transport) QueueNack(b *pgx.Batch, l *transport.Lease, delay time.Duration) error {
	return t.queue(b, func() ([]any, error) { return t.nackArgs(l, delay) }, t.sql.nack, t.nacked)
}

func (t *Transport) queue(b *pgx.Batch, args func() ([]any, error), sql string, read func(pgx.Row) error) error {
	if b == nil {
		return fmt.Errorf("pgtransport: %w: batch is nil", stead.ErrInvalid)
	}
	if t.closed.Load() {
		return errClosed
	}
	a, err := args()
	if err != nil || a == nil {
		return err
	}
	b.Queue(sql, a...).QueryRow(read)
	return nil
}
