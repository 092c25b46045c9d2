package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/pgdb"
)

// Commit writes exe and every side effect of its step in one transaction (see stead.Writer).
//
// A state-only bundle (stead.Bundle.StateOnly) is one round-trip to the stead_commit_state
// function. Any other bundle is one round-trip too, to the stead_commit_bundle function, which
// does the CAS and then only the side effects the bundle has, and writes nothing if the CAS is
// lost. A lost CAS costs one more round-trip, to report the version found.
func (s *Store) Commit(ctx context.Context, exe *stead.Execution, b stead.Bundle) ([]int64, error) {
	if exe == nil {
		return nil, check.Invalidf("pgstore: commit: execution is nil")
	}
	row, err := encodeRow(exe, &b)
	if err != nil {
		return nil, fmt.Errorf("pgstore: commit: %w", err)
	}
	var won bool
	var seqs []int64
	err = s.with(ctx, "commit", func(q querier) error {
		var err error
		if won, seqs, err = s.commitOne(ctx, q, &row); err != nil {
			return err
		}
		if !won {
			// The commit's implicit transaction is over: a failed lookup only costs the detail.
			_ = s.conflicts(ctx, q, []*encoded{&row})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if row.conflict != nil {
		return nil, row.conflict
	}
	exe.Version = row.old + 1
	return seqs, nil
}

// commitOne sends one execution through stead_commit_state (state only) or stead_commit_bundle,
// and reports whether it won its CAS and, if so, the seqs of its emits in order.
func (s *Store) commitOne(ctx context.Context, q querier, row *encoded) (bool, []int64, error) {
	sql, args := s.commitOneSQL(row)
	return scanCommitOne(row, q.QueryRow(ctx, sql, args...))
}

// commitOneSQL is the statement and the arguments of commitOne.
func (s *Store) commitOneSQL(row *encoded) (string, []any) {
	b := row.bundle
	if b.StateOnly() {
		return s.sql.CommitState, []any{row.id, row.definitionID, row.status,
			row.outcome, row.activePath, row.parentID, row.createdAt, row.updatedAt,
			row.finishedAt, row.data, row.old, b.ProcessedEventID}
	}
	var t timerArgs
	t.add(0, b.Timers)
	spawnChildren, spawnRootPaths, spawnContexts := spawnArgs(b.Spawns)
	targets := make([]string, len(b.Emits))
	for i := range b.Emits {
		targets[i] = b.Emits[i].Target
	}
	return s.sql.CommitBundle, []any{row.id, row.definitionID, row.status,
		row.outcome, row.activePath, row.parentID, row.createdAt, row.updatedAt,
		row.finishedAt, row.data, row.old, b.ProcessedEventID, targets, row.events,
		spawnChildren, spawnRootPaths, spawnContexts, t.armPath, t.armFireAt, t.disarmPath,
		row.trace, int64(s.cfg.traceCap)}
}

// scanCommitOne reads the answer of commitOneSQL.
func scanCommitOne(row *encoded, r pgx.Row) (bool, []int64, error) {
	if row.bundle.StateOnly() {
		var won bool
		err := r.Scan(&won)
		return won, nil, err
	}
	var seqs pgtype.FlatArray[int64] // NULL when the CAS was lost
	if err := r.Scan(&seqs); err != nil || seqs == nil {
		return false, nil, err
	}
	slices.Sort(seqs)
	if len(seqs) == 0 {
		return true, nil, nil
	}
	return true, seqs, nil
}

// QueueCommit queues the commit of exe and its step's bundle on b, for a caller that sends
// several statements of one transaction in one round trip: typically a runtime that claimed a
// message in that transaction and queues the commit and the message's acknowledgement together
// (pgtransport's queue methods), then commits the transaction if the commit won.
//
// The commit is validated now; an invalid one is an error wrapping stead.ErrInvalid and queues
// nothing. res is filled in when the batch's results are read (pgx.BatchResults.Close): Seqs as
// Commit returns them and a bumped exe.Version on success, or Err = *stead.ConflictError on a
// lost CAS (with Found -1: the version found is not looked up inside a batch). A database error
// comes from Close. If the caller's transaction then rolls back, the version is ahead of the
// database: decrement it (see UndoVersions).
func (s *Store) QueueCommit(b *pgx.Batch, exe *stead.Execution, bundle stead.Bundle, res *stead.CommitResult) error {
	if b == nil || exe == nil || res == nil {
		return check.Invalidf("pgstore: queue commit: batch, execution and result must not be nil")
	}
	if s.closed.Load() {
		return fmt.Errorf("pgstore: queue commit: %w", stead.ErrClosed)
	}
	row, err := encodeRow(exe, &bundle)
	if err != nil {
		return fmt.Errorf("pgstore: queue commit: %w", err)
	}
	sql, args := s.commitOneSQL(&row)
	b.Queue(sql, args...).QueryRow(func(r pgx.Row) error {
		won, seqs, err := scanCommitOne(&row, r)
		if err != nil {
			return fmt.Errorf("pgstore: commit: %w", pgdb.Classify(err))
		}
		*res = stead.CommitResult{}
		if !won {
			res.Err = &stead.ConflictError{ID: row.id, Expected: row.old, Found: -1}
			return nil
		}
		res.Seqs = seqs
		exe.Version = row.old + 1
		return nil
	})
	return nil
}

// CommitBatch applies many commits in one transaction and one round-trip (see stead.Writer).
// Items that lose their CAS cost one more round-trip, together, to report the versions found.
// Items are sent sorted by id so that concurrent batches over the same executions usually lock
// them in the same order; a deadlock PostgreSQL still detects fails the whole batch with
// stead.ErrConflict and writes nothing.
func (s *Store) CommitBatch(ctx context.Context, items []stead.CommitItem) ([]stead.CommitResult, error) {
	return s.commitBatch(ctx, "commit batch", nil, items)
}

// CommitBatchTx is CommitBatch on the caller's transaction, for a runtime that claims work,
// commits the steps it produced and acknowledges the work in one PostgreSQL transaction. The
// caller commits or rolls back tx; nothing is visible to others before it commits.
//
// Like CommitBatch, it bumps the Version of every execution whose result has no error. If the
// caller then rolls back (or its COMMIT fails), those versions are ahead of the database: call
// UndoVersions(items, results) to put them back. When CommitBatchTx returns an error, no version
// was bumped; if the error came from the database, PostgreSQL has aborted tx and it must be
// rolled back.
func (s *Store) CommitBatchTx(ctx context.Context, tx pgx.Tx, items []stead.CommitItem) ([]stead.CommitResult, error) {
	if tx == nil {
		return nil, check.Invalidf("pgstore: commit batch: transaction is nil")
	}
	return s.commitBatch(ctx, "commit batch", tx, items)
}

// UndoVersions restores the versions that a successful CommitBatchTx bumped, for a caller whose
// transaction then rolled back.
func UndoVersions(items []stead.CommitItem, results []stead.CommitResult) {
	for i := range min(len(items), len(results)) {
		if results[i].Err == nil && items[i].Execution != nil {
			items[i].Execution.Version--
		}
	}
}

// encoded is one execution ready to be sent: the blob and the listing columns.
type encoded struct {
	item                          int // index in the caller's items
	exe                           *stead.Execution
	id, definitionID, status      string
	outcome, activePath, parentID string
	createdAt, updatedAt          pgtype.Timestamptz
	finishedAt                    pgtype.Timestamptz
	data                          string
	old                           int64
	conflict                      error // set when the CAS was lost

	bundle *stead.Bundle
	events []string    // the emitted events, encoded
	trace  pgtype.Text // the trace step, encoded; NULL for none
}

// encodeBundle validates b and encodes its JSON parts into r.
func (r *encoded) encodeBundle(b *stead.Bundle) error {
	if err := b.Validate(); err != nil {
		return err
	}
	r.bundle = b
	r.events = make([]string, len(b.Emits))
	for i := range b.Emits {
		enc, err := json.Marshal(&b.Emits[i].Event)
		if err != nil {
			return check.Invalidf("emit %d does not encode: %v", i, err)
		}
		r.events[i] = string(enc)
	}
	if b.Trace != nil {
		enc, err := encodeStep(*b.Trace)
		if err != nil {
			return err
		}
		r.trace = pgtype.Text{String: enc, Valid: true}
	}
	return nil
}

// encodeStep encodes a trace step without its index, which the store assigns and keeps in a
// column, and with its time as PostgreSQL keeps it (UTC, microseconds).
func encodeStep(t stead.TraceStep) (string, error) {
	t.Index = 0
	t.At = t.At.UTC().Truncate(micros)
	b, err := json.Marshal(&t)
	if err != nil {
		return "", check.Invalidf("trace step does not encode: %v", err)
	}
	return string(b), nil
}

// encodeRow validates exe and the bundle of its step and encodes them, exe at its next version,
// without touching exe. Times are truncated to microseconds (what PostgreSQL keeps) and kept in
// UTC in the blob too, so Load and List report the same instants.
func encodeRow(exe *stead.Execution, b *stead.Bundle) (encoded, error) {
	c := *exe
	c.CreatedAt = c.CreatedAt.UTC().Truncate(micros)
	c.UpdatedAt = c.UpdatedAt.UTC().Truncate(micros)
	c.FinishedAt = c.FinishedAt.UTC().Truncate(micros)
	data, err := stead.EncodeNextVersion(&c)
	if err != nil {
		return encoded{}, err
	}
	r := encoded{
		exe: exe, id: c.ID, definitionID: c.DefinitionID, status: string(c.Status),
		outcome: c.Outcome, activePath: c.ActivePath, parentID: c.ParentID,
		createdAt: timestamptz(c.CreatedAt), updatedAt: timestamptz(c.UpdatedAt),
		finishedAt: timestamptz(c.FinishedAt), data: string(data), old: exe.Version,
	}
	if err := r.encodeBundle(b); err != nil {
		return encoded{}, err
	}
	return r, nil
}

// batchArgs are the array parameters of the CommitBatch statement (internal/pgstoresql).
type batchArgs struct {
	ids, definitionIDs, statuses, outcomes, activePaths, parentIDs []string
	createdAt, updatedAt, finishedAt                               []pgtype.Timestamptz
	data                                                           []string
	old                                                            []int64
	processed                                                      []string
	trace                                                          []pgtype.Text

	emitItem              []int32
	emitTarget, emitEvent []string

	spawnItem                 []int32
	spawnChild, spawnRootPath []string
	spawnContext              []pgtype.Text

	timers timerArgs
}

// timerArgs are timer ops reduced to their net effect: timer ops on one path override each other
// in order, so only the last op per path matters, and sending just that one also keeps an upsert
// from touching a row twice.
type timerArgs struct {
	armItem    []int32
	armPath    []string
	armFireAt  []pgtype.Timestamptz
	disarmItem []int32
	disarmPath []string
}

func (t *timerArgs) add(pos int32, ops []stead.TimerOp) {
	last := make(map[string]int, len(ops))
	for i, op := range ops {
		last[op.Path] = i
	}
	for i, op := range ops {
		if last[op.Path] != i {
			continue
		}
		if op.Action == stead.TimerSchedule {
			t.armItem = append(t.armItem, pos)
			t.armPath = append(t.armPath, op.Path)
			t.armFireAt = append(t.armFireAt, timestamptz(op.FireAt))
		} else {
			t.disarmItem = append(t.disarmItem, pos)
			t.disarmPath = append(t.disarmPath, op.Path)
		}
	}
}

// spawnArgs returns the spawns as parallel arrays; a missing context is NULL.
func spawnArgs(spawns []stead.Spawn) (children, rootPaths []string, contexts []pgtype.Text) {
	for _, sp := range spawns {
		children = append(children, sp.ChildID)
		rootPaths = append(rootPaths, sp.RootPath)
		contexts = append(contexts, pgtype.Text{String: string(sp.Context), Valid: len(sp.Context) > 0})
	}
	return children, rootPaths, contexts
}

// add appends one encoded item; its 1-based position in the arrays names it in the side-effect
// arrays.
func (a *batchArgs) add(r *encoded) {
	b := r.bundle
	pos := int32(len(a.ids) + 1)
	a.ids = append(a.ids, r.id)
	a.definitionIDs = append(a.definitionIDs, r.definitionID)
	a.statuses = append(a.statuses, r.status)
	a.outcomes = append(a.outcomes, r.outcome)
	a.activePaths = append(a.activePaths, r.activePath)
	a.parentIDs = append(a.parentIDs, r.parentID)
	a.createdAt = append(a.createdAt, r.createdAt)
	a.updatedAt = append(a.updatedAt, r.updatedAt)
	a.finishedAt = append(a.finishedAt, r.finishedAt)
	a.data = append(a.data, r.data)
	a.old = append(a.old, r.old)
	a.processed = append(a.processed, b.ProcessedEventID)
	a.trace = append(a.trace, r.trace)
	for i := range b.Emits {
		a.emitItem = append(a.emitItem, pos)
		a.emitTarget = append(a.emitTarget, b.Emits[i].Target)
		a.emitEvent = append(a.emitEvent, r.events[i])
	}
	for _, sp := range b.Spawns {
		a.spawnItem = append(a.spawnItem, pos)
		a.spawnChild = append(a.spawnChild, sp.ChildID)
		a.spawnRootPath = append(a.spawnRootPath, sp.RootPath)
		a.spawnContext = append(a.spawnContext, pgtype.Text{String: string(sp.Context), Valid: len(sp.Context) > 0})
	}
	a.timers.add(pos, b.Timers)
}

func (a *batchArgs) values(traceCap int) []any {
	return []any{a.ids, a.definitionIDs, a.statuses, a.outcomes, a.activePaths, a.parentIDs,
		a.createdAt, a.updatedAt, a.finishedAt, a.data, a.old, a.processed, a.trace,
		a.emitItem, a.emitTarget, a.emitEvent,
		a.spawnItem, a.spawnChild, a.spawnRootPath, a.spawnContext,
		a.timers.armItem, a.timers.armPath, a.timers.armFireAt,
		a.timers.disarmItem, a.timers.disarmPath,
		int64(traceCap)}
}

// commitBatch validates the items, sends the valid ones in one statement on tx (or on a pooled
// connection when tx is nil), and fills in the per-item results.
func (s *Store) commitBatch(ctx context.Context, op string, tx pgx.Tx, items []stead.CommitItem) ([]stead.CommitResult, error) {
	if len(items) > stead.MaxBatch {
		return nil, check.Invalidf("pgstore: %s: %d items, more than %d", op, len(items), stead.MaxBatch)
	}
	results := make([]stead.CommitResult, len(items))
	if len(items) == 0 {
		return results, nil
	}
	rows := make([]*encoded, 0, len(items))
	seen := make(map[string]bool, len(items))
	for i, it := range items {
		if it.Execution == nil {
			results[i].Err = check.Invalidf("pgstore: %s: item %d: execution is nil", op, i)
			continue
		}
		// The first item of an id is the one that counts, valid or not.
		if seen[it.Execution.ID] {
			results[i].Err = check.Invalidf("pgstore: %s: execution %q appears twice in one batch", op, it.Execution.ID)
			continue
		}
		seen[it.Execution.ID] = true
		r, err := encodeRow(it.Execution, &items[i].Bundle)
		if err != nil {
			results[i].Err = fmt.Errorf("pgstore: %s: %w", op, err)
			continue
		}
		r.item = i
		rows = append(rows, &r)
	}
	if len(rows) == 0 {
		return results, nil
	}
	// Sorting by id makes every batch lock its rows in the same order.
	slices.SortFunc(rows, func(a, b *encoded) int { return strings.Compare(a.id, b.id) })
	var args batchArgs
	for _, r := range rows {
		args.add(r)
	}
	won := make([]bool, len(rows))
	seqs := make([][]int64, len(rows))
	run := func(q querier) error {
		if err := s.sendBatch(ctx, q, rows, &args, won, seqs); err != nil {
			return err
		}
		var lost []*encoded
		for i, r := range rows {
			if !won[i] {
				lost = append(lost, r)
			}
		}
		if len(lost) == 0 {
			return nil
		}
		err := s.conflicts(ctx, q, lost)
		if tx != nil {
			// A failed lookup aborted the caller's transaction: nothing of it will land.
			return err
		}
		return nil // the batch's implicit transaction is over: a failed lookup only costs the detail
	}
	var err error
	if tx != nil {
		if s.closed.Load() {
			return nil, fmt.Errorf("pgstore: %s: %w", op, stead.ErrClosed)
		}
		if err = run(tx); err != nil {
			err = fmt.Errorf("pgstore: %s: %w", op, pgdb.Classify(err))
		}
	} else {
		err = s.with(ctx, op, run)
	}
	if err != nil {
		return nil, err
	}
	for i, r := range rows {
		if !won[i] {
			results[r.item].Err = r.conflict
			continue
		}
		slices.Sort(seqs[i])
		results[r.item].Seqs = seqs[i]
		r.exe.Version = r.old + 1
	}
	return results, nil
}

// sendBatch runs the batch and marks the winners and their seqs. A batch of one goes through the
// single-commit functions, which cost less server time for one item than the set-based
// statement.
func (s *Store) sendBatch(ctx context.Context, q querier, rows []*encoded, args *batchArgs, won []bool, seqs [][]int64) error {
	if len(rows) == 1 {
		var err error
		won[0], seqs[0], err = s.commitOne(ctx, q, rows[0])
		return err
	}
	res, err := q.Query(ctx, s.sql.CommitBatch, args.values(s.cfg.traceCap)...)
	if err != nil {
		return err
	}
	var pos int64
	var seq pgtype.Int8
	_, err = pgx.ForEachRow(res, []any{&pos, &seq}, func() error {
		if pos < 1 || int(pos) > len(rows) {
			return fmt.Errorf("commit batch returned position %d of %d", pos, len(rows))
		}
		if seq.Valid {
			seqs[pos-1] = append(seqs[pos-1], seq.Int64)
		} else {
			won[pos-1] = true
		}
		return nil
	})
	return err
}

// conflicts sets the ConflictError of every row that lost its CAS, with the version stored now
// (-1 for no row, or when the lookup failed, whose error it returns).
func (s *Store) conflicts(ctx context.Context, q querier, lost []*encoded) error {
	ids := make([]string, len(lost))
	for i, r := range lost {
		ids[i] = r.id
	}
	found := make(map[string]int64, len(lost))
	rows, err := q.Query(ctx, s.sql.Versions, ids)
	if err == nil {
		var id string
		var v int64
		_, err = pgx.ForEachRow(rows, []any{&id, &v}, func() error { found[id] = v; return nil })
	}
	for _, r := range lost {
		v, ok := found[r.id]
		if !ok || err != nil {
			v = -1
		}
		r.conflict = &stead.ConflictError{ID: r.id, Expected: r.old, Found: v}
	}
	return err
}

// timestamptz is t as a nullable parameter: the zero time is NULL.
func timestamptz(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: t, Valid: !t.IsZero()}
}
