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

// Commit implements stead.Backend in one round-trip: a state-only bundle calls the
// stead_commit_state function, any other stead_commit_bundle, which does the compare-and-swap
// and then only the side effects the bundle has, and writes nothing if the CAS is lost. A bundle
// with AlsoProcessed sends sqlCommitAlso behind the call, in the same round trip and implicit
// transaction (sendAlso). A lost CAS costs one more round-trip, to report the version found.
func (b *Backend) Commit(ctx context.Context, w *stead.Write) ([]int64, error) {
	var res []stead.WriteResult
	err := b.with(ctx, "commit", func(q querier) error {
		var err error
		res, err = b.commitOne(ctx, q, w, false)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res[0].Seqs, res[0].Err
}

// commitStatement is the statement and the arguments of one commit.
func (b *Backend) commitStatement(w *stead.Write) (string, []any, error) {
	e, bd := w.Execution, &w.Bundle
	args := []any{e.ID, e.DefinitionID, string(e.Status), e.Outcome, e.ActivePath, e.ParentID,
		timestamptz(e.CreatedAt), timestamptz(e.UpdatedAt), timestamptz(e.FinishedAt),
		string(w.Record), w.Expected, bd.ProcessedEventID}
	if bd.StateOnly() {
		return b.st.CommitState, args, nil
	}
	var se sideEffects
	if err := se.add(bd); err != nil {
		return "", nil, err
	}
	trace, err := encodeTrace(bd.Trace)
	if err != nil {
		return "", nil, err
	}
	return b.st.CommitBundle, append(args, se.emitTargets, se.emitEvents,
		se.spawnChildren, se.spawnRootPaths, se.spawnContexts, se.spawnTraces,
		se.armPaths, se.armFireAt, se.disarmPaths, trace, b.traceCap), nil
}

// scanCommit reads the answer of commitStatement: whether the CAS was won and, if so, the seqs
// of the emits in order (nil for none).
func scanCommit(w *stead.Write, r pgx.Row) (bool, []int64, error) {
	if w.Bundle.StateOnly() {
		var won bool
		err := r.Scan(&won)
		return won, nil, err
	}
	var seqs pgtype.FlatArray[int64] // NULL when the CAS was lost
	if err := r.Scan(&seqs); err != nil || seqs == nil {
		return false, nil, err
	}
	if len(seqs) == 0 {
		return true, nil, nil
	}
	return true, seqs, nil
}

// queueCommit queues the commit of exe and its step's bundle on batch and returns the write it
// queued. It checks exe and bundle as Store.Commit does, and neither is changed: invalid input is
// an error wrapping stead.ErrInvalid and queues nothing. res is filled in when the batch's results
// are read (pgx.BatchResults.Close): the new version and the emits' seqs, or Err, a
// *stead.ConflictError with Found -1 (the version found is not looked up inside a batch), when
// the compare-and-swap was lost. A database error comes from Close.
//
// A bundle with AlsoProcessed queues a second statement right behind the commit, which records
// those events if and only if the commit won (sqlCommitAlso). Queued in a savepoint of the
// caller's, a winning commit cannot be told from a lost one there: Close then returns an error,
// whatever res says, and the caller must roll back.
func (b *Backend) queueCommit(batch *pgx.Batch, exe *stead.Execution, bundle stead.Bundle, res *stead.CommitResult) (*stead.Write, error) {
	const op = "queue commit"
	if batch == nil || res == nil {
		return nil, check.Invalidf("pgstore: %s: batch and result must not be nil", op)
	}
	w, err := stead.PrepareWrite(exe, bundle)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %s: %w", op, err)
	}
	if err := b.enter(op); err != nil {
		return nil, err
	}
	sql, args, err := b.commitStatement(w)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %s: %w", op, err)
	}
	var won bool
	batch.Queue(sql, args...).QueryRow(func(r pgx.Row) error {
		var seqs []int64
		var err error
		won, seqs, err = scanCommit(w, r)
		if err != nil {
			return fmt.Errorf("pgstore: commit %q: %w", w.Execution.ID, pgdb.Classify(err))
		}
		if !won {
			*res = stead.CommitResult{Err: &stead.ConflictError{ID: w.Execution.ID, Expected: w.Expected, Found: -1}}
			return nil
		}
		c, err := w.Committed(seqs)
		*res = stead.CommitResult{Committed: c, Err: err}
		return nil
	})
	if w.ReplaceAttributes {
		defer b.queueAttrs(batch, w, &won)
	}
	if len(w.Bundle.AlsoProcessed) == 0 {
		return w, nil
	}
	// The further processed events go right behind the commit. Its answer is read first, so
	// that what sqlCommitAlso found can be checked against it; a win it could not see (the
	// caller is in a savepoint) cannot be repaired inside the batch, so it fails the batch.
	var also alsoArgs
	also.add(0, w)
	found := make([]bool, 1)
	also.queue(batch, b.st.CommitAlso, found, func() error {
		missed, err := also.check(found, func(int) bool { return won })
		if err == nil && len(missed) > 0 {
			err = fmt.Errorf("the commit won in a savepoint of the caller's, where its further processed events cannot be recorded in the same round trip: roll back")
		}
		if err != nil {
			return fmt.Errorf("pgstore: commit %q: %w", w.Execution.ID, err)
		}
		return nil
	})
	return w, nil
}

// QueueCommitGuarded queues the commit of exe and its step's bundle on batch (with the statement
// that records AlsoProcessed, if the bundle has it; see queueCommit for the checks, res and a
// savepoint), followed by a guard that aborts the transaction when the compare-and-swap is lost.
// It exists for worker/pgtx, which sends a step's commit, its emits, the acknowledgement of its
// messages and COMMIT in one round trip: the guard raises serialization_failure, so the
// statements queued after it are skipped and the transaction can only roll back (a COMMIT queued
// behind it rolls back). On a lost compare-and-swap res.Err is the *stead.ConflictError, and the
// batch's Close returns the guard's error (wrapping stead.ErrConflict).
func (b *Backend) QueueCommitGuarded(batch *pgx.Batch, exe *stead.Execution, bundle stead.Bundle, res *stead.CommitResult) error {
	w, err := b.queueCommit(batch, exe, bundle, res)
	if err != nil {
		return err
	}
	batch.Queue(b.st.RequireCommitted, w.Execution.ID, w.Execution.Version)
	return nil
}

// CommitBatch implements stead.Backend in one round-trip, a call of stead_commit_batch (with
// sqlCommitAlso behind it when a write carries AlsoProcessed: sendAlso); the writes that lose
// their CAS cost one more round-trip, together, to report the versions found. A batch of one
// takes the single-commit path.
func (b *Backend) CommitBatch(ctx context.Context, ws []*stead.Write) ([]stead.WriteResult, error) {
	var out []stead.WriteResult
	err := b.with(ctx, "commit batch", func(q querier) error {
		var err error
		out, err = b.commitBatch(ctx, q, ws, false)
		return err
	})
	return out, err
}

// CommitBatchTx is the Store's CommitBatch on the caller's transaction, for worker/pgtx, which
// claims work, commits the steps it produced and acknowledges the work in one PostgreSQL
// transaction. The items are checked as the Store checks them and are not changed: each
// result carries its item's new version, or its own error. The caller commits or rolls back tx,
// and nothing is visible to others before it commits; an error from the database (a deadlock,
// say, which wraps stead.ErrConflict) has aborted tx. On any error, roll back: an item with
// AlsoProcessed that lost its compare-and-swap against a version tx itself wrote earlier is an
// error that leaves tx open, with its events recorded.
func (b *Backend) CommitBatchTx(ctx context.Context, tx pgx.Tx, items []stead.CommitItem) ([]stead.CommitResult, error) {
	const op = "commit batch"
	if tx == nil {
		return nil, check.Invalidf("pgstore: %s: transaction is nil", op)
	}
	ws, results, err := stead.PrepareBatch(items)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %s: %w", op, err)
	}
	if err := b.enter(op); err != nil {
		return nil, err
	}
	if ws.Len() == 0 {
		return results, nil
	}
	var out []stead.WriteResult
	err = onTx(op, tx, func(q querier) error {
		var err error
		out, err = b.commitBatch(ctx, q, ws.W, true)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ws.Results(results, out)
}

// commitBatch sends ws in one statement and returns the results aligned with ws. Writes are
// sent sorted by id, so that concurrent batches over the same executions lock them in the same
// order. In a caller's transaction (inTx), a failed conflict lookup fails the batch: it aborted
// the transaction.
func (b *Backend) commitBatch(ctx context.Context, q querier, ws []*stead.Write, inTx bool) ([]stead.WriteResult, error) {
	if len(ws) == 1 {
		// One item costs the server less through the single-commit functions.
		return b.commitOne(ctx, q, ws[0], inTx)
	}
	order := make([]int, len(ws)) // sorted position -> index in ws
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return strings.Compare(ws[x].Execution.ID, ws[y].Execution.ID) })
	var args batchArgs
	var also alsoArgs
	var attrs attrArgs
	for i, k := range order {
		if err := args.add(int32(i+1), ws[k]); err != nil {
			return nil, err
		}
		also.add(i, ws[k])
		attrs.add(i, ws[k])
	}
	won := make([]bool, len(ws)) // by sorted position
	seqs := make([][]int64, len(ws))
	read := func(rows pgx.Rows) error {
		var pos int64
		var seq pgtype.Int8
		_, err := pgx.ForEachRow(rows, []any{&pos, &seq}, func() error {
			if pos < 1 || int(pos) > len(ws) {
				return fmt.Errorf("commit batch returned position %d of %d", pos, len(ws))
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
	if also.empty() && attrs.empty() {
		rows, err := q.Query(ctx, b.st.CommitBatch, args.values(b.traceCap)...)
		if err != nil {
			return nil, err
		}
		if err := read(rows); err != nil {
			return nil, err
		}
	} else {
		batch := &pgx.Batch{}
		batch.Queue(b.st.CommitBatch, args.values(b.traceCap)...).Query(read)
		if err := b.sendAlso(ctx, q, batch, &also, &attrs, func(i int) bool { return won[i] }); err != nil {
			return nil, err
		}
	}
	out := make([]stead.WriteResult, len(ws))
	var lost []*stead.Write
	var lostAt []int
	for i, k := range order {
		if !won[i] {
			lost, lostAt = append(lost, ws[k]), append(lostAt, k)
			continue
		}
		slices.Sort(seqs[i]) // the rows come in no particular order
		out[k].Seqs = seqs[i]
	}
	if len(lost) > 0 {
		errs, err := b.conflicts(ctx, q, lost)
		if err != nil && inTx {
			return nil, err
		}
		for j, k := range lostAt {
			out[k].Err = errs[j]
		}
	}
	return out, nil
}

// commitOne commits one write and looks up the version found if it lost. Outside a caller's
// transaction the commit's own is over by then, so a failed lookup only costs the detail.
func (b *Backend) commitOne(ctx context.Context, q querier, w *stead.Write, inTx bool) ([]stead.WriteResult, error) {
	sql, args, err := b.commitStatement(w)
	if err != nil {
		return nil, err
	}
	var won bool
	var seqs []int64
	if len(w.Bundle.AlsoProcessed) == 0 && !w.ReplaceAttributes {
		won, seqs, err = scanCommit(w, q.QueryRow(ctx, sql, args...))
	} else {
		batch := &pgx.Batch{}
		batch.Queue(sql, args...).QueryRow(func(r pgx.Row) error {
			var err error
			won, seqs, err = scanCommit(w, r)
			return err
		})
		var also alsoArgs
		var attrs attrArgs
		also.add(0, w)
		attrs.add(0, w)
		err = b.sendAlso(ctx, q, batch, &also, &attrs, func(int) bool { return won })
	}
	if err != nil {
		return nil, err
	}
	if won {
		return []stead.WriteResult{{Seqs: seqs}}, nil
	}
	errs, err := b.conflicts(ctx, q, []*stead.Write{w})
	if err != nil && inTx {
		return nil, err
	}
	return []stead.WriteResult{{Err: errs[0]}}, nil
}

// conflicts returns the ConflictError of every write that lost its CAS, with the version
// stored now (-1 for no row, or when the lookup failed, whose error it returns too).
func (b *Backend) conflicts(ctx context.Context, q querier, lost []*stead.Write) ([]error, error) {
	ids := make([]string, len(lost))
	for i, w := range lost {
		ids[i] = w.Execution.ID
	}
	found := make(map[string]int64, len(lost))
	rows, err := q.Query(ctx, b.st.Conflicts, ids)
	if err == nil {
		var id string
		var v int64
		_, err = pgx.ForEachRow(rows, []any{&id, &v}, func() error { found[id] = v; return nil })
	}
	errs := make([]error, len(lost))
	for i, w := range lost {
		v, ok := found[w.Execution.ID]
		if !ok || err != nil {
			v = -1
		}
		errs[i] = &stead.ConflictError{ID: w.Execution.ID, Expected: w.Expected, Found: v}
	}
	return errs, err
}

// sendAlso sends batch, which holds a commit, with sqlCommitAlso for the writes of also behind
// it: one round trip and one transaction, the caller's or, outside one, the implicit transaction
// PostgreSQL runs a pgx batch in (one Sync for all its statements), so that a commit and its
// further processed events land together or not at all. won reports, once the commit's answer is
// read, whether the write at an index of also.add won. A win sqlCommitAlso could not see, which
// only a savepoint of the caller's can cause, costs one more statement that records its events.
//
// The writes of attrs (stead.Write.ReplaceAttributes) get sqlCommitAttrs behind that, in the
// same way: a win it could not see costs one more statement, told that the writes won.
func (b *Backend) sendAlso(ctx context.Context, q querier, batch *pgx.Batch, also *alsoArgs, attrs *attrArgs, won func(int) bool) error {
	found := make([]bool, len(also.ids))
	if !also.empty() {
		also.queue(batch, b.st.CommitAlso, found, nil)
	}
	attrFound := make([]bool, len(attrs.ids))
	if !attrs.empty() {
		attrs.queue(batch, b.st.CommitAttrs, attrFound, nil)
	}
	if err := q.SendBatch(ctx, batch).Close(); err != nil {
		return err
	}
	if err := b.alsoMissed(ctx, q, also, found, won); err != nil {
		return err
	}
	missed, err := attrs.check(attrFound, won)
	if err != nil || len(missed) == 0 {
		return err
	}
	var again attrArgs
	again.known = true
	for _, j := range missed {
		again.addFrom(attrs, j)
	}
	_, err = q.Exec(ctx, b.st.CommitAttrs, again.values()...)
	return err
}

// alsoMissed records the further events of the writes that won where sqlCommitAlso could not
// see it.
func (b *Backend) alsoMissed(ctx context.Context, q querier, also *alsoArgs, found []bool, won func(int) bool) error {
	missed, err := also.check(found, won)
	if err != nil || len(missed) == 0 {
		return err
	}
	var ids, events, writes []string
	var written, final []int64
	for _, j := range missed {
		for _, ev := range also.events[also.from[j]:also.to(j)] {
			ids, events = append(ids, also.ids[j]), append(events, ev)
		}
		writes = append(writes, also.ids[j])
		written, final = append(written, also.written[j]), append(final, also.versions[j])
	}
	_, err = q.Exec(ctx, b.st.CommitAlsoWon, ids, events, writes, written, final)
	return err
}

// alsoArgs are the parameters of sqlCommitAlso: the id, the version the commit function writes
// and the write's own version of each write that carries AlsoProcessed, and its events, each
// labelled with the write's position (1-based).
type alsoArgs struct {
	ids      []string
	written  []int64 // Expected+1, what the commit functions write
	versions []int64 // Execution.Version: one more per further event
	items    []int32
	events   []string
	at       []int // the index the caller gave each write
	from     []int // where each write's events start in events
}

// add appends w, known to the caller by index at, if it carries AlsoProcessed.
func (a *alsoArgs) add(at int, w *stead.Write) {
	if len(w.Bundle.AlsoProcessed) == 0 {
		return
	}
	a.ids = append(a.ids, w.Execution.ID)
	a.written = append(a.written, w.Expected+1)
	a.versions = append(a.versions, w.Execution.Version)
	a.at = append(a.at, at)
	a.from = append(a.from, len(a.events))
	pos := int32(len(a.ids))
	for _, ev := range w.Bundle.AlsoProcessed {
		a.items = append(a.items, pos)
		a.events = append(a.events, ev)
	}
}

func (a *alsoArgs) empty() bool { return len(a.ids) == 0 }

// to is where the events of write j end.
func (a *alsoArgs) to(j int) int {
	if j+1 < len(a.from) {
		return a.from[j+1]
	}
	return len(a.events)
}

// queue queues sqlCommitAlso on batch (see queueFound).
func (a *alsoArgs) queue(batch *pgx.Batch, sql string, found []bool, then func() error) {
	queueFound(batch, sql, []any{a.ids, a.written, a.items, a.events, a.versions}, "also processed", found, then)
}

// check compares what sqlCommitAlso found with the commits' own answers (see checkFound): a
// write found won that lost had its further processed events recorded.
func (a *alsoArgs) check(found []bool, won func(int) bool) ([]int, error) {
	return checkFound(a.at, a.ids, a.written, found, won, "further processed events")
}

// queueFound queues a statement that follows the commits of a batch (sqlCommitAlso,
// sqlCommitAttrs) and answers the 1-based positions of the writes it found won in this
// transaction. When the batch is read, found[j] is set for each such write j, and then runs, if
// set.
func queueFound(batch *pgx.Batch, sql string, args []any, what string, found []bool, then func() error) {
	batch.Queue(sql, args...).Query(func(rows pgx.Rows) error {
		var ord int64
		_, err := pgx.ForEachRow(rows, []any{&ord}, func() error {
			if ord < 1 || int(ord) > len(found) {
				return fmt.Errorf("%s returned position %d of %d", what, ord, len(found))
			}
			found[ord-1] = true
			return nil
		})
		if err != nil || then == nil {
			return err
		}
		return then()
	})
}

// checkFound compares what a statement queued by queueFound found with the commits' own
// answers (won, by the index the caller gave each write, at[j]). It returns the writes that won
// unseen, whose rows are not written yet. A write found won that lost is an error: this
// transaction wrote that version of the execution (versions[j]) in an earlier commit, so the
// statement wrote the what of a step that did not land; only a rollback undoes that.
func checkFound(at []int, ids []string, versions []int64, found []bool, won func(int) bool, what string) ([]int, error) {
	var missed []int
	for j, i := range at {
		switch w := won(i); {
		case w == found[j]:
		case w:
			missed = append(missed, j)
		default:
			return nil, fmt.Errorf("commit %q lost its compare-and-swap, but this transaction had written version %d "+
				"of it before, so its %s were written: roll back", ids[j], versions[j], what)
		}
	}
	return missed, nil
}

// sideEffects are the side effects of bundles as the array parameters of the commit functions,
// one bundle's after the other's.
type sideEffects struct {
	emitTargets, emitEvents       []string
	spawnChildren, spawnRootPaths []string
	spawnContexts                 []pgtype.Text
	spawnTraces                   []string
	armPaths                      []string
	armFireAt                     []time.Time
	disarmPaths                   []string
}

// add appends the side effects of bd. Its timer ops are the net ones (stead.Write), so no
// upsert touches a row twice.
func (s *sideEffects) add(bd *stead.Bundle) error {
	for i := range bd.Emits {
		ev, err := json.Marshal(&bd.Emits[i].Event)
		if err != nil {
			return fmt.Errorf("encode emit %d: %w", i, err)
		}
		s.emitTargets = append(s.emitTargets, bd.Emits[i].Target)
		s.emitEvents = append(s.emitEvents, string(ev))
	}
	for _, sp := range bd.Spawns {
		s.spawnChildren = append(s.spawnChildren, sp.ChildID)
		s.spawnRootPaths = append(s.spawnRootPaths, sp.RootPath)
		s.spawnContexts = append(s.spawnContexts, pgtype.Text{String: string(sp.Context), Valid: sp.Context != nil})
		s.spawnTraces = append(s.spawnTraces, sp.Trace)
	}
	for _, op := range bd.Timers {
		if op.Action == stead.TimerSchedule {
			s.armPaths = append(s.armPaths, op.Path)
			s.armFireAt = append(s.armFireAt, op.FireAt)
		} else {
			s.disarmPaths = append(s.disarmPaths, op.Path)
		}
	}
	return nil
}

// encodeTrace encodes the trace step of a commit (without its index, which the store assigns and
// keeps in a column); no step is NULL.
func encodeTrace(st *stead.TraceStep) (pgtype.Text, error) {
	if st == nil {
		return pgtype.Text{}, nil
	}
	enc, err := json.Marshal(st)
	if err != nil {
		return pgtype.Text{}, fmt.Errorf("encode trace step: %w", err)
	}
	return pgtype.Text{String: string(enc), Valid: true}, nil
}

// batchArgs are the array parameters of stead_commit_batch: one element per write, and the
// side effects of every write, each naming its write by position.
type batchArgs struct {
	ids, definitionIDs, statuses, outcomes, activePaths, parentIDs []string
	createdAt, updatedAt, finishedAt                               []pgtype.Timestamptz
	data                                                           []string
	old                                                            []int64
	processed                                                      []string
	trace                                                          []pgtype.Text
	effects                                                        sideEffects
	emitItems, spawnItems, armItems, disarmItems                   []int32
}

// add appends w, the write at pos (1-based).
func (a *batchArgs) add(pos int32, w *stead.Write) error {
	e := w.Execution
	trace, err := encodeTrace(w.Bundle.Trace)
	if err != nil {
		return err
	}
	a.ids = append(a.ids, e.ID)
	a.definitionIDs = append(a.definitionIDs, e.DefinitionID)
	a.statuses = append(a.statuses, string(e.Status))
	a.outcomes = append(a.outcomes, e.Outcome)
	a.activePaths = append(a.activePaths, e.ActivePath)
	a.parentIDs = append(a.parentIDs, e.ParentID)
	a.createdAt = append(a.createdAt, timestamptz(e.CreatedAt))
	a.updatedAt = append(a.updatedAt, timestamptz(e.UpdatedAt))
	a.finishedAt = append(a.finishedAt, timestamptz(e.FinishedAt))
	a.data = append(a.data, string(w.Record))
	a.old = append(a.old, w.Expected)
	a.processed = append(a.processed, w.Bundle.ProcessedEventID)
	a.trace = append(a.trace, trace)
	s := &a.effects
	if err := s.add(&w.Bundle); err != nil {
		return err
	}
	a.emitItems = label(a.emitItems, len(s.emitEvents), pos)
	a.spawnItems = label(a.spawnItems, len(s.spawnChildren), pos)
	a.armItems = label(a.armItems, len(s.armPaths), pos)
	a.disarmItems = label(a.disarmItems, len(s.disarmPaths), pos)
	return nil
}

// label extends items with pos up to length n: the side effects just added belong to pos.
func label(items []int32, n int, pos int32) []int32 {
	for len(items) < n {
		items = append(items, pos)
	}
	return items
}

func (a *batchArgs) values(traceCap int64) []any {
	s := &a.effects
	return []any{a.ids, a.definitionIDs, a.statuses, a.outcomes, a.activePaths, a.parentIDs,
		a.createdAt, a.updatedAt, a.finishedAt, a.data, a.old, a.processed, a.trace,
		a.emitItems, s.emitTargets, s.emitEvents,
		a.spawnItems, s.spawnChildren, s.spawnRootPaths, s.spawnContexts, s.spawnTraces,
		a.armItems, s.armPaths, s.armFireAt,
		a.disarmItems, s.disarmPaths,
		traceCap}
}

// timestamptz is t as a nullable parameter: the zero time is NULL.
func timestamptz(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: t, Valid: !t.IsZero()}
}

// queueAttrs queues sqlCommitAttrs for w behind its commit (and sqlCommitAlso) on a caller's
// batch. Like sqlCommitAlso there, a win it cannot see (the caller is in a savepoint) fails the
// batch: the caller must roll back. won is read once the commit's answer is.
func (b *Backend) queueAttrs(batch *pgx.Batch, w *stead.Write, won *bool) {
	var attrs attrArgs
	attrs.add(0, w)
	found := make([]bool, 1)
	attrs.queue(batch, b.st.CommitAttrs, found, func() error {
		missed, err := attrs.check(found, func(int) bool { return *won })
		if err == nil && len(missed) > 0 {
			err = fmt.Errorf("the commit won in a savepoint of the caller's, where its attributes cannot be written in the same round trip: roll back")
		}
		if err != nil {
			return fmt.Errorf("pgstore: commit %q: %w", w.Execution.ID, err)
		}
		return nil
	})
}

// attrArgs are the parameters of sqlCommitAttrs: the id and final version of each write that
// replaces its attributes, and the attributes, each labelled with its write's position
// (1-based).
type attrArgs struct {
	ids      []string
	versions []int64
	at       []int // the index the caller gave each write
	items    []int32
	keys     []string
	kinds    []int16
	s        []pgtype.Text
	n        []pgtype.Int8
	known    bool // the writes are known to have won ($8)
}

// add appends w, known to the caller by index at, if it replaces its attributes.
func (a *attrArgs) add(at int, w *stead.Write) {
	if !w.ReplaceAttributes {
		return
	}
	a.ids = append(a.ids, w.Execution.ID)
	a.versions = append(a.versions, w.Execution.Version)
	a.at = append(a.at, at)
	pos := int32(len(a.ids))
	for k, v := range w.Execution.Attributes {
		a.items = append(a.items, pos)
		a.keys = append(a.keys, k)
		a.kinds = append(a.kinds, int16(v.Kind()))
		if v.Kind() == stead.AttrKindString {
			a.s = append(a.s, pgtype.Text{String: v.Str(), Valid: true})
			a.n = append(a.n, pgtype.Int8{})
		} else {
			a.s = append(a.s, pgtype.Text{})
			a.n = append(a.n, pgtype.Int8{Int64: v.Num(), Valid: true})
		}
	}
}

// addFrom appends write j of other with its attributes.
func (a *attrArgs) addFrom(other *attrArgs, j int) {
	a.ids = append(a.ids, other.ids[j])
	a.versions = append(a.versions, other.versions[j])
	a.at = append(a.at, other.at[j])
	pos := int32(len(a.ids))
	for i, item := range other.items {
		if int(item) != j+1 {
			continue
		}
		a.items = append(a.items, pos)
		a.keys = append(a.keys, other.keys[i])
		a.kinds = append(a.kinds, other.kinds[i])
		a.s = append(a.s, other.s[i])
		a.n = append(a.n, other.n[i])
	}
}

func (a *attrArgs) empty() bool { return len(a.ids) == 0 }

func (a *attrArgs) values() []any {
	return []any{a.ids, a.versions, a.items, a.keys, a.kinds, a.s, a.n, a.known}
}

// queue queues sqlCommitAttrs on batch (see queueFound).
func (a *attrArgs) queue(batch *pgx.Batch, sql string, found []bool, then func() error) {
	queueFound(batch, sql, a.values(), "attributes", found, then)
}

// check compares what sqlCommitAttrs found with the commits' own answers (see checkFound).
func (a *attrArgs) check(found []bool, won func(int) bool) ([]int, error) {
	return checkFound(a.at, a.ids, a.versions, found, won, "attributes")
}
