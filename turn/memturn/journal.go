package memturn

import (
	"context"
	"slices"
	"time"

	"github.com/steadhq/stead/turn"
)

// LoadCommand implements turn.JournalReader.
func (s *Backend) LoadCommand(ctx context.Context, account string, command turn.ID) (turn.JournalEntry, error) {
	sh, err := s.lockShard(ctx, account)
	if err != nil {
		return turn.JournalEntry{}, err
	}
	defer s.mu.Unlock()
	if e, ok := sh.journal[command]; ok {
		return copyEntry(e), nil
	}
	return turn.JournalEntry{}, notFound("command", command)
}

func (s *Backend) commands(ctx context.Context, account string, turnID turn.ID, keep func(turn.JournalStatus) bool) ([]turn.JournalEntry, error) {
	sh, err := s.lockShard(ctx, account)
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []turn.JournalEntry{}
	for _, e := range sh.journal {
		if e.TurnID == turnID && keep(e.Status) {
			out = append(out, copyEntry(e))
		}
	}
	slices.SortFunc(out, func(a, b turn.JournalEntry) int {
		return byTimeThenID(a.CreatedAt, a.CommandID, b.CreatedAt, b.CommandID)
	})
	return out, nil
}

// CommandsForTurn implements turn.JournalReader.
func (s *Backend) CommandsForTurn(ctx context.Context, account string, turnID turn.ID) ([]turn.JournalEntry, error) {
	return s.commands(ctx, account, turnID, func(turn.JournalStatus) bool { return true })
}

// PendingForTurn implements turn.JournalReader.
func (s *Backend) PendingForTurn(ctx context.Context, account string, turnID turn.ID) ([]turn.JournalEntry, error) {
	return s.commands(ctx, account, turnID, turn.JournalStatus.Resumable)
}

// BeginCommand implements turn.JournalWriter. The key is checked before the command id, so a
// repeat of an admitted request always replays, whatever its command id.
func (s *Backend) BeginCommand(ctx context.Context, e turn.JournalEntry) (turn.Admission, error) {
	if err := s.faults.take(BeforeJournalInsert); err != nil {
		return turn.Admission{}, err
	}
	if err := s.lock(ctx); err != nil {
		return turn.Admission{}, err
	}
	sh := s.ensureShard(nil, e.AccountID)
	if id, ok := sh.journalKeys[e.IdempotencyKey]; ok {
		stored := copyEntry(sh.journal[id])
		s.mu.Unlock()
		return turn.Admission{Entry: stored}, nil
	}
	if _, ok := sh.journal[e.CommandID]; ok {
		s.mu.Unlock()
		return turn.Admission{}, conflict("command %s exists under another idempotency key", e.CommandID)
	}
	stored := copyEntry(e)
	sh.journal[e.CommandID] = stored
	sh.journalKeys[e.IdempotencyKey] = e.CommandID
	s.mu.Unlock()
	if err := s.faults.take(AfterJournalInsertBeforeCommit); err != nil {
		return turn.Admission{}, err
	}
	return turn.Admission{Fresh: true, Entry: copyEntry(stored)}, nil
}

// MarkExecuting implements turn.JournalWriter.
func (s *Backend) MarkExecuting(ctx context.Context, account string, command turn.ID) error {
	sh, err := s.lockShard(ctx, account)
	if err != nil {
		return err
	}
	defer s.mu.Unlock()
	e, ok := sh.journal[command]
	switch {
	case !ok:
		return notFound("command", command)
	case e.Status == turn.JournalExecuting:
		return nil
	case !e.Status.CanTransitionTo(turn.JournalExecuting):
		return conflict("command %s is %s and cannot start executing", command, e.Status)
	}
	e.Status = turn.JournalExecuting
	sh.journal[command] = e
	return nil
}

// CompleteCommand implements turn.JournalWriter.
func (s *Backend) CompleteCommand(ctx context.Context, account string, command turn.ID, outcome turn.JournalOutcome) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	return s.complete(nil, account, command, outcome, s.now())
}

// complete moves the entry to the outcome's status if the journal allows it; the same outcome
// recorded again is accepted unchanged.
func (s *Backend) complete(u *undo, account string, command turn.ID, outcome turn.JournalOutcome, now time.Time) error {
	sh := s.shardOf(account)
	e, ok := sh.journal[command]
	if !ok {
		return notFound("command", command)
	}
	target := outcome.Status()
	if !e.Status.CanTransitionTo(target) {
		if e.Status == target && e.Result != nil && e.Result.Equal(outcome) {
			return nil
		}
		return conflict("command %s is %s and cannot become %s with this outcome", command, e.Status, target)
	}
	e.Status = target
	e.Result = copyOutcome(&outcome)
	e.CompletedAt = now
	put(u, sh.journal, command, e)
	return nil
}
