package pgturn

import (
	"context"
	"time"

	"github.com/steadhq/stead/turn"
)

// Store plays every role of the contract.
var _ turn.Backend = (*Store)(nil)

// Stores puts the store behind every role.
func (s *Store) Stores() turn.Stores { return turn.NewStores(s) }

// Every exported method validates its input before taking a connection (bad input is ErrInvalid
// and never reaches the database), then reads on a pooled connection or writes in a transaction
// of its own by running a step (steps.go); a write a bundle can carry runs the very step the
// bundle item runs.

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func readOne[T any](ctx context.Context, s *Store, fn func(q querier) (T, error)) (T, error) {
	var out T
	err := s.read(ctx, func(q querier) error {
		var err error
		out, err = fn(q)
		return err
	})
	return out, err
}

// writeStep runs one step as a write of its own (one round trip for BEGIN and the statement,
// one for COMMIT). err is the step's preparation error.
func (s *Store) writeStep(ctx context.Context, st step, err error) error {
	if err != nil {
		return err
	}
	return s.runSteps(ctx, []step{st})
}

// LoadConversation implements turn.ConversationReader.
func (s *Store) LoadConversation(ctx context.Context, account string, id turn.ID) (turn.Conversation, error) {
	if err := firstErr(turn.ValidateAccount(account), turn.ValidateID("conversation id", id)); err != nil {
		return turn.Conversation{}, err
	}
	return readOne(ctx, s, func(q querier) (turn.Conversation, error) { return s.loadConversation(ctx, q, account, id) })
}

// LoadRecentTurns implements turn.ConversationReader.
func (s *Store) LoadRecentTurns(ctx context.Context, account string, conversation turn.ID, limit int) ([]turn.Turn, error) {
	if err := firstErr(turn.ValidateAccount(account), turn.ValidateID("conversation id", conversation), turn.ValidateLimit(limit)); err != nil {
		return nil, err
	}
	return readOne(ctx, s, func(q querier) ([]turn.Turn, error) {
		return s.loadRecentTurns(ctx, q, account, conversation, limit)
	})
}

// LoadTurn implements turn.ConversationReader.
func (s *Store) LoadTurn(ctx context.Context, account string, id turn.ID) (turn.Turn, error) {
	if err := firstErr(turn.ValidateAccount(account), turn.ValidateID("turn id", id)); err != nil {
		return turn.Turn{}, err
	}
	return readOne(ctx, s, func(q querier) (turn.Turn, error) { return s.loadTurn(ctx, q, account, id) })
}

// TurnPhase implements turn.ConversationReader.
func (s *Store) TurnPhase(ctx context.Context, account string, id turn.ID) (turn.PhaseMarker, error) {
	if err := firstErr(turn.ValidateAccount(account), turn.ValidateID("turn id", id)); err != nil {
		return turn.PhaseMarker{}, err
	}
	return readOne(ctx, s, func(q querier) (turn.PhaseMarker, error) { return s.turnPhase(ctx, q, account, id) })
}

// ListUnfinishedTurns implements turn.ConversationReader.
func (s *Store) ListUnfinishedTurns(ctx context.Context, scope turn.RecoveryScope, limit int) ([]turn.PhaseMarker, error) {
	if err := turn.ValidateLimit(limit); err != nil {
		return nil, err
	}
	if scope.AccountID != "" {
		if err := turn.ValidateAccount(scope.AccountID); err != nil {
			return nil, err
		}
	}
	return readOne(ctx, s, func(q querier) ([]turn.PhaseMarker, error) { return s.listUnfinishedTurns(ctx, q, scope, limit) })
}

// CreateConversation implements turn.ConversationWriter.
func (s *Store) CreateConversation(ctx context.Context, c turn.Conversation) error {
	if err := c.Validate(); err != nil {
		return err
	}
	return s.writeStep(ctx, s.createConversationStep(c), nil)
}

// AppendUserTurn implements turn.ConversationWriter.
func (s *Store) AppendUserTurn(ctx context.Context, t turn.UserTurn) error {
	if err := t.Validate(); err != nil {
		return err
	}
	st, err := s.appendUserTurnStep(t, s.now())
	return s.writeStep(ctx, st, err)
}

// AppendAssistantTurn implements turn.ConversationWriter.
func (s *Store) AppendAssistantTurn(ctx context.Context, account string, t turn.AssistantTurn) error {
	if err := firstErr(turn.ValidateAccount(account), t.Validate()); err != nil {
		return err
	}
	st, err := s.appendAssistantTurnStep(account, t)
	return s.writeStep(ctx, st, err)
}

// SetTurnPhase implements turn.ConversationWriter.
func (s *Store) SetTurnPhase(ctx context.Context, account string, id turn.ID, p turn.Phase) (turn.PhaseMarker, error) {
	if err := firstErr(turn.ValidateAccount(account), turn.ValidateID("turn id", id)); err != nil {
		return turn.PhaseMarker{}, err
	}
	var m turn.PhaseMarker
	st, err := s.phaseStep("", account, id, p, s.now(), &m)
	if err := s.writeStep(ctx, st, err); err != nil {
		return turn.PhaseMarker{}, err
	}
	return m, nil
}

// LoadInteraction implements turn.InteractionReader.
func (s *Store) LoadInteraction(ctx context.Context, account string, id turn.ID) (turn.InteractionRecord, error) {
	if err := firstErr(turn.ValidateAccount(account), turn.ValidateID("interaction id", id)); err != nil {
		return turn.InteractionRecord{}, err
	}
	return readOne(ctx, s, func(q querier) (turn.InteractionRecord, error) { return s.getInteraction(ctx, q, account, id) })
}

// ListOpenForConversation implements turn.InteractionReader.
func (s *Store) ListOpenForConversation(ctx context.Context, account string, conversation turn.ID) ([]turn.InteractionRecord, error) {
	if err := firstErr(turn.ValidateAccount(account), turn.ValidateID("conversation id", conversation)); err != nil {
		return nil, err
	}
	return readOne(ctx, s, func(q querier) ([]turn.InteractionRecord, error) {
		return s.listOpenForConversation(ctx, q, account, conversation)
	})
}

// ListOpenForCase implements turn.InteractionReader.
func (s *Store) ListOpenForCase(ctx context.Context, account string, key turn.CaseKey) ([]turn.InteractionRecord, error) {
	if err := firstErr(turn.ValidateAccount(account), key.Validate()); err != nil {
		return nil, err
	}
	return readOne(ctx, s, func(q querier) ([]turn.InteractionRecord, error) { return s.listOpenForCase(ctx, q, account, key) })
}

// BlockingAnsweredAt implements turn.InteractionReader.
func (s *Store) BlockingAnsweredAt(ctx context.Context, account string, key turn.CaseKey, rev turn.Revision) (bool, error) {
	if err := firstErr(turn.ValidateAccount(account), key.Validate(), turn.ValidateRevision("revision", rev)); err != nil {
		return false, err
	}
	return readOne(ctx, s, func(q querier) (bool, error) { return s.blockingAnsweredAt(ctx, q, account, key, rev) })
}

// InsertInteraction implements turn.InteractionWriter.
func (s *Store) InsertInteraction(ctx context.Context, it turn.Interaction) error {
	if err := it.Validate(); err != nil {
		return err
	}
	st, err := s.insertStep("", it, false, s.now(), nil)
	return s.writeStep(ctx, st, err)
}

// InsertReplacingBlocking implements turn.InteractionWriter.
func (s *Store) InsertReplacingBlocking(ctx context.Context, it turn.Interaction) ([]turn.ID, error) {
	if err := it.Validate(); err != nil {
		return nil, err
	}
	superseded := []turn.ID{}
	st, err := s.insertStep("", it, true, s.now(), &superseded)
	if err := s.writeStep(ctx, st, err); err != nil {
		return nil, err
	}
	return superseded, nil
}

// BeginResolution implements turn.InteractionWriter.
func (s *Store) BeginResolution(ctx context.Context, account string, id turn.ID, expected turn.InteractionStatus, optionID string, resolvedBy turn.ID) (turn.InteractionRecord, error) {
	if err := firstErr(turn.ValidateAccount(account), turn.ValidateID("interaction id", id), turn.ValidateText("option id", optionID)); err != nil {
		return turn.InteractionRecord{}, err
	}
	var rec turn.InteractionRecord
	if err := s.writeStep(ctx, s.beginStep(account, id, expected, optionID, resolvedBy, s.now(), &rec), nil); err != nil {
		return turn.InteractionRecord{}, err
	}
	return rec, nil
}

// FinishResolution implements turn.InteractionWriter.
func (s *Store) FinishResolution(ctx context.Context, account string, id turn.ID, outcome turn.ResolutionOutcome) (turn.InteractionRecord, error) {
	if err := firstErr(turn.ValidateAccount(account), turn.ValidateID("interaction id", id), outcome.Validate()); err != nil {
		return turn.InteractionRecord{}, err
	}
	var rec turn.InteractionRecord
	st, err := s.finishStep("", account, id, outcome, &rec)
	if err := s.writeStep(ctx, st, err); err != nil {
		return turn.InteractionRecord{}, err
	}
	return rec, nil
}

// InvalidateForCase implements turn.InteractionWriter.
func (s *Store) InvalidateForCase(ctx context.Context, account string, key turn.CaseKey, newRevision turn.Revision, reason turn.InvalidationReason) ([]turn.ID, error) {
	if err := firstErr(turn.ValidateAccount(account), key.Validate(), turn.ValidateRevision("new revision", newRevision), reason.Validate()); err != nil {
		return nil, err
	}
	var retired []turn.ID
	st, err := s.invalidateStep("", account, key, newRevision, reason, s.now(), &retired)
	if err := s.writeStep(ctx, st, err); err != nil {
		return nil, err
	}
	return retired, nil
}

// InvalidateCaseCards implements turn.InteractionWriter.
func (s *Store) InvalidateCaseCards(ctx context.Context, account string, key turn.CaseKey, reason turn.InvalidationReason) ([]turn.ID, error) {
	if err := firstErr(turn.ValidateAccount(account), key.Validate(), reason.Validate()); err != nil {
		return nil, err
	}
	var retired []turn.ID
	st, err := s.invalidateCardsStep(account, key, reason, s.now(), &retired)
	if err := s.writeStep(ctx, st, err); err != nil {
		return nil, err
	}
	return retired, nil
}

// ExpireDue implements turn.InteractionWriter.
func (s *Store) ExpireDue(ctx context.Context, now time.Time) ([]turn.ID, error) {
	if err := turn.ValidateTime("now", now); err != nil {
		return nil, err
	}
	var cards []expiredCard
	if err := s.writeStep(ctx, s.expireStep(turn.ClockTime(now), &cards), nil); err != nil {
		return nil, err
	}
	ids := make([]turn.ID, len(cards))
	for i, c := range cards {
		ids[i] = c.id
	}
	return ids, nil
}

// LoadCommand implements turn.JournalReader.
func (s *Store) LoadCommand(ctx context.Context, account string, id turn.ID) (turn.JournalEntry, error) {
	if err := firstErr(turn.ValidateAccount(account), turn.ValidateID("command id", id)); err != nil {
		return turn.JournalEntry{}, err
	}
	return readOne(ctx, s, func(q querier) (turn.JournalEntry, error) { return s.loadCommand(ctx, q, account, id) })
}

// CommandsForTurn implements turn.JournalReader.
func (s *Store) CommandsForTurn(ctx context.Context, account string, id turn.ID) ([]turn.JournalEntry, error) {
	if err := firstErr(turn.ValidateAccount(account), turn.ValidateID("turn id", id)); err != nil {
		return nil, err
	}
	return readOne(ctx, s, func(q querier) ([]turn.JournalEntry, error) { return s.commandsForTurn(ctx, q, account, id, false) })
}

// PendingForTurn implements turn.JournalReader.
func (s *Store) PendingForTurn(ctx context.Context, account string, id turn.ID) ([]turn.JournalEntry, error) {
	if err := firstErr(turn.ValidateAccount(account), turn.ValidateID("turn id", id)); err != nil {
		return nil, err
	}
	return readOne(ctx, s, func(q querier) ([]turn.JournalEntry, error) { return s.commandsForTurn(ctx, q, account, id, true) })
}

// BeginCommand implements turn.JournalWriter.
func (s *Store) BeginCommand(ctx context.Context, e turn.JournalEntry) (turn.Admission, error) {
	if err := e.Validate(); err != nil {
		return turn.Admission{}, err
	}
	var a turn.Admission
	var raced bool
	st, err := s.admitStep(e, &a, &raced)
	if err := s.writeStep(ctx, st, err); err != nil {
		return turn.Admission{}, err
	}
	if raced {
		return readOne(ctx, s, func(q querier) (turn.Admission, error) { return s.readAdmission(ctx, q, e) })
	}
	return a, nil
}

// MarkExecuting implements turn.JournalWriter.
func (s *Store) MarkExecuting(ctx context.Context, account string, id turn.ID) error {
	if err := firstErr(turn.ValidateAccount(account), turn.ValidateID("command id", id)); err != nil {
		return err
	}
	return s.writeStep(ctx, s.markExecutingStep(account, id), nil)
}

// CompleteCommand implements turn.JournalWriter.
func (s *Store) CompleteCommand(ctx context.Context, account string, id turn.ID, outcome turn.JournalOutcome) error {
	if err := firstErr(turn.ValidateAccount(account), turn.ValidateID("command id", id), outcome.Validate()); err != nil {
		return err
	}
	st, err := s.completeStep("", account, id, outcome, s.now())
	return s.writeStep(ctx, st, err)
}

// ListSince implements turn.EventReader.
func (s *Store) ListSince(ctx context.Context, account string, key turn.CaseKey, since turn.Revision, limit int) ([]turn.Event, error) {
	if err := firstErr(turn.ValidateAccount(account), key.Validate(), turn.ValidateRevision("since", since), turn.ValidateLimit(limit)); err != nil {
		return nil, err
	}
	return readOne(ctx, s, func(q querier) ([]turn.Event, error) { return s.listSince(ctx, q, account, key, since, limit) })
}

// ReadFrom implements turn.EventReader.
func (s *Store) ReadFrom(ctx context.Context, account string, after turn.Cursor, limit int) (turn.EventPage, error) {
	if err := firstErr(turn.ValidateAccount(account), turn.ValidateCursor(after), turn.ValidateLimit(limit)); err != nil {
		return turn.EventPage{}, err
	}
	return readOne(ctx, s, func(q querier) (turn.EventPage, error) { return s.readFrom(ctx, q, account, after, limit) })
}

// LoadEvents implements turn.EventReader.
func (s *Store) LoadEvents(ctx context.Context, account string, ids []turn.ID) ([]turn.Event, error) {
	if err := turn.ValidateAccount(account); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if err := turn.ValidateID("event id", id); err != nil {
			return nil, err
		}
	}
	return readOne(ctx, s, func(q querier) ([]turn.Event, error) { return s.loadEvents(ctx, q, account, ids) })
}

// CountEvents implements turn.EventReader.
func (s *Store) CountEvents(ctx context.Context, account string, key turn.CaseKey) (int64, error) {
	if err := firstErr(turn.ValidateAccount(account), key.Validate()); err != nil {
		return 0, err
	}
	return readOne(ctx, s, func(q querier) (int64, error) { return s.countEvents(ctx, q, account, key) })
}

// AppendEvents implements turn.EventWriter.
func (s *Store) AppendEvents(ctx context.Context, b turn.EventBatch) ([]turn.ID, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	var ids []turn.ID
	st, err := s.appendStep("", b, &ids)
	if err != nil {
		return nil, err
	}
	if err := s.runSteps(ctx, []step{s.appendLockStep(b.AccountID), st}); err != nil {
		return nil, err
	}
	return ids, nil
}

// RedactPayload implements turn.EventWriter.
func (s *Store) RedactPayload(ctx context.Context, account string, id turn.ID, authority string) (turn.Redaction, error) {
	if err := firstErr(turn.ValidateAccount(account), turn.ValidateID("event id", id), turn.ValidateKey("authority", authority)); err != nil {
		return turn.Redaction{}, err
	}
	var r turn.Redaction
	if err := s.writeStep(ctx, s.redactStep(account, id, authority, s.now(), &r), nil); err != nil {
		return turn.Redaction{}, err
	}
	return r, nil
}

// LoadOutbox implements turn.OutboxReader.
func (s *Store) LoadOutbox(ctx context.Context, id turn.ID) (turn.OutboxRecord, error) {
	if err := turn.ValidateID("outbox id", id); err != nil {
		return turn.OutboxRecord{}, err
	}
	return readOne(ctx, s, func(q querier) (turn.OutboxRecord, error) { return s.loadOutbox(ctx, q, id) })
}

// OutboxForCommand implements turn.OutboxReader.
func (s *Store) OutboxForCommand(ctx context.Context, command turn.ID) ([]turn.OutboxRecord, error) {
	if err := turn.ValidateID("command id", command); err != nil {
		return nil, err
	}
	return readOne(ctx, s, func(q querier) ([]turn.OutboxRecord, error) { return s.outboxForCommand(ctx, q, command) })
}

// Enqueue implements turn.OutboxWriter.
func (s *Store) Enqueue(ctx context.Context, e turn.OutboxEntry) error {
	if err := e.Validate(); err != nil {
		return err
	}
	st, err := s.enqueueStep("", e)
	return s.writeStep(ctx, st, err)
}

// ClaimDue implements turn.OutboxWriter.
func (s *Store) ClaimDue(ctx context.Context, now time.Time, limit int, workerID string) ([]turn.OutboxEntry, error) {
	if err := firstErr(turn.ValidateTime("now", now), turn.ValidateLimit(limit), turn.ValidateKey("worker id", workerID)); err != nil {
		return nil, err
	}
	if limit == 0 {
		return []turn.OutboxEntry{}, s.open()
	}
	var claimed []turn.OutboxEntry
	if err := s.writeStep(ctx, s.claimStep(turn.ClockTime(now), limit, workerID, &claimed), nil); err != nil {
		return nil, err
	}
	return claimed, nil
}

// MarkCompleted implements turn.OutboxWriter.
func (s *Store) MarkCompleted(ctx context.Context, id turn.ID) error {
	if err := turn.ValidateID("outbox id", id); err != nil {
		return err
	}
	return s.writeStep(ctx, s.markCompletedStep(id, s.now()), nil)
}

// MarkFailed implements turn.OutboxWriter.
func (s *Store) MarkFailed(ctx context.Context, id turn.ID, reason string, retryAt time.Time) error {
	if err := firstErr(turn.ValidateID("outbox id", id), turn.ValidateKey("reason", reason)); err != nil {
		return err
	}
	if !retryAt.IsZero() {
		if err := turn.ValidateTime("retry at", retryAt); err != nil {
			return err
		}
	}
	return s.writeStep(ctx, s.markFailedStep(id, reason, retryAt, s.now()), nil)
}

// MarkOutcomeUnknown implements turn.OutboxWriter.
func (s *Store) MarkOutcomeUnknown(ctx context.Context, id turn.ID, remoteRef string) error {
	if err := firstErr(turn.ValidateID("outbox id", id), turn.ValidateText("remote ref", remoteRef)); err != nil {
		return err
	}
	return s.writeStep(ctx, s.markOutcomeUnknownStep(id, remoteRef), nil)
}

// Reschedule implements turn.OutboxWriter.
func (s *Store) Reschedule(ctx context.Context, id turn.ID, next time.Time) error {
	if err := turn.ValidateID("outbox id", id); err != nil {
		return err
	}
	if !next.IsZero() {
		if err := turn.ValidateTime("next attempt at", next); err != nil {
			return err
		}
	}
	return s.writeStep(ctx, s.rescheduleStep(id, next), nil)
}

// ReleaseExpiredClaims implements turn.OutboxWriter.
func (s *Store) ReleaseExpiredClaims(ctx context.Context, claimedBefore time.Time) ([]turn.ID, error) {
	if err := turn.ValidateTime("claimed before", claimedBefore); err != nil {
		return nil, err
	}
	ids := []turn.ID{}
	if err := s.writeStep(ctx, s.releaseStep(claimedBefore, &ids), nil); err != nil {
		return nil, err
	}
	return ids, nil
}

// LoadReplay implements turn.ReplayReader.
func (s *Store) LoadReplay(ctx context.Context, account string, id turn.ID) (turn.ReplayRecord, error) {
	if err := firstErr(turn.ValidateAccount(account), turn.ValidateID("turn id", id)); err != nil {
		return turn.ReplayRecord{}, err
	}
	return readOne(ctx, s, func(q querier) (turn.ReplayRecord, error) { return s.loadReplay(ctx, q, account, id) })
}

// ReplaysForConversation implements turn.ReplayReader.
func (s *Store) ReplaysForConversation(ctx context.Context, account string, conversation turn.ID, limit int) ([]turn.ReplayRecord, error) {
	if err := firstErr(turn.ValidateAccount(account), turn.ValidateID("conversation id", conversation), turn.ValidateLimit(limit)); err != nil {
		return nil, err
	}
	return readOne(ctx, s, func(q querier) ([]turn.ReplayRecord, error) {
		return s.replaysForConversation(ctx, q, account, conversation, limit)
	})
}

// PutReplay implements turn.ReplayWriter.
func (s *Store) PutReplay(ctx context.Context, r turn.ReplayRecord) error {
	if err := r.Validate(); err != nil {
		return err
	}
	st, err := s.replayStep("", r)
	return s.writeStep(ctx, st, err)
}
