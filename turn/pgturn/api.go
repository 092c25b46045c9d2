package pgturn

import (
	"context"
	"time"

	"github.com/steadhq/stead/turn"
)

// Every method below receives arguments the checked front has validated and normalised (see
// turn.Backend), then reads on a pooled connection or writes in a transaction of its own by
// running a step (steps.go); a write a bundle can carry runs the very step the bundle item runs.

func readOne[T any](ctx context.Context, s *Backend, fn func(q querier) (T, error)) (T, error) {
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
func (s *Backend) writeStep(ctx context.Context, st step, err error) error {
	if err != nil {
		return err
	}
	return s.runSteps(ctx, []step{st})
}

// LoadConversation implements turn.ConversationReader.
func (s *Backend) LoadConversation(ctx context.Context, account string, id turn.ID) (turn.Conversation, error) {
	return readOne(ctx, s, func(q querier) (turn.Conversation, error) { return s.loadConversation(ctx, q, account, id) })
}

// ListConversations implements turn.ConversationReader.
func (s *Backend) ListConversations(ctx context.Context, account string, limit int) ([]turn.Conversation, error) {
	return readOne(ctx, s, func(q querier) ([]turn.Conversation, error) { return s.listConversations(ctx, q, account, limit) })
}

// LoadRecentTurns implements turn.ConversationReader.
func (s *Backend) LoadRecentTurns(ctx context.Context, account string, conversation turn.ID, limit int) ([]turn.Turn, error) {
	return readOne(ctx, s, func(q querier) ([]turn.Turn, error) {
		return s.loadRecentTurns(ctx, q, account, conversation, limit)
	})
}

// LoadTurn implements turn.ConversationReader.
func (s *Backend) LoadTurn(ctx context.Context, account string, id turn.ID) (turn.Turn, error) {
	return readOne(ctx, s, func(q querier) (turn.Turn, error) { return s.loadTurn(ctx, q, account, id) })
}

// TurnPhase implements turn.ConversationReader.
func (s *Backend) TurnPhase(ctx context.Context, account string, id turn.ID) (turn.PhaseMarker, error) {
	return readOne(ctx, s, func(q querier) (turn.PhaseMarker, error) { return s.turnPhase(ctx, q, account, id) })
}

// ListUnfinishedTurns implements turn.ConversationReader.
func (s *Backend) ListUnfinishedTurns(ctx context.Context, scope turn.RecoveryScope, limit int) ([]turn.PhaseMarker, error) {
	return readOne(ctx, s, func(q querier) ([]turn.PhaseMarker, error) { return s.listUnfinishedTurns(ctx, q, scope, limit) })
}

// CreateConversation implements turn.ConversationWriter.
func (s *Backend) CreateConversation(ctx context.Context, c turn.Conversation) error {
	return s.writeStep(ctx, s.createConversationStep(c), nil)
}

// AppendUserTurn implements turn.ConversationWriter.
func (s *Backend) AppendUserTurn(ctx context.Context, t turn.UserTurn) error {
	st, err := s.appendUserTurnStep(t, s.now())
	return s.writeStep(ctx, st, err)
}

// AppendAssistantTurn implements turn.ConversationWriter.
func (s *Backend) AppendAssistantTurn(ctx context.Context, account string, t turn.AssistantTurn) error {
	st, err := s.appendAssistantTurnStep(account, t)
	return s.writeStep(ctx, st, err)
}

// SetTurnPhase implements turn.ConversationWriter.
func (s *Backend) SetTurnPhase(ctx context.Context, account string, id turn.ID, p turn.Phase) (turn.PhaseMarker, error) {
	var m turn.PhaseMarker
	if err := s.writeStep(ctx, s.phaseStep("", account, id, p, s.now(), &m), nil); err != nil {
		return turn.PhaseMarker{}, err
	}
	return m, nil
}

// LoadInteraction implements turn.InteractionReader.
func (s *Backend) LoadInteraction(ctx context.Context, account string, id turn.ID) (turn.InteractionRecord, error) {
	return readOne(ctx, s, func(q querier) (turn.InteractionRecord, error) { return s.getInteraction(ctx, q, account, id) })
}

// InteractionsForTurn implements turn.InteractionReader.
func (s *Backend) InteractionsForTurn(ctx context.Context, account string, id turn.ID) ([]turn.InteractionRecord, error) {
	return readOne(ctx, s, func(q querier) ([]turn.InteractionRecord, error) { return s.interactionsForTurn(ctx, q, account, id) })
}

// ListOpenForConversation implements turn.InteractionReader.
func (s *Backend) ListOpenForConversation(ctx context.Context, account string, conversation turn.ID) ([]turn.InteractionRecord, error) {
	return readOne(ctx, s, func(q querier) ([]turn.InteractionRecord, error) {
		return s.listOpenForConversation(ctx, q, account, conversation)
	})
}

// ListOpenForCase implements turn.InteractionReader.
func (s *Backend) ListOpenForCase(ctx context.Context, account string, key turn.CaseKey) ([]turn.InteractionRecord, error) {
	return readOne(ctx, s, func(q querier) ([]turn.InteractionRecord, error) { return s.listOpenForCase(ctx, q, account, key) })
}

// BlockingAnsweredAt implements turn.InteractionReader.
func (s *Backend) BlockingAnsweredAt(ctx context.Context, account string, key turn.CaseKey, rev turn.Revision) (bool, error) {
	return readOne(ctx, s, func(q querier) (bool, error) { return s.blockingAnsweredAt(ctx, q, account, key, rev) })
}

// InsertInteraction implements turn.InteractionWriter.
func (s *Backend) InsertInteraction(ctx context.Context, it turn.Interaction) error {
	st, err := s.insertStep("", it, false, s.now(), nil)
	return s.writeStep(ctx, st, err)
}

// InsertReplacingBlocking implements turn.InteractionWriter.
func (s *Backend) InsertReplacingBlocking(ctx context.Context, it turn.Interaction) ([]turn.ID, error) {
	superseded := []turn.ID{}
	st, err := s.insertStep("", it, true, s.now(), &superseded)
	if err := s.writeStep(ctx, st, err); err != nil {
		return nil, err
	}
	return superseded, nil
}

// BeginResolution implements turn.InteractionWriter.
func (s *Backend) BeginResolution(ctx context.Context, account string, id turn.ID, expected turn.InteractionStatus, optionID string, resolvedBy turn.ID) (turn.InteractionRecord, error) {
	var rec turn.InteractionRecord
	if err := s.writeStep(ctx, s.beginStep(account, id, expected, optionID, resolvedBy, s.now(), &rec), nil); err != nil {
		return turn.InteractionRecord{}, err
	}
	return rec, nil
}

// FinishResolution implements turn.InteractionWriter.
func (s *Backend) FinishResolution(ctx context.Context, account string, id turn.ID, outcome turn.ResolutionOutcome) (turn.InteractionRecord, error) {
	var rec turn.InteractionRecord
	st, err := s.finishStep("", account, id, outcome, &rec)
	if err := s.writeStep(ctx, st, err); err != nil {
		return turn.InteractionRecord{}, err
	}
	return rec, nil
}

// InvalidateForCase implements turn.InteractionWriter.
func (s *Backend) InvalidateForCase(ctx context.Context, account string, key turn.CaseKey, newRevision turn.Revision, reason turn.InvalidationReason) ([]turn.ID, error) {
	var retired []turn.ID
	st, err := s.invalidateStep("", account, key, newRevision, reason, s.now(), &retired)
	if err := s.writeStep(ctx, st, err); err != nil {
		return nil, err
	}
	return retired, nil
}

// InvalidateCaseCards implements turn.InteractionWriter.
func (s *Backend) InvalidateCaseCards(ctx context.Context, account string, key turn.CaseKey, reason turn.InvalidationReason) ([]turn.ID, error) {
	var retired []turn.ID
	st, err := s.invalidateCardsStep(account, key, reason, s.now(), &retired)
	if err := s.writeStep(ctx, st, err); err != nil {
		return nil, err
	}
	return retired, nil
}

// ExpireDue implements turn.InteractionWriter.
func (s *Backend) ExpireDue(ctx context.Context, now time.Time) ([]turn.ID, error) {
	var cards []expiredCard
	if err := s.writeStep(ctx, s.expireStep(now, &cards), nil); err != nil {
		return nil, err
	}
	ids := make([]turn.ID, len(cards))
	for i, c := range cards {
		ids[i] = c.id
	}
	return ids, nil
}

// LoadCommand implements turn.JournalReader.
func (s *Backend) LoadCommand(ctx context.Context, account string, id turn.ID) (turn.JournalEntry, error) {
	return readOne(ctx, s, func(q querier) (turn.JournalEntry, error) { return s.loadCommand(ctx, q, account, id) })
}

// CommandsForTurn implements turn.JournalReader.
func (s *Backend) CommandsForTurn(ctx context.Context, account string, id turn.ID) ([]turn.JournalEntry, error) {
	return readOne(ctx, s, func(q querier) ([]turn.JournalEntry, error) { return s.commandsForTurn(ctx, q, account, id, false) })
}

// PendingForTurn implements turn.JournalReader.
func (s *Backend) PendingForTurn(ctx context.Context, account string, id turn.ID) ([]turn.JournalEntry, error) {
	return readOne(ctx, s, func(q querier) ([]turn.JournalEntry, error) { return s.commandsForTurn(ctx, q, account, id, true) })
}

// BeginCommand implements turn.JournalWriter.
func (s *Backend) BeginCommand(ctx context.Context, e turn.JournalEntry) (turn.Admission, error) {
	var a turn.Admission
	var raced bool
	if err := s.writeStep(ctx, s.admitStep(e, &a, &raced), nil); err != nil {
		return turn.Admission{}, err
	}
	if raced {
		return readOne(ctx, s, func(q querier) (turn.Admission, error) { return s.readAdmission(ctx, q, e) })
	}
	return a, nil
}

// MarkExecuting implements turn.JournalWriter.
func (s *Backend) MarkExecuting(ctx context.Context, account string, id turn.ID) error {
	return s.writeStep(ctx, s.markExecutingStep(account, id), nil)
}

// CompleteCommand implements turn.JournalWriter.
func (s *Backend) CompleteCommand(ctx context.Context, account string, id turn.ID, outcome turn.JournalOutcome) error {
	st, err := s.completeStep("", account, id, outcome, s.now())
	return s.writeStep(ctx, st, err)
}

// ListSince implements turn.EventReader.
func (s *Backend) ListSince(ctx context.Context, account string, key turn.CaseKey, since turn.Revision, limit int) ([]turn.Event, error) {
	return readOne(ctx, s, func(q querier) ([]turn.Event, error) { return s.listSince(ctx, q, account, key, since, limit) })
}

// ReadFrom implements turn.EventReader.
func (s *Backend) ReadFrom(ctx context.Context, account string, after turn.Cursor, limit int) (turn.EventPage, error) {
	return readOne(ctx, s, func(q querier) (turn.EventPage, error) { return s.readFrom(ctx, q, account, after, limit) })
}

// LoadEvents implements turn.EventReader.
func (s *Backend) LoadEvents(ctx context.Context, account string, ids []turn.ID) ([]turn.Event, error) {
	return readOne(ctx, s, func(q querier) ([]turn.Event, error) { return s.loadEvents(ctx, q, account, ids) })
}

// CountEvents implements turn.EventReader.
func (s *Backend) CountEvents(ctx context.Context, account string, key turn.CaseKey) (int64, error) {
	return readOne(ctx, s, func(q querier) (int64, error) { return s.countEvents(ctx, q, account, key) })
}

// AppendEvents implements turn.EventWriter.
func (s *Backend) AppendEvents(ctx context.Context, b turn.EventBatch) ([]turn.ID, error) {
	var ids []turn.ID
	if err := s.runSteps(ctx, []step{s.appendLockStep(b.AccountID), s.appendStep("", b, &ids)}); err != nil {
		return nil, err
	}
	return ids, nil
}

// RedactPayload implements turn.EventWriter.
func (s *Backend) RedactPayload(ctx context.Context, account string, id turn.ID, authority string) (turn.Redaction, error) {
	var r turn.Redaction
	if err := s.writeStep(ctx, s.redactStep(account, id, authority, s.now(), &r), nil); err != nil {
		return turn.Redaction{}, err
	}
	return r, nil
}

// LoadOutbox implements turn.OutboxReader.
func (s *Backend) LoadOutbox(ctx context.Context, id turn.ID) (turn.OutboxRecord, error) {
	return readOne(ctx, s, func(q querier) (turn.OutboxRecord, error) { return s.loadOutbox(ctx, q, id) })
}

// OutboxForCommand implements turn.OutboxReader.
func (s *Backend) OutboxForCommand(ctx context.Context, command turn.ID) ([]turn.OutboxRecord, error) {
	return readOne(ctx, s, func(q querier) ([]turn.OutboxRecord, error) { return s.outboxForCommand(ctx, q, command) })
}

// Enqueue implements turn.OutboxWriter.
func (s *Backend) Enqueue(ctx context.Context, e turn.OutboxEntry) error {
	return s.writeStep(ctx, s.enqueueStep("", e), nil)
}

// ClaimDue implements turn.OutboxWriter.
func (s *Backend) ClaimDue(ctx context.Context, now time.Time, limit int, workerID string) ([]turn.OutboxEntry, error) {
	if limit == 0 {
		return []turn.OutboxEntry{}, nil
	}
	var claimed []turn.OutboxEntry
	if err := s.writeStep(ctx, s.claimStep(now, limit, workerID, &claimed), nil); err != nil {
		return nil, err
	}
	return claimed, nil
}

// MarkCompleted implements turn.OutboxWriter.
func (s *Backend) MarkCompleted(ctx context.Context, id turn.ID) error {
	return s.writeStep(ctx, s.markCompletedStep(id, s.now()), nil)
}

// MarkFailed implements turn.OutboxWriter.
func (s *Backend) MarkFailed(ctx context.Context, id turn.ID, reason string, retryAt time.Time) error {
	return s.writeStep(ctx, s.markFailedStep(id, reason, retryAt, s.now()), nil)
}

// MarkOutcomeUnknown implements turn.OutboxWriter.
func (s *Backend) MarkOutcomeUnknown(ctx context.Context, id turn.ID, remoteRef string) error {
	return s.writeStep(ctx, s.markOutcomeUnknownStep(id, remoteRef), nil)
}

// Reschedule implements turn.OutboxWriter.
func (s *Backend) Reschedule(ctx context.Context, id turn.ID, next time.Time) error {
	return s.writeStep(ctx, s.rescheduleStep(id, next), nil)
}

// ReleaseExpiredClaims implements turn.OutboxWriter.
func (s *Backend) ReleaseExpiredClaims(ctx context.Context, claimedBefore time.Time) ([]turn.ID, error) {
	ids := []turn.ID{}
	if err := s.writeStep(ctx, s.releaseStep(claimedBefore, &ids), nil); err != nil {
		return nil, err
	}
	return ids, nil
}

// LoadReplay implements turn.ReplayReader.
func (s *Backend) LoadReplay(ctx context.Context, account string, id turn.ID) (turn.ReplayRecord, error) {
	return readOne(ctx, s, func(q querier) (turn.ReplayRecord, error) { return s.loadReplay(ctx, q, account, id) })
}

// ReplaysForConversation implements turn.ReplayReader.
func (s *Backend) ReplaysForConversation(ctx context.Context, account string, conversation turn.ID, limit int) ([]turn.ReplayRecord, error) {
	return readOne(ctx, s, func(q querier) ([]turn.ReplayRecord, error) {
		return s.replaysForConversation(ctx, q, account, conversation, limit)
	})
}

// PutReplay implements turn.ReplayWriter.
func (s *Backend) PutReplay(ctx context.Context, r turn.ReplayRecord) error {
	st, err := s.replayStep("", r)
	return s.writeStep(ctx, st, err)
}
