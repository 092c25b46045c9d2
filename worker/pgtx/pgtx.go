// Package pgtx runs a worker's batches in one PostgreSQL transaction that spans pgstore and
// pgtransport, for worker.Config.SharedTx:
//
//	pool, _ := pgdb.Open(ctx, url, pgdb.Config{})
//	store, _ := pgstore.New(ctx, pool)
//	tr, _ := pgtransport.New(ctx, pool)
//	shared, err := pgtx.New(store, tr)
//	w, err := worker.New(worker.Config{Store: store, Transport: tr, Machines: m, SharedTx: shared})
//
// The claim, the load, the commit of every step, the publish of what the steps emitted and the
// acknowledgement of the messages then commit together, or none of them does: one commit instead
// of three per batch, and a message is acknowledged if and only if its step lands. The store and
// the transport must share one pool (so one database); the transaction runs at READ COMMITTED,
// PostgreSQL's default, which pgtransport's claims need.
//
// Round trips: BEGIN travels with the transaction's first statements (the claim and the load of
// what it claims), and COMMIT with its last ones (the acknowledgements, or a single step's commit
// and ack): a batch costs BEGIN+claim+load, commit, ack+COMMIT; a single message
// BEGIN+claim+load, step+ack+COMMIT. A step
// whose compare-and-swap is lost aborts the transaction before its ack (pgstore's guarded
// commit), so the pipelined COMMIT rolls back.
//
// Writes: the claim writes no lease (pgtransport's ClaimHeldGroupsTx): the transaction's row locks hold
// the groups, and every message it claims is acked or nacked in it, so a lease row version would
// be written only to be overwritten by the ack. A Tx settles only the leases of its own claims,
// in the held form (a lease claimed outside it is refused). With a
// depth above 1 a claim takes several consecutive messages of each group
// (pgtransport's ClaimHeldGroupsTx), which the worker applies as one chain and acks together.
package pgtx

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/worker"
)

// DB is a pgstore store and a pgtransport transport on one pool: a worker.SharedDB.
type DB struct {
	pool  *pgxpool.Pool
	store *pgstore.Backend
	tr    *pgtransport.Backend
	// loadClaimed loads what the claim before it in the same batch kept (claimAndKeep).
	loadClaimed string
}

var (
	_ worker.SharedDB = (*DB)(nil)
	_ worker.Sender   = (*DB)(nil)
	_ worker.Creator  = (*DB)(nil)
)

// New returns the shared database of store and tr. It refuses (stead.ErrInvalid) a store that is
// not pgstore, a transport that is not pgtransport, or two that do not share one pool.
func New(store *stead.Store, tr *transport.Transport) (*DB, error) {
	if store == nil || tr == nil {
		return nil, fmt.Errorf("%w: pgtx: the store and the transport must not be nil", stead.ErrInvalid)
	}
	sb, ok := store.Backend().(*pgstore.Backend)
	if !ok {
		return nil, fmt.Errorf("%w: pgtx: the store's backend is %T, not pgstore", stead.ErrInvalid, store.Backend())
	}
	tb, ok := tr.Backend().(*pgtransport.Backend)
	if !ok {
		return nil, fmt.Errorf("%w: pgtx: the transport's backend is %T, not pgtransport", stead.ErrInvalid, tr.Backend())
	}
	if sb.Pool() != tb.Pool() {
		return nil, fmt.Errorf("%w: pgtx: the store and the transport must share one pool", stead.ErrInvalid)
	}
	load := sb.LoadForEventsQuery(kept(keptIDs, "text"), kept(keptEvents, "text"), kept(keptFirst, "boolean"))
	return &DB{pool: sb.Pool(), store: sb, tr: tb, loadClaimed: load}, nil
}

// Begin starts a transaction on the shared pool. When ctx has a deadline, the server ends the
// transaction, rolling it back, once it has been idle (waiting for its client) or one of its
// statements has run for longer than the time left until that deadline at Begin: both
// idle_in_transaction_session_timeout and statement_timeout are set to it for this transaction
// only (set_config(..., true), pipelined with the BEGIN). A client that stops answering — a hung
// or stopped process, whose context never fires — so loses the transaction, and the groups it
// claimed in it are claimable again, instead of holding them for as long as it hangs.
// (PostgreSQL before 17 has no transaction_timeout; these two bound the same thing for a client
// that stopped.)
//
// Begin takes a connection but sends nothing: BEGIN goes to the server with the transaction's
// first statement, in the same round trip.
func (d *DB) Begin(ctx context.Context) (worker.Tx, error) {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgtx: begin: %w", pgdb.Classify(err))
	}
	c := &connTx{conn: conn}
	if dl, ok := ctx.Deadline(); ok {
		c.timeout = strconv.FormatInt(max(time.Until(dl).Milliseconds(), 1), 10)
	}
	return &Tx{db: d, c: c, pending: &pgx.Batch{}, tokens: map[string]bool{}}, nil
}

// Tx is one transaction of a DB: a worker.Tx. Acks and nacks are queued and go to the server
// with the COMMIT.
type Tx struct {
	db      *DB
	c       *connTx
	pending *pgx.Batch // acks and nacks queued for the COMMIT
	// The groups this transaction holds from its claims and the tokens of those claims: a
	// claim in the transaction writes no lease (pgtransport's ClaimHeldGroupsTx), the row lock is the
	// hold, and the acks and nacks of its leases take the held forms.
	held   []string
	tokens map[string]bool
}

var _ worker.Tx = (*Tx)(nil)

// flush sends the queued acks and nacks before a statement that must follow them.
func (t *Tx) flush(ctx context.Context) error {
	if len(t.pending.QueuedQueries) == 0 {
		return nil
	}
	b := t.pending
	t.pending = &pgx.Batch{}
	if err := t.c.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("pgtx: %w", pgdb.Classify(err))
	}
	return nil
}

// Claim implements worker.Tx: a held claim of up to depth messages of each group
// (pgtransport's HeldClaim) and the load of what it claims (pgstore's LoadForEventsQuery), in
// one round trip, BEGIN included when it opens the transaction.
//
// The load cannot be a join inside the claim's statement: a statement reads with the snapshot
// taken when it starts, before the claim locks its groups, so it could miss an execution or a
// processed marker that a transaction which held the group committed in between, and step an
// event twice or drop a new execution's first. So the claim's statement leaves the refs it
// claimed in the transaction's settings (set_config, local to the transaction, which holds
// behind PgBouncer in transaction mode), and the load is the next statement of the same batch,
// whose snapshot is taken after the claim, as a separate load's was.
func (t *Tx) Claim(ctx context.Context, worker string, visibility time.Duration, minPriority, max, depth int) ([]transport.Lease, []stead.Loaded, error) {
	if err := t.flush(ctx); err != nil {
		return nil, nil, err
	}
	c, err := t.db.tr.HeldClaim(worker, visibility, minPriority, max, depth, t.held)
	if err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	b := &pgx.Batch{}
	b.Queue(claimAndKeep(c.SQL), c.Args...)
	b.Queue(t.db.loadClaimed)
	br := t.c.SendBatch(ctx, b)
	ls, loaded, err := t.claimed(br, c)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("pgtx: claim: %w", pgdb.Classify(cerr))
	}
	for i, l := range ls {
		if i == 0 || ls[i-1].Group != l.Group { // a group's leases are adjacent
			t.held = append(t.held, l.Group)
		}
		t.tokens[l.Token] = true
	}
	return ls, loaded, err
}

// claimed reads the claim's leases and the load's rows from br. When the claim took messages and
// the load failed, it returns the leases with the error: the messages are claimed, and only
// the transaction's end frees them.
func (t *Tx) claimed(br pgx.BatchResults, c *pgtransport.HeldClaim) ([]transport.Lease, []stead.Loaded, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, nil, fmt.Errorf("pgtx: claim: %w", pgdb.Classify(err))
	}
	ls, err := c.Leases(rows)
	if err != nil {
		return nil, nil, err
	}
	rows, err = br.Query()
	if err != nil {
		return ls, nil, fmt.Errorf("pgtx: load: %w", pgdb.Classify(err))
	}
	if len(ls) == 0 {
		// Nothing claimed: the settings may still hold an earlier claim of this transaction
		// (the claim's statement need not set them when it takes nothing), so what the load
		// read is nothing of this claim's.
		rows.Close()
		return ls, nil, nil
	}
	// The claim's statement kept its refs in the order of their seqs; the leases come grouped.
	bySeq := make([]int, len(ls))
	for i := range bySeq {
		bySeq[i] = i
	}
	slices.SortFunc(bySeq, func(x, y int) int { return cmp.Compare(ls[x].Seq, ls[y].Seq) })
	refs := make([]stead.EventRef, len(ls))
	for k, i := range bySeq {
		refs[k] = stead.EventRef{ExecutionID: ls[i].Group, EventID: ls[i].Event.ID}
	}
	got, err := t.db.store.ScanLoaded(rows, refs)
	if err != nil {
		return ls, nil, err
	}
	loaded := make([]stead.Loaded, len(ls))
	for k, i := range bySeq {
		loaded[i] = got[k]
	}
	return ls, loaded, nil
}

// The transaction-local settings through which a claim hands its refs to the load behind it:
// the executions, the events, and which ref is the first (oldest) of its execution, each an
// array in the order of the messages' seqs.
const (
	keptIDs    = "stead.claimed_ids"
	keptEvents = "stead.claimed_events"
	keptFirst  = "stead.claimed_first"
)

// claimAndKeep wraps a held claim's statement so that it also keeps its refs in the
// transaction's settings, once, and still returns the claim's columns. The WHERE on s makes
// every row wait for the settings; a claim that takes nothing may skip them.
func claimAndKeep(claim string) string {
	return `WITH c AS MATERIALIZED (` + claim + `),
	s AS MATERIALIZED (SELECT
		set_config('` + keptIDs + `', coalesce(array_agg(r_group ORDER BY r_seq), '{}')::text, true) AS ids,
		set_config('` + keptEvents + `', coalesce(array_agg(r_event::json->>'id' ORDER BY r_seq), '{}')::text, true) AS events,
		set_config('` + keptFirst + `', coalesce(array_agg(first ORDER BY r_seq), '{}')::text, true) AS first
		FROM (SELECT r_group, r_seq, r_event, r_seq = min(r_seq) OVER (PARTITION BY r_group) AS first FROM c) k)
	SELECT c.r_group, c.r_priority, c.r_seq, c.r_event, c.r_key FROM c CROSS JOIN s
	WHERE s.ids IS NOT NULL AND s.events IS NOT NULL AND s.first IS NOT NULL`
}

// kept reads a setting claimAndKeep wrote as an array of typ: NULL when no claim of the
// session wrote it (unset, or empty once a transaction that set it has ended).
func kept(name, typ string) string {
	return `nullif(current_setting('` + name + `', true), '')::` + typ + `[]`
}

// queueAck queues the ack of ls, which must be leases of this transaction's claims: held claims
// are settled without the token fence their row lock replaces, so a lease from anywhere else
// would be acked unfenced.
func (t *Tx) queueAck(b *pgx.Batch, ls []transport.Lease) error {
	for i := range ls {
		if !t.tokens[ls[i].Token] {
			return fmt.Errorf("%w: pgtx: the lease of %q was not claimed in this transaction", stead.ErrInvalid, ls[i].Group)
		}
	}
	return t.db.tr.QueueAckHeld(b, ls)
}

// CommitBatch implements worker.Tx.
func (t *Tx) CommitBatch(ctx context.Context, items []stead.CommitItem) ([]stead.CommitResult, error) {
	if err := t.flush(ctx); err != nil {
		return nil, err
	}
	return t.db.store.CommitBatchTx(ctx, t.c, items)
}

// Publish implements worker.Tx.
func (t *Tx) Publish(ctx context.Context, msgs []transport.Outgoing) error {
	if err := t.flush(ctx); err != nil {
		return err
	}
	return t.db.tr.PublishBatchTx(ctx, t.c, msgs)
}

// Ack implements worker.Tx: checked now, sent with the COMMIT (an ack that fails there fails the
// Commit, and nothing commits).
func (t *Tx) Ack(ctx context.Context, ls []transport.Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return t.queueAck(t.pending, ls)
}

// Nack implements worker.Tx: checked now, sent with the COMMIT, like Ack.
func (t *Tx) Nack(ctx context.Context, l *transport.Lease, delay time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if l != nil && !t.tokens[l.Token] {
		return fmt.Errorf("%w: pgtx: the lease of %q was not claimed in this transaction", stead.ErrInvalid, l.Group)
	}
	return t.db.tr.QueueNackHeld(t.pending, l, delay)
}

// Step sends the commit, its guard, the publish, the ack and COMMIT in one round trip (with
// whatever acks and nacks were queued before it). When the step wins, the transaction is
// committed on return and Commit has nothing left to do; when its compare-and-swap is lost, the
// guard has aborted the transaction, nothing of it commits, and the result's Err says so.
func (t *Tx) Step(ctx context.Context, item stead.CommitItem, emitted []transport.Outgoing, l *transport.Lease) (stead.CommitResult, error) {
	if l == nil {
		return stead.CommitResult{}, fmt.Errorf("%w: pgtx: step without a lease", stead.ErrInvalid)
	}
	b := &pgx.Batch{}
	var res stead.CommitResult
	if err := t.db.store.QueueCommitGuarded(b, item.Execution, item.Bundle, &res); err != nil {
		return stead.CommitResult{}, err
	}
	if err := t.db.tr.QueuePublish(b, emitted); err != nil {
		return stead.CommitResult{}, err
	}
	if err := t.queueAck(b, []transport.Lease{*l}); err != nil {
		return stead.CommitResult{}, err
	}
	b.QueuedQueries = append(t.pending.QueuedQueries, b.QueuedQueries...)
	t.pending = &pgx.Batch{}
	b.Queue("COMMIT")
	err := t.c.SendBatch(ctx, b).Close()
	switch {
	case err == nil:
		t.c.ended()
		return res, nil
	case res.Err != nil && errors.Is(pgdb.Classify(err), stead.ErrConflict):
		// The guard aborted the transaction; Rollback ends it.
		return res, nil
	default:
		return stead.CommitResult{}, fmt.Errorf("pgtx: step: %w", pgdb.Classify(err))
	}
}

// Commit implements worker.Tx: the queued acks and nacks and COMMIT, in one round trip. After a
// Step that won it does nothing.
func (t *Tx) Commit(ctx context.Context) error {
	if t.c.finished() {
		return nil
	}
	if !t.c.begun && len(t.pending.QueuedQueries) == 0 {
		// Nothing was sent: there is nothing to commit.
		t.c.ended()
		return nil
	}
	b := t.pending
	t.pending = &pgx.Batch{}
	b.Queue("COMMIT")
	if err := t.c.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("pgtx: commit: %w", pgdb.Classify(err))
	}
	t.c.ended()
	return nil
}

// Rollback implements worker.Tx: it ends the transaction without committing it and gives the
// connection back; after Commit it does nothing.
func (t *Tx) Rollback(ctx context.Context) error {
	t.pending = &pgx.Batch{}
	return pgdb.Classify(t.c.Rollback(ctx))
}

// Create implements worker.Creator: one transaction commits the new executions (their start
// events, the items' emits, are not written to the outbox) and publishes the start events of
// those it created, so that a created execution is claimable the moment it exists, for one
// commit instead of three (the commit, the publish, the outbox's ack). An id already taken is
// its result's ErrConflict, as CommitBatch reports it, and publishes nothing.
func (d *DB) Create(ctx context.Context, items []stead.CommitItem, flows []transport.Flow) ([]stead.CommitResult, error) {
	if len(flows) != len(items) {
		return nil, fmt.Errorf("pgtx: create: %d flows for %d items: %w", len(flows), len(items), stead.ErrInvalid)
	}
	bare := make([]stead.CommitItem, len(items))
	for i, it := range items {
		bare[i] = stead.CommitItem{Execution: it.Execution, Bundle: it.Bundle}
		bare[i].Bundle.Emits = nil
	}
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgtx: create: %w", pgdb.Classify(err))
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	results, err := d.store.CommitBatchTx(ctx, tx, bare)
	if err != nil {
		return nil, err
	}
	var out []transport.Outgoing
	for i, r := range results {
		if r.Err != nil {
			continue
		}
		for _, e := range items[i].Bundle.Emits {
			o := transport.Outgoing{Group: e.Target, Event: e.Event, Priority: items[i].Execution.Priority}
			if e.Target == items[i].Execution.ID {
				o.Flow = flows[i]
			}
			out = append(out, o)
		}
	}
	if len(out) > 0 {
		if err := d.tr.PublishBatchTx(ctx, tx, out); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("pgtx: create: %w", pgdb.Classify(err))
	}
	return results, nil
}

// DBSystemName names the database in the worker's spans (the semantic conventions'
// db.system.name).
func (d *DB) DBSystemName() string { return "postgresql" }

// Send implements worker.Sender: one statement reads the execution's priority from the store's
// table and publishes ev at it, or publishes nothing when the execution does not exist (an error
// wrapping stead.ErrNotFound). The priority is read from the execution's stored document: the
// store keeps no column of its own for it, and an execution's priority never changes.
func (d *DB) Send(ctx context.Context, id string, ev stead.Event) error {
	ok, err := d.tr.PublishPriced(ctx, id, ev, d.store.PriorityQuery(), id)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("pgtx: send to %q: %w", id, stead.ErrNotFound)
	}
	return nil
}
