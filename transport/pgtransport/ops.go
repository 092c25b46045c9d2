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
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/transport"
)

// statements holds every statement of sql.go for one schema: field X is constant sqlX expanded
// with the schema, filled once by name (pgdb.ExpandByName), so no field carries another's text.
type statements struct {
	Publish, Claim, Ack, Nack, Release, QueueStats string
	ClaimHeld, AckHeld, NackHeld                   string
	ClaimHeldGroups, AckHeldGroups                 string
	Extend                                         string
	Forget, FlowState                              string
}

// statementTexts names every statement of sql.go for pgdb.ExpandByName: constant sqlX under "sqlX".
var statementTexts = map[string]string{
	"sqlPublish":         sqlPublish,
	"sqlClaim":           sqlClaim,
	"sqlAck":             sqlAck,
	"sqlNack":            sqlNack,
	"sqlRelease":         sqlRelease,
	"sqlClaimHeld":       sqlClaimHeld,
	"sqlAckHeld":         sqlAckHeld,
	"sqlClaimHeldGroups": sqlClaimHeldGroups,
	"sqlAckHeldGroups":   sqlAckHeldGroups,
	"sqlNackHeld":        sqlNackHeld,
	"sqlQueueStats":      sqlQueueStats,
	"sqlExtend":          sqlExtend,
	"sqlForget":          sqlForget,
	"sqlFlowState":       sqlFlowState,
}

func newStatements(schema string) (statements, error) {
	var s statements
	if err := pgdb.ExpandByName(&s, statementTexts, schema); err != nil {
		return statements{}, fmt.Errorf("pgtransport: %w", err)
	}
	return s, nil
}

// now reads the clock in UTC at the precision PostgreSQL keeps, so that what a lease reports is
// what the database compares.
func (b *Backend) now() time.Time { return b.cfg.now().UTC().Truncate(time.Microsecond) }

func (b *Backend) notifyChannel() string {
	if b.cfg.notify {
		return b.channel
	}
	return ""
}

// PublishBatch implements transport.Backend in one round trip.
func (b *Backend) PublishBatch(ctx context.Context, msgs []transport.Outgoing) error {
	args, err := b.publishArgs(msgs)
	if err != nil {
		return err
	}
	return b.published(b.pool.QueryRow(ctx, b.st.Publish, args...))
}

// PublishBatchTx is the transport's PublishBatch inside the caller's transaction, with the same
// checks: the messages become visible (and waiters are notified) when it commits, and vanish if
// it rolls back. It exists for worker/pgtx.
func (b *Backend) PublishBatchTx(ctx context.Context, tx pgx.Tx, msgs []transport.Outgoing) error {
	if b.closed.Load() {
		return errClosed
	}
	args, err := b.preparePublish(msgs)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil || args == nil {
		return err
	}
	return b.published(tx.QueryRow(ctx, b.st.Publish, args...))
}

// preparePublish checks msgs as the Transport does and returns the publish's arguments, nil for
// nothing to publish.
func (b *Backend) preparePublish(msgs []transport.Outgoing) ([]any, error) {
	msgs, err := transport.PreparePublish(msgs)
	if err != nil || len(msgs) == 0 {
		return nil, err
	}
	return b.publishArgs(msgs)
}

// publishArgs returns the arguments of a publish of checked messages. The flow arrays are NULL
// when no message names a flow, and transport_publish then leaves flows alone.
func (b *Backend) publishArgs(msgs []transport.Outgoing) ([]any, error) {
	groups := make([]string, len(msgs))
	events := make([]string, len(msgs))
	prios := make([]int32, len(msgs))
	var (
		keys        []*string
		conc, rates []int32
		pers        []int64
	)
	for i := range msgs {
		e, err := json.Marshal(msgs[i].Event)
		if err != nil {
			return nil, fmt.Errorf("%w: message %d: event does not encode: %v", stead.ErrInvalid, i, err)
		}
		groups[i], events[i], prios[i] = msgs[i].Group, string(e), int32(msgs[i].Priority)
		if f := msgs[i].Flow; f.Limited() {
			if keys == nil {
				keys = make([]*string, len(msgs))
				conc, rates, pers = make([]int32, len(msgs)), make([]int32, len(msgs)), make([]int64, len(msgs))
			}
			keys[i] = &msgs[i].Flow.Key
			conc[i], rates[i], pers[i] = int32(f.Concurrency), int32(f.Rate), f.Per.Microseconds()
		}
	}
	return []any{groups, events, prios, b.notifyChannel(), b.now(), keys, conc, rates, pers}, nil
}

// published reads the answer of a publish.
func (b *Backend) published(r pgx.Row) error {
	var created bool
	if err := r.Scan(&created); err != nil {
		return fail("publish", err)
	}
	if created {
		b.sig.Notify() // this process's waiters, without the round trip through the listener
	}
	return nil
}

// ClaimBatch implements transport.Backend in one round trip.
func (b *Backend) ClaimBatch(ctx context.Context, worker string, visibility time.Duration, minPriority, max int) ([]transport.Lease, error) {
	return b.claim(ctx, worker, visibility, minPriority, max)
}

// claim leases up to max groups, deleting an empty group it meets (transport_claim's
// p_delete_empty stays for the leased claim inside a caller's transaction that this package no
// longer offers: held claims took its place).
func (b *Backend) claim(ctx context.Context, worker string, visibility time.Duration, minPriority, max int) ([]transport.Lease, error) {
	gen := b.sig.Gen()
	now := b.now()
	until := now.Add(visibility)
	token := transport.NewToken(worker)
	after := b.cursor.from()
	rows, err := b.pool.Query(ctx, b.st.Claim, now, until, token, minPriority, max, after.key, after.group, true)
	if err != nil {
		return nil, b.claimFailed(token, until, err)
	}
	out, err := b.leases(rows, gen, token, until, minPriority)
	if err != nil {
		return nil, b.claimFailed(token, until, err)
	}
	return out, nil
}

// leases reads the rows of a claim into leases of token until until, oldest message first, and
// moves the cursor to the last group taken (an unfiltered claim only: a priority filter walks
// its own index).
func (b *Backend) leases(rows pgx.Rows, gen uint64, token string, until time.Time, minPriority int) ([]transport.Lease, error) {
	out := []transport.Lease{}
	var (
		group, event string
		priority     int32
		seq          int64
		key          pgtype.Timestamptz
		last         place
	)
	_, err := pgx.ForEachRow(rows, []any{&group, &priority, &seq, &event, &key}, func() error {
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
		return nil, err
	}
	if len(out) == 0 {
		b.sig.Empty(gen)
	} else if minPriority == 0 {
		b.cursor.moveTo(last)
	}
	slices.SortFunc(out, func(x, y transport.Lease) int { return cmp.Compare(x.Seq, y.Seq) })
	return out, nil
}

// AckBatch implements transport.Backend in one round trip.
func (b *Backend) AckBatch(ctx context.Context, ls []transport.Lease) error {
	return b.acked(b.pool.QueryRow(ctx, b.st.Ack, b.ackArgs(ls)...))
}

// ackStatement is the statement and arguments of an ack of checked leases, fenced or held.
func (b *Backend) ackStatement(ls []transport.Lease, held bool) (string, []any) {
	if held {
		return b.ackHeldStatement(ls)
	}
	return b.st.Ack, b.ackArgs(ls)
}

// ackArgs returns the arguments of an ack of checked leases.
//
// An ack tells only this process's waiters that it freed a group with messages (the empty
// channel): on a busy fleet nearly every ack does, and a NOTIFY per ack would serialise the
// commits of every worker on PostgreSQL's notification lock. Waiters elsewhere find the group at
// their next poll, or the acking worker itself takes it with its next claim.
func (b *Backend) ackArgs(ls []transport.Lease) []any {
	groups := make([]string, len(ls))
	seqs := make([]int64, len(ls))
	tokens := make([]string, len(ls))
	for i := range ls {
		groups[i], seqs[i], tokens[i] = ls[i].Group, ls[i].Seq, ls[i].Token
	}
	return []any{groups, seqs, tokens, b.now(), ""}
}

// acked reads the answer of an ack.
func (b *Backend) acked(r pgx.Row) error {
	var freed int
	if err := r.Scan(&freed); err != nil {
		return fail("ack", err)
	}
	if freed > 0 {
		b.sig.Notify()
	}
	return nil
}

// Nack implements transport.Backend in one round trip.
func (b *Backend) Nack(ctx context.Context, l *transport.Lease, delay time.Duration) error {
	return b.nacked(b.pool.QueryRow(ctx, b.st.Nack, b.nackArgs(l, delay)...))
}

// nackStatement is the statement of a nack, fenced or held; both take nackArgs.
func (b *Backend) nackStatement(held bool) string {
	if held {
		return b.st.NackHeld
	}
	return b.st.Nack
}

// nackArgs returns the arguments of a checked nack.
func (b *Backend) nackArgs(l *transport.Lease, delay time.Duration) []any {
	var park *time.Time
	if delay > 0 {
		p := b.now().Add(delay)
		park = &p
	}
	return []any{l.Group, l.Token, park, b.notifyChannel()}
}

// nacked reads the answer of a nack.
func (b *Backend) nacked(r pgx.Row) error {
	var released bool
	if err := r.Scan(&released); err != nil {
		return fail("nack", err)
	}
	if released {
		b.sig.Notify()
	}
	return nil
}

// QueuePublish, QueueAckHeld and QueueNackHeld are PublishBatch, AckBatch and Nack queued on q
// instead of sent, for worker/pgtx, which sends a step's commit (pgstore's QueueCommitGuarded),
// the events the step emitted, the settling of its messages and COMMIT in one round trip
// (pgx.Batch); the acks and nacks are those of the leases of ClaimHeldGroupsTx. Each runs the transport's checks now (an invalid input is an
// error wrapping stead.ErrInvalid, and queues nothing) and queues one statement, or none when
// there is nothing to do; its outcome is an error of the batch's Close.
func (b *Backend) QueuePublish(q *pgx.Batch, msgs []transport.Outgoing) error {
	if err := b.enterQueue(q); err != nil {
		return err
	}
	args, err := b.preparePublish(msgs)
	if err != nil || args == nil {
		return err
	}
	q.Queue(b.st.Publish, args...).QueryRow(b.published)
	return nil
}

// queueFencedAck queues the fenced ack of leases claimed outside the transaction. Only the
// package's tests use it: pgtx settles nothing but its own held claims.
func (b *Backend) queueFencedAck(q *pgx.Batch, ls []transport.Lease) error {
	return b.queueAck(q, ls, false)
}

// queueAck queues an ack on q after the transport's checks: the fenced form, or the held one for
// the leases of ClaimHeldGroupsTx.
func (b *Backend) queueAck(q *pgx.Batch, ls []transport.Lease, held bool) error {
	if err := b.enterQueue(q); err != nil {
		return err
	}
	if err := transport.CheckAck(ls); err != nil || len(ls) == 0 {
		return err
	}
	sql, args := b.ackStatement(ls, held)
	q.Queue(sql, args...).QueryRow(b.acked)
	return nil
}

// queueFencedNack: see queueFencedAck.
func (b *Backend) queueFencedNack(q *pgx.Batch, l *transport.Lease, delay time.Duration) error {
	return b.queueNack(q, l, delay, false)
}

// queueNack queues a nack on q after the transport's checks, fenced or held (as queueAck).
func (b *Backend) queueNack(q *pgx.Batch, l *transport.Lease, delay time.Duration, held bool) error {
	if err := b.enterQueue(q); err != nil {
		return err
	}
	if err := transport.CheckNack(l, delay); err != nil {
		return err
	}
	q.Queue(b.nackStatement(held), b.nackArgs(l, delay)...).QueryRow(b.nacked)
	return nil
}

func (b *Backend) enterQueue(q *pgx.Batch) error {
	if b.closed.Load() {
		return errClosed
	}
	if q == nil {
		return fmt.Errorf("pgtransport: %w: batch is nil", stead.ErrInvalid)
	}
	return nil
}
