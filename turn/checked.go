package turn

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/steadhq/stead/internal/check"
)

// checked is the front NewStores puts before a backend, behind every role. Each method refuses
// bad input before the backend sees it (the error wraps ErrInvalid and nothing is written),
// refuses a call once the Stores are closed (ErrClosed) or when its context is already done,
// passes the backend normalised copies of its arguments (see the prepare methods) and limits
// resolved (see DefaultLimit), and normalises what comes back (normalise.go). The backend's
// errors come back as they are.
type checked struct {
	b Backend
	// mu is held for reading by every call in flight, so that close, which takes it for writing,
	// waits for them: a backend is never closed under a call and never called after close.
	mu     sync.RWMutex
	closed bool
}

var _ Backend = (*checked)(nil)

// enter admits a call, in the order of the execution store's front: every argument check must
// pass, then the Stores must be open and ctx not done, so that no backend has to check either. A
// nil error holds c.mu for reading: the caller defers c.leave.
func (c *checked) enter(ctx context.Context, checks ...error) error {
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		return fmt.Errorf("turn: stores: %w", ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		c.mu.RUnlock()
		return fmt.Errorf("turn: stores: %w", err)
	}
	return nil
}

func (c *checked) leave() { c.mu.RUnlock() }

// close waits for the calls in flight to return, then closes the backend if it is an io.Closer.
// Closing again is a no-op.
func (c *checked) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if closer, ok := c.b.(io.Closer); ok {
		return closer.Close()
	}
	return nil
}

// one returns v normalised by normalise, or the zero value with err.
func one[T any](v T, err error, normalise func(*T)) (T, error) {
	if err != nil {
		var zero T
		return zero, err
	}
	normalise(&v)
	return v, nil
}

// many returns xs normalised in place and never nil, or nil with err.
func many[T any](xs []T, err error, normalise func(*T)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	return list(xs, normalise), nil
}

func idList(ids []ID, err error) ([]ID, error) {
	return many(ids, err, func(*ID) {})
}

// LoadConversation implements ConversationReader.
func (c *checked) LoadConversation(ctx context.Context, account string, id ID) (Conversation, error) {
	if err := c.enter(ctx, ValidateAccount(account), ValidateID("conversation id", id)); err != nil {
		return Conversation{}, err
	}
	defer c.leave()
	v, err := c.b.LoadConversation(ctx, account, id)
	return one(v, err, (*Conversation).normalise)
}

// ListConversations implements ConversationReader.
func (c *checked) ListConversations(ctx context.Context, account string, limit int) ([]Conversation, error) {
	limit, limitErr := resolveLimit(limit)
	if err := c.enter(ctx, ValidateAccount(account), limitErr); err != nil {
		return nil, err
	}
	defer c.leave()
	v, err := c.b.ListConversations(ctx, account, limit)
	return many(v, err, (*Conversation).normalise)
}

// LoadRecentTurns implements ConversationReader.
func (c *checked) LoadRecentTurns(ctx context.Context, account string, conversation ID, limit int) ([]Turn, error) {
	limit, limitErr := resolveLimit(limit)
	if err := c.enter(ctx, ValidateAccount(account), ValidateID("conversation id", conversation), limitErr); err != nil {
		return nil, err
	}
	defer c.leave()
	v, err := c.b.LoadRecentTurns(ctx, account, conversation, limit)
	return many(v, err, (*Turn).normalise)
}

// LoadTurn implements ConversationReader.
func (c *checked) LoadTurn(ctx context.Context, account string, turn ID) (Turn, error) {
	if err := c.enter(ctx, ValidateAccount(account), ValidateID("turn id", turn)); err != nil {
		return Turn{}, err
	}
	defer c.leave()
	v, err := c.b.LoadTurn(ctx, account, turn)
	return one(v, err, (*Turn).normalise)
}

// TurnPhase implements ConversationReader.
func (c *checked) TurnPhase(ctx context.Context, account string, turn ID) (PhaseMarker, error) {
	if err := c.enter(ctx, ValidateAccount(account), ValidateID("turn id", turn)); err != nil {
		return PhaseMarker{}, err
	}
	defer c.leave()
	v, err := c.b.TurnPhase(ctx, account, turn)
	return one(v, err, (*PhaseMarker).normalise)
}

// ListUnfinishedTurns implements ConversationReader. The scope's account is optional: empty
// spans every account.
func (c *checked) ListUnfinishedTurns(ctx context.Context, scope RecoveryScope, limit int) ([]PhaseMarker, error) {
	limit, limitErr := resolveLimit(limit)
	var scopeErr error
	if scope.AccountID != "" {
		scopeErr = ValidateAccount(scope.AccountID)
	}
	if err := c.enter(ctx, scopeErr, limitErr); err != nil {
		return nil, err
	}
	defer c.leave()
	v, err := c.b.ListUnfinishedTurns(ctx, scope, limit)
	return many(v, err, (*PhaseMarker).normalise)
}

// CreateConversation implements ConversationWriter.
func (c *checked) CreateConversation(ctx context.Context, conv Conversation) error {
	conv, err := conv.prepare()
	if err := c.enter(ctx, err); err != nil {
		return err
	}
	defer c.leave()
	return c.b.CreateConversation(ctx, conv)
}

// AppendUserTurn implements ConversationWriter.
func (c *checked) AppendUserTurn(ctx context.Context, t UserTurn) error {
	t, err := t.prepare()
	if err := c.enter(ctx, err); err != nil {
		return err
	}
	defer c.leave()
	return c.b.AppendUserTurn(ctx, t)
}

// AppendAssistantTurn implements ConversationWriter.
func (c *checked) AppendAssistantTurn(ctx context.Context, account string, t AssistantTurn) error {
	t, err := t.prepare()
	if err := c.enter(ctx, ValidateAccount(account), err); err != nil {
		return err
	}
	defer c.leave()
	return c.b.AppendAssistantTurn(ctx, account, t)
}

// SetTurnPhase implements ConversationWriter.
func (c *checked) SetTurnPhase(ctx context.Context, account string, turn ID, phase Phase) (PhaseMarker, error) {
	if err := c.enter(ctx, ValidateAccount(account), ValidateID("turn id", turn), validPhase(phase)); err != nil {
		return PhaseMarker{}, err
	}
	defer c.leave()
	v, err := c.b.SetTurnPhase(ctx, account, turn, phase)
	return one(v, err, (*PhaseMarker).normalise)
}

// LoadInteraction implements InteractionReader.
func (c *checked) LoadInteraction(ctx context.Context, account string, id ID) (InteractionRecord, error) {
	if err := c.enter(ctx, ValidateAccount(account), ValidateID("interaction id", id)); err != nil {
		return InteractionRecord{}, err
	}
	defer c.leave()
	v, err := c.b.LoadInteraction(ctx, account, id)
	return one(v, err, (*InteractionRecord).normalise)
}

// InteractionsForTurn implements InteractionReader.
func (c *checked) InteractionsForTurn(ctx context.Context, account string, turn ID) ([]InteractionRecord, error) {
	if err := c.enter(ctx, ValidateAccount(account), ValidateID("turn id", turn)); err != nil {
		return nil, err
	}
	defer c.leave()
	v, err := c.b.InteractionsForTurn(ctx, account, turn)
	return many(v, err, (*InteractionRecord).normalise)
}

// ListOpenForConversation implements InteractionReader.
func (c *checked) ListOpenForConversation(ctx context.Context, account string, conversation ID) ([]InteractionRecord, error) {
	if err := c.enter(ctx, ValidateAccount(account), ValidateID("conversation id", conversation)); err != nil {
		return nil, err
	}
	defer c.leave()
	v, err := c.b.ListOpenForConversation(ctx, account, conversation)
	return many(v, err, (*InteractionRecord).normalise)
}

// ListOpenForCase implements InteractionReader.
func (c *checked) ListOpenForCase(ctx context.Context, account string, key CaseKey) ([]InteractionRecord, error) {
	if err := c.enter(ctx, ValidateAccount(account), key.Validate()); err != nil {
		return nil, err
	}
	defer c.leave()
	v, err := c.b.ListOpenForCase(ctx, account, key)
	return many(v, err, (*InteractionRecord).normalise)
}

// BlockingAnsweredAt implements InteractionReader.
func (c *checked) BlockingAnsweredAt(ctx context.Context, account string, key CaseKey, revision Revision) (bool, error) {
	if err := c.enter(ctx, ValidateAccount(account), key.Validate(), ValidateRevision("revision", revision)); err != nil {
		return false, err
	}
	defer c.leave()
	return c.b.BlockingAnsweredAt(ctx, account, key, revision)
}

// InsertInteraction implements InteractionWriter.
func (c *checked) InsertInteraction(ctx context.Context, it Interaction) error {
	it, err := it.prepareInsert()
	if err := c.enter(ctx, err); err != nil {
		return err
	}
	defer c.leave()
	return c.b.InsertInteraction(ctx, it)
}

// InsertReplacingBlocking implements InteractionWriter.
func (c *checked) InsertReplacingBlocking(ctx context.Context, it Interaction) ([]ID, error) {
	it, err := it.prepareInsert()
	if err := c.enter(ctx, err); err != nil {
		return nil, err
	}
	defer c.leave()
	return idList(c.b.InsertReplacingBlocking(ctx, it))
}

// BeginResolution implements InteractionWriter. An expected status that is no status at all is
// bad input; a real status other than active is a legal question with a refusal for an answer
// (ErrConflict, from the backend).
func (c *checked) BeginResolution(ctx context.Context, account string, id ID, expected InteractionStatus, optionID string, resolvedBy ID) (InteractionRecord, error) {
	if err := c.enter(ctx, ValidateAccount(account), ValidateID("interaction id", id), validStatus(expected),
		ValidateText("option id", optionID), ValidateID("resolved by turn", resolvedBy)); err != nil {
		return InteractionRecord{}, err
	}
	defer c.leave()
	v, err := c.b.BeginResolution(ctx, account, id, expected, optionID, resolvedBy)
	return one(v, err, (*InteractionRecord).normalise)
}

// FinishResolution implements InteractionWriter.
func (c *checked) FinishResolution(ctx context.Context, account string, id ID, outcome ResolutionOutcome) (InteractionRecord, error) {
	if err := c.enter(ctx, ValidateAccount(account), ValidateID("interaction id", id), outcome.Validate()); err != nil {
		return InteractionRecord{}, err
	}
	defer c.leave()
	v, err := c.b.FinishResolution(ctx, account, id, outcome)
	return one(v, err, (*InteractionRecord).normalise)
}

// InvalidateForCase implements InteractionWriter.
func (c *checked) InvalidateForCase(ctx context.Context, account string, key CaseKey, newRevision Revision, reason InvalidationReason) ([]ID, error) {
	if err := c.enter(ctx, ValidateAccount(account), key.Validate(), ValidateRevision("new revision", newRevision), reason.Validate()); err != nil {
		return nil, err
	}
	defer c.leave()
	return idList(c.b.InvalidateForCase(ctx, account, key, newRevision, reason))
}

// InvalidateCaseCards implements InteractionWriter.
func (c *checked) InvalidateCaseCards(ctx context.Context, account string, key CaseKey, reason InvalidationReason) ([]ID, error) {
	if err := c.enter(ctx, ValidateAccount(account), key.Validate(), reason.Validate()); err != nil {
		return nil, err
	}
	defer c.leave()
	return idList(c.b.InvalidateCaseCards(ctx, account, key, reason))
}

// ExpireDue implements InteractionWriter.
func (c *checked) ExpireDue(ctx context.Context, now time.Time) ([]ID, error) {
	now, err := check.RequiredTime("now", now)
	if err := c.enter(ctx, err); err != nil {
		return nil, err
	}
	defer c.leave()
	return idList(c.b.ExpireDue(ctx, now))
}

// LoadCommand implements JournalReader.
func (c *checked) LoadCommand(ctx context.Context, account string, command ID) (JournalEntry, error) {
	if err := c.enter(ctx, ValidateAccount(account), ValidateID("command id", command)); err != nil {
		return JournalEntry{}, err
	}
	defer c.leave()
	v, err := c.b.LoadCommand(ctx, account, command)
	return one(v, err, (*JournalEntry).normalise)
}

// CommandsForTurn implements JournalReader.
func (c *checked) CommandsForTurn(ctx context.Context, account string, turn ID) ([]JournalEntry, error) {
	if err := c.enter(ctx, ValidateAccount(account), ValidateID("turn id", turn)); err != nil {
		return nil, err
	}
	defer c.leave()
	v, err := c.b.CommandsForTurn(ctx, account, turn)
	return many(v, err, (*JournalEntry).normalise)
}

// PendingForTurn implements JournalReader.
func (c *checked) PendingForTurn(ctx context.Context, account string, turn ID) ([]JournalEntry, error) {
	if err := c.enter(ctx, ValidateAccount(account), ValidateID("turn id", turn)); err != nil {
		return nil, err
	}
	defer c.leave()
	v, err := c.b.PendingForTurn(ctx, account, turn)
	return many(v, err, (*JournalEntry).normalise)
}

// BeginCommand implements JournalWriter.
func (c *checked) BeginCommand(ctx context.Context, e JournalEntry) (Admission, error) {
	e, err := e.prepareAdmission()
	if err := c.enter(ctx, err); err != nil {
		return Admission{}, err
	}
	defer c.leave()
	a, err := c.b.BeginCommand(ctx, e)
	return one(a, err, func(a *Admission) { a.Entry.normalise() })
}

// MarkExecuting implements JournalWriter.
func (c *checked) MarkExecuting(ctx context.Context, account string, command ID) error {
	if err := c.enter(ctx, ValidateAccount(account), ValidateID("command id", command)); err != nil {
		return err
	}
	defer c.leave()
	return c.b.MarkExecuting(ctx, account, command)
}

// CompleteCommand implements JournalWriter.
func (c *checked) CompleteCommand(ctx context.Context, account string, command ID, outcome JournalOutcome) error {
	outcome, err := outcome.prepare()
	if err := c.enter(ctx, ValidateAccount(account), ValidateID("command id", command), err); err != nil {
		return err
	}
	defer c.leave()
	return c.b.CompleteCommand(ctx, account, command, outcome)
}

// ListSince implements EventReader.
func (c *checked) ListSince(ctx context.Context, account string, key CaseKey, since Revision, limit int) ([]Event, error) {
	limit, limitErr := resolveLimit(limit)
	if err := c.enter(ctx, ValidateAccount(account), key.Validate(), ValidateRevision("since", since), limitErr); err != nil {
		return nil, err
	}
	defer c.leave()
	v, err := c.b.ListSince(ctx, account, key, since, limit)
	return many(v, err, (*Event).normalise)
}

// ReadFrom implements EventReader, and accepts exactly the cursors a read of the account's stream
// can produce (see Cursor): Start, or the sequence of one of the account's events. It proves the
// second without a read of its own, by asking the backend for the page one sequence earlier and
// one event longer: that page starts with the cursor's own event exactly when the cursor is one.
func (c *checked) ReadFrom(ctx context.Context, account string, after Cursor, limit int) (EventPage, error) {
	limit, limitErr := resolveLimit(limit)
	if err := c.enter(ctx, ValidateAccount(account), ValidateCursor(after), limitErr); err != nil {
		return EventPage{}, err
	}
	defer c.leave()
	if after == Start {
		page, err := c.b.ReadFrom(ctx, account, after, limit)
		return one(page, err, func(p *EventPage) { p.normalise(after) })
	}
	page, err := c.b.ReadFrom(ctx, account, after-1, limit+1)
	if err != nil {
		return EventPage{}, err
	}
	if len(page.Events) == 0 || page.Events[0].Sequence != int64(after) {
		return EventPage{}, check.Invalidf("cursor %d is not a position in the stream of account %q: no read produced it", after, account)
	}
	page.Events = page.Events[1:]
	page.normalise(after)
	return page, nil
}

// normalise makes the page's events and its Next the contract's: Next is the last event's
// sequence, or the cursor that was asked for when the page is empty.
func (p *EventPage) normalise(after Cursor) {
	p.Events = list(p.Events, (*Event).normalise)
	p.Next = after
	if n := len(p.Events); n > 0 {
		p.Next = After(p.Events[n-1].Sequence)
	}
}

// LoadEvents implements EventReader.
func (c *checked) LoadEvents(ctx context.Context, account string, ids []ID) ([]Event, error) {
	if err := c.enter(ctx, ValidateAccount(account), validIDs("event id", ids)); err != nil {
		return nil, err
	}
	defer c.leave()
	v, err := c.b.LoadEvents(ctx, account, ids)
	return many(v, err, (*Event).normalise)
}

// CountEvents implements EventReader.
func (c *checked) CountEvents(ctx context.Context, account string, key CaseKey) (int64, error) {
	if err := c.enter(ctx, ValidateAccount(account), key.Validate()); err != nil {
		return 0, err
	}
	defer c.leave()
	return c.b.CountEvents(ctx, account, key)
}

// AppendEvents implements EventWriter.
func (c *checked) AppendEvents(ctx context.Context, b EventBatch) ([]ID, error) {
	b, err := b.prepare()
	if err := c.enter(ctx, err); err != nil {
		return nil, err
	}
	defer c.leave()
	return idList(c.b.AppendEvents(ctx, b))
}

// RedactPayload implements EventWriter.
func (c *checked) RedactPayload(ctx context.Context, account string, event ID, authority string) (Redaction, error) {
	if err := c.enter(ctx, ValidateAccount(account), ValidateID("event id", event), ValidateKey("authority", authority)); err != nil {
		return Redaction{}, err
	}
	defer c.leave()
	v, err := c.b.RedactPayload(ctx, account, event, authority)
	return one(v, err, (*Redaction).normalise)
}

// LoadOutbox implements OutboxReader.
func (c *checked) LoadOutbox(ctx context.Context, id ID) (OutboxRecord, error) {
	if err := c.enter(ctx, ValidateID("outbox id", id)); err != nil {
		return OutboxRecord{}, err
	}
	defer c.leave()
	v, err := c.b.LoadOutbox(ctx, id)
	return one(v, err, (*OutboxRecord).normalise)
}

// OutboxForCommand implements OutboxReader.
func (c *checked) OutboxForCommand(ctx context.Context, command ID) ([]OutboxRecord, error) {
	if err := c.enter(ctx, ValidateID("command id", command)); err != nil {
		return nil, err
	}
	defer c.leave()
	v, err := c.b.OutboxForCommand(ctx, command)
	return many(v, err, (*OutboxRecord).normalise)
}

// Enqueue implements OutboxWriter.
func (c *checked) Enqueue(ctx context.Context, e OutboxEntry) error {
	e, err := e.prepareEnqueue()
	if err := c.enter(ctx, err); err != nil {
		return err
	}
	defer c.leave()
	return c.b.Enqueue(ctx, e)
}

// ClaimDue implements OutboxWriter.
func (c *checked) ClaimDue(ctx context.Context, now time.Time, limit int, workerID string) ([]OutboxEntry, error) {
	limit, limitErr := resolveLimit(limit)
	now, err := check.RequiredTime("now", now)
	if err := c.enter(ctx, err, limitErr, ValidateKey("worker id", workerID)); err != nil {
		return nil, err
	}
	defer c.leave()
	v, err := c.b.ClaimDue(ctx, now, limit, workerID)
	return many(v, err, (*OutboxEntry).normalise)
}

// MarkCompleted implements OutboxWriter.
func (c *checked) MarkCompleted(ctx context.Context, id ID) error {
	if err := c.enter(ctx, ValidateID("outbox id", id)); err != nil {
		return err
	}
	defer c.leave()
	return c.b.MarkCompleted(ctx, id)
}

// MarkFailed implements OutboxWriter.
func (c *checked) MarkFailed(ctx context.Context, id ID, reason string, retryAt time.Time) error {
	retryAt, err := check.Time("retry at", retryAt)
	if err := c.enter(ctx, ValidateID("outbox id", id), ValidateKey("reason", reason), err); err != nil {
		return err
	}
	defer c.leave()
	return c.b.MarkFailed(ctx, id, reason, retryAt)
}

// MarkOutcomeUnknown implements OutboxWriter.
func (c *checked) MarkOutcomeUnknown(ctx context.Context, id ID, remoteRef string) error {
	if err := c.enter(ctx, ValidateID("outbox id", id), ValidateText("remote ref", remoteRef)); err != nil {
		return err
	}
	defer c.leave()
	return c.b.MarkOutcomeUnknown(ctx, id, remoteRef)
}

// Reschedule implements OutboxWriter.
func (c *checked) Reschedule(ctx context.Context, id ID, next time.Time) error {
	next, err := check.Time("next attempt at", next)
	if err := c.enter(ctx, ValidateID("outbox id", id), err); err != nil {
		return err
	}
	defer c.leave()
	return c.b.Reschedule(ctx, id, next)
}

// ReleaseExpiredClaims implements OutboxWriter.
func (c *checked) ReleaseExpiredClaims(ctx context.Context, claimedBefore time.Time) ([]ID, error) {
	claimedBefore, err := check.RequiredTime("claimed before", claimedBefore)
	if err := c.enter(ctx, err); err != nil {
		return nil, err
	}
	defer c.leave()
	return idList(c.b.ReleaseExpiredClaims(ctx, claimedBefore))
}

// LoadReplay implements ReplayReader.
func (c *checked) LoadReplay(ctx context.Context, account string, turn ID) (ReplayRecord, error) {
	if err := c.enter(ctx, ValidateAccount(account), ValidateID("turn id", turn)); err != nil {
		return ReplayRecord{}, err
	}
	defer c.leave()
	v, err := c.b.LoadReplay(ctx, account, turn)
	return one(v, err, (*ReplayRecord).normalise)
}

// ReplaysForConversation implements ReplayReader.
func (c *checked) ReplaysForConversation(ctx context.Context, account string, conversation ID, limit int) ([]ReplayRecord, error) {
	limit, limitErr := resolveLimit(limit)
	if err := c.enter(ctx, ValidateAccount(account), ValidateID("conversation id", conversation), limitErr); err != nil {
		return nil, err
	}
	defer c.leave()
	v, err := c.b.ReplaysForConversation(ctx, account, conversation, limit)
	return many(v, err, (*ReplayRecord).normalise)
}

// PutReplay implements ReplayWriter.
func (c *checked) PutReplay(ctx context.Context, r ReplayRecord) error {
	r, err := r.prepare()
	if err := c.enter(ctx, err); err != nil {
		return err
	}
	defer c.leave()
	return c.b.PutReplay(ctx, r)
}

// Commit implements CommitStore.
func (c *checked) Commit(ctx context.Context, account string, b Bundle) (Receipt, error) {
	b, err := PrepareCommit(account, b)
	if err := c.enter(ctx, err); err != nil {
		return Receipt{}, err
	}
	defer c.leave()
	r, err := c.b.Commit(ctx, account, b)
	return one(r, err, (*Receipt).normalise)
}
