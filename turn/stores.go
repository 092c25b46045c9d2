package turn

import (
	"context"
	"time"
)

// The interfaces below are what users call and what a backend implements alike; the rules are
// split between the two sides of the seam.
//
// The checked Stores (NewStores) keep the rules that need no stored state, once for every
// backend: bad input (zero ids, empty accounts, unknown enum values, invalid text or JSON, times
// outside the years 1 to 9999 in UTC, negative limits and limits above MaxLimit, cursors no read
// produced) is refused with an error matching ErrInvalid before anything is written; so is, with
// ErrClosed or the context's error, a call after Close or with a context already done. Arguments
// reach the backend normalised (see PrepareCommit) and results come back normalised (UTC
// microsecond times, non-nil lists). A limit is an upper bound, read by the execution store's
// rule: 0 asks for DefaultLimit, and the backend is always given one from 1 to MaxLimit.
//
// A backend keeps the rules that depend on what is stored:
//   - every lookup and write is scoped by account (except the outbox, a system queue): another
//     tenant's id is ErrNotFound, exactly like an id that never existed, on reads and on writes;
//   - status changes are compare-and-swap against the state the rule requires, never blind
//     overwrites; a refused write changes nothing;
//   - lists have the orders stated on each method.

// ConversationReader reads conversations, turns and their phase markers.
type ConversationReader interface {
	// LoadConversation returns the conversation, or ErrNotFound.
	LoadConversation(ctx context.Context, account string, id ID) (Conversation, error)
	// ListConversations returns the account's newest limit conversations, oldest first, ordered
	// by (created_at, conversation_id). An account with none has an empty list, never
	// ErrNotFound: an account is not a row of its own.
	ListConversations(ctx context.Context, account string, limit int) ([]Conversation, error)
	// LoadRecentTurns returns the newest limit turns of the conversation, oldest first, ordered
	// by (received_at, turn_id). A conversation that is not this account's is ErrNotFound, never
	// an empty list.
	LoadRecentTurns(ctx context.Context, account string, conversation ID, limit int) ([]Turn, error)
	// LoadTurn returns the user turn, the assistant turn once attached, and the current phase.
	LoadTurn(ctx context.Context, account string, turn ID) (Turn, error)
	// TurnPhase returns the phase marker of the turn.
	TurnPhase(ctx context.Context, account string, turn ID) (PhaseMarker, error)
	// ListUnfinishedTurns returns at most limit markers whose phase is not terminal, oldest first
	// by (turn received_at, turn_id). With AllAccounts it spans every tenant (crash recovery).
	ListUnfinishedTurns(ctx context.Context, scope RecoveryScope, limit int) ([]PhaseMarker, error)
}

// ConversationWriter writes conversations, turns and their phase markers.
type ConversationWriter interface {
	// CreateConversation inserts the conversation; ErrConflict if (account, id) exists.
	CreateConversation(ctx context.Context, c Conversation) error
	// AppendUserTurn inserts the turn under its actor's account together with its phase marker at
	// received (stamped by the store's clock). ErrNotFound if the conversation does not exist for
	// that account; ErrConflict if (account, turn id) exists.
	AppendUserTurn(ctx context.Context, t UserTurn) error
	// AppendAssistantTurn attaches the assistant turn exactly as given. The checks run in this
	// order: ErrNotFound (no such turn for the account), CodeIdentityMismatch (its conversation
	// differs from the stored turn's), ErrConflict (already answered).
	AppendAssistantTurn(ctx context.Context, account string, t AssistantTurn) error
	// SetTurnPhase moves the marker to phase (updated_at from the store's clock) and returns it.
	// Setting the current phase again is accepted and refreshes updated_at; leaving a terminal
	// phase is ErrConflict.
	SetTurnPhase(ctx context.Context, account string, turn ID, phase Phase) (PhaseMarker, error)
}

// ConversationStore is both halves.
type ConversationStore interface {
	ConversationReader
	ConversationWriter
}

// InteractionReader reads interactions (cards).
type InteractionReader interface {
	// LoadInteraction returns the card with its resolution record, or ErrNotFound.
	LoadInteraction(ctx context.Context, account string, id ID) (InteractionRecord, error)
	// InteractionsForTurn returns every card the turn created (Interaction.CreatedByTurn) or
	// answered (ResolvedByTurn), whatever its status, ordered by (created_at, id). A turn with no
	// card, or not the account's, has an empty list.
	InteractionsForTurn(ctx context.Context, account string, turn ID) ([]InteractionRecord, error)
	// ListOpenForConversation returns the open (active or resolving) cards of the conversation,
	// ordered by (created_at, id).
	ListOpenForConversation(ctx context.Context, account string, conversation ID) ([]InteractionRecord, error)
	// ListOpenForCase returns the open cards of the case, ordered by (created_at, id).
	ListOpenForCase(ctx context.Context, account string, key CaseKey) ([]InteractionRecord, error)
	// BlockingAnsweredAt reports whether a blocking card on the case, bound to exactly this
	// revision, was answered (resolved, declined or dismissed). Invalidated and expired cards do
	// not count: the user never answered them. A revision-independent card is bound to no
	// revision and never counts.
	BlockingAnsweredAt(ctx context.Context, account string, key CaseKey, revision Revision) (bool, error)
}

// InteractionWriter writes interactions (cards).
type InteractionWriter interface {
	// InsertInteraction inserts a new card, which must be active (else CodeInvalidRecord).
	// ErrConflict if the id exists for the account, or if the card is blocking and its case
	// already has an open blocking card (at most one per account and case).
	InsertInteraction(ctx context.Context, it Interaction) error
	// InsertReplacingBlocking is InsertInteraction, except that an active blocking occupant of the
	// case's slot is first invalidated as superseded by the new card. It returns the ids it
	// invalidated (none when the slot was free or the card is not blocking). A resolving occupant
	// is never replaced: ErrConflict.
	InsertReplacingBlocking(ctx context.Context, it Interaction) ([]ID, error)
	// BeginResolution moves the card from expected to resolving, recording the chosen option, the
	// answering turn and resolved_at (the store's clock), and returns the record. Only active is a
	// legal source: any other expected status, or a card not in expected, is ErrConflict; an
	// expected value that is no InteractionStatus at all is ErrInvalid, like every unknown enum.
	BeginResolution(ctx context.Context, account string, id ID, expected InteractionStatus, optionID string, resolvedBy ID) (InteractionRecord, error)
	// FinishResolution settles a resolving card with outcome and returns the record. Repeating a
	// finish that already settled the card the same way is accepted and changes nothing; any other
	// state is ErrConflict.
	FinishResolution(ctx context.Context, account string, id ID, outcome ResolutionOutcome) (InteractionRecord, error)
	// InvalidateForCase invalidates every active card on the case that is bound to a revision
	// other than newRevision (revision-independent cards are spared), recording the reason,
	// newRevision and the store's time. Resolving cards are left alone. It returns the ids
	// ordered by (created_at, id).
	InvalidateForCase(ctx context.Context, account string, key CaseKey, newRevision Revision, reason InvalidationReason) ([]ID, error)
	// InvalidateCaseCards invalidates every active card on the case whatever its revision (the
	// operator's path), with no new revision recorded. Resolving cards are left alone. It returns
	// the ids ordered by (created_at, id).
	InvalidateCaseCards(ctx context.Context, account string, key CaseKey, reason InvalidationReason) ([]ID, error)
	// ExpireDue expires, across every account, each active card whose expires_at is at or before
	// now (required), and returns their ids ordered by (account, id).
	ExpireDue(ctx context.Context, now time.Time) ([]ID, error)
}

// InteractionStore is both halves.
type InteractionStore interface {
	InteractionReader
	InteractionWriter
}

// JournalReader reads the command journal.
type JournalReader interface {
	// LoadCommand returns the entry, or ErrNotFound.
	LoadCommand(ctx context.Context, account string, command ID) (JournalEntry, error)
	// CommandsForTurn returns every entry of the turn, ordered by (created_at, command_id).
	CommandsForTurn(ctx context.Context, account string, turn ID) ([]JournalEntry, error)
	// PendingForTurn returns the entries of the turn a recovery must resume (pending or
	// executing; never awaiting_confirmation), in the same order.
	PendingForTurn(ctx context.Context, account string, turn ID) ([]JournalEntry, error)
}

// JournalWriter writes the command journal.
type JournalWriter interface {
	// BeginCommand admits the entry under its (account, idempotency key). A new key persists the
	// entry as given and is Fresh; an existing key writes nothing and replays the persisted entry,
	// whatever its status. There is never a second Fresh for a key. ErrConflict if the command id
	// exists for the account under another key. The entry must be pending or
	// awaiting_confirmation, with no result and no completed_at (else CodeInvalidRecord).
	BeginCommand(ctx context.Context, e JournalEntry) (Admission, error)
	// MarkExecuting moves a pending or awaiting_confirmation entry to executing; an executing
	// entry is accepted unchanged; any other status is ErrConflict.
	MarkExecuting(ctx context.Context, account string, command ID) error
	// CompleteCommand records the outcome and moves the entry to outcome.Status(), stamping
	// completed_at, if the journal allows that transition. An entry already in that status with an
	// equal outcome is accepted unchanged; otherwise ErrConflict.
	CompleteCommand(ctx context.Context, account string, command ID, outcome JournalOutcome) error
}

// JournalStore is both halves.
type JournalStore interface {
	JournalReader
	JournalWriter
}

// EventReader reads the append-only event journal.
type EventReader interface {
	// ListSince returns the case's events with case_revision > since, in append order, at most
	// limit. It is a cap, not a page: it may cut a revision in half and cannot resume. Use
	// ReadFrom to consume a stream.
	ListSince(ctx context.Context, account string, key CaseKey, since Revision, limit int) ([]Event, error)
	// ReadFrom returns the account's events with a sequence after the cursor, across every case,
	// in sequence order, at most limit (other tenants' events never count toward it). Passing back
	// page.Next delivers every event exactly once, in commit order, even while the journal grows.
	// A cursor no read of this account's stream can have produced is ErrInvalid (see Cursor).
	//
	// Sequences, and so cursors, are global to the store, not per account: the gap between the
	// sequences of two of an account's events is how many events other tenants appended between
	// them, plus the values rolled-back appends consumed (PostgreSQL). A tenant that sees its
	// events' sequences or its cursors can therefore count other tenants' appends over time,
	// though never learn whose they were or what they said. Where that volume is itself
	// confidential, keep sequences and cursors on the server side of the tenant boundary (or give
	// such a tenant a store of its own).
	ReadFrom(ctx context.Context, account string, after Cursor, limit int) (EventPage, error)
	// LoadEvents returns the events that exist for the account, in the requested order (a
	// repeated id is returned repeated). Unknown and foreign ids are silently omitted.
	LoadEvents(ctx context.Context, account string, ids []ID) ([]Event, error)
	// CountEvents returns how many events the case has, redacted ones included.
	CountEvents(ctx context.Context, account string, key CaseKey) (int64, error)
}

// EventWriter appends to and erases payloads in the event journal.
type EventWriter interface {
	// AppendEvents appends the batch atomically, assigning increasing sequences in batch order,
	// and returns the event ids in batch order. An account's events must become visible in
	// sequence order, or a ReadFrom cursor would pass over one that commits late: a backend whose
	// sequences can commit out of order (two PostgreSQL transactions drawing from one identity)
	// serializes the appends of an account, in AppendEvents and in Commit alike, for example with
	// a per-account lock held until the transaction ends. An empty batch is CodeInvalidRecord; an event id
	// that exists for the account, or repeats within the batch, is ErrConflict. Either way
	// nothing of the batch is written.
	AppendEvents(ctx context.Context, b EventBatch) ([]ID, error)
	// RedactPayload erases the event's payload in place (it becomes JSON null) and records who
	// erased it and when. The event keeps its id, type, sequence, revision, command, occurred_at
	// and its place in every read. Repeating it (with any authority) changes nothing and returns
	// the first record. ErrNotFound for an unknown or foreign id.
	RedactPayload(ctx context.Context, account string, event ID, authority string) (Redaction, error)
}

// EventStore is both halves.
type EventStore interface {
	EventReader
	EventWriter
}

// OutboxReader reads the outbox. The outbox has no account: it is addressed by outbox id, which
// never comes from user input.
type OutboxReader interface {
	// LoadOutbox returns the row, or ErrNotFound.
	LoadOutbox(ctx context.Context, id ID) (OutboxRecord, error)
	// OutboxForCommand returns the rows of the command ordered by (created_at, outbox_id).
	OutboxForCommand(ctx context.Context, command ID) ([]OutboxRecord, error)
}

// OutboxWriter writes the outbox. A refused settlement changes nothing at all.
type OutboxWriter interface {
	// Enqueue inserts the entry, which must be pending (else CodeInvalidRecord). ErrConflict if
	// the outbox id, or the (destination, idempotency key) pair, exists.
	Enqueue(ctx context.Context, e OutboxEntry) error
	// ClaimDue claims up to limit pending rows due at now (required; next_attempt_at zero or <= now),
	// oldest first by (created_at, outbox_id): each moves to dispatching, its attempt count grows
	// by one, and the claim {workerID, now} is recorded. It returns the updated entries in that
	// order. A row is never handed to two claimers at once.
	ClaimDue(ctx context.Context, now time.Time, limit int, workerID string) ([]OutboxEntry, error)
	// MarkCompleted settles a dispatching or outcome_unknown row as completed (completed_at from
	// the store's clock, claim cleared). A completed row is accepted unchanged; any other status
	// is ErrConflict.
	MarkCompleted(ctx context.Context, id ID) error
	// MarkFailed records a failed attempt with a stable reason code. With a non-zero retryAt, a
	// pending, dispatching or outcome_unknown row goes back to pending, due at retryAt. With a
	// zero retryAt, a dispatching or outcome_unknown row is settled as failed (completed_at from
	// the store's clock); a failed row is accepted unchanged (its first reason is kept). Every
	// other case is ErrConflict; the claim is cleared on success.
	MarkFailed(ctx context.Context, id ID, reason string, retryAt time.Time) error
	// MarkOutcomeUnknown moves a dispatching row to outcome_unknown, recording remoteRef (which
	// may be empty) and clearing the claim. On an outcome_unknown row it is accepted and only
	// fills remoteRef if none is recorded. Any other status is ErrConflict. A sweep never claims
	// an outcome_unknown row: only reconciliation moves it.
	MarkOutcomeUnknown(ctx context.Context, id ID, remoteRef string) error
	// Reschedule moves a pending, dispatching or outcome_unknown row to pending, due at next,
	// clearing the claim and keeping the last failure. ErrConflict on a settled row.
	Reschedule(ctx context.Context, id ID, next time.Time) error
	// ReleaseExpiredClaims returns to pending, due immediately, every dispatching row whose claim
	// was taken strictly before claimedBefore (required), clearing the claim (the attempt count is kept). It
	// returns their ids in id order.
	ReleaseExpiredClaims(ctx context.Context, claimedBefore time.Time) ([]ID, error)
}

// OutboxStore is both halves.
type OutboxStore interface {
	OutboxReader
	OutboxWriter
}

// ReplayReader reads replay records.
type ReplayReader interface {
	// LoadReplay returns the turn's record, or ErrNotFound.
	LoadReplay(ctx context.Context, account string, turn ID) (ReplayRecord, error)
	// ReplaysForConversation returns the newest limit records of the conversation, oldest first,
	// ordered by (recorded_at, turn_id).
	ReplaysForConversation(ctx context.Context, account string, conversation ID, limit int) ([]ReplayRecord, error)
}

// ReplayWriter writes replay records.
type ReplayWriter interface {
	// PutReplay inserts or wholly replaces the record of (account, turn): one record per turn,
	// never a history.
	PutReplay(ctx context.Context, r ReplayRecord) error
}

// ReplayStore is both halves.
type ReplayStore interface {
	ReplayReader
	ReplayWriter
}

// CommitStore applies a bundle all-or-nothing.
type CommitStore interface {
	// Commit validates the bundle for account (Bundle.Validate), then applies its items in the
	// fixed order documented on Bundle, each by the same rule as the standalone method, and
	// returns the receipt. On any error nothing of the bundle is visible, including the records it
	// modified.
	Commit(ctx context.Context, account string, b Bundle) (Receipt, error)
}

// Backend is the storage seam: one implementation of all seven roles, as a backend provides
// it. Its methods may assume what the checked Stores guarantee: every argument passed the checks
// documented on the method and on PrepareCommit, times are in UTC at microsecond precision,
// empty documents are nil. A backend runs storage code only: the rules that depend on stored
// state, in the orders stated. What it returns belongs to the caller (the front normalises
// results in place). Hand it to NewStores; never give it to users directly.
type Backend interface {
	ConversationStore
	InteractionStore
	JournalStore
	EventStore
	OutboxStore
	ReplayStore
	CommitStore
}

// Stores holds one implementation per role. It is a small value: copy it freely; every copy of
// the Stores NewStores returned shares one front, so closing one closes them all.
type Stores struct {
	Conversations ConversationStore
	Interactions  InteractionStore
	Journal       JournalStore
	Events        EventStore
	Outbox        OutboxStore
	Replay        ReplayStore
	Commits       CommitStore

	front *checked // set by NewStores
}

// NewStores puts b behind every role, each a checking front: every call is checked and its
// arguments normalised before it reaches b, and its results are normalised on the way back, so
// every backend answers alike. Backend constructors (memturn.New, pgturn.New) return it.
func NewStores(b Backend) Stores {
	c := &checked{b: b}
	return Stores{Conversations: c, Interactions: c, Journal: c, Events: c, Outbox: c, Replay: c, Commits: c, front: c}
}

// Backend returns the backend NewStores put behind the roles, for a feature only that backend
// has (pgturn's CommitIn): assert it to the backend's type. Its methods skip every check of the
// front; a backend-specific feature runs the exported checks itself (PrepareCommit). It is nil
// for Stores assembled by hand.
func (s Stores) Backend() Backend {
	if s.front == nil {
		return nil
	}
	return s.front.b
}

// Close waits for the calls in flight through these Stores, their copies and their read-only
// view to return, makes every later call fail with ErrClosed before it reaches the backend, then
// closes the backend if it is an io.Closer: a backend is never closed under a call. No bundled
// backend closes what the application gave it: a pgturn backend leaves its pool open, a
// sqliteturn backend releases its prepared statements and leaves its sqlitedb.DB open. Close is
// idempotent, and does nothing for Stores assembled by hand.
func (s Stores) Close() error {
	if s.front == nil {
		return nil
	}
	return s.front.close()
}

// Check reports the first role without an implementation, in the order conversations,
// interactions, journal, events, outbox, replay, commits, as a *MissingStoreError.
func (s Stores) Check() error {
	// ReadOnly keeps exactly the reader roles that are set, so it checks those; commits last.
	if err := s.ReadOnly().Check(); err != nil {
		return err
	}
	if s.Commits == nil {
		return &MissingStoreError{Role: "commits"}
	}
	return nil
}

// String names the roles, never the implementations (a store may hold credentials).
func (s Stores) String() string {
	return "turn.Stores{conversations, interactions, journal, events, outbox, replay, commits}"
}

// GoString is String, so %#v does not print the implementations either.
func (s Stores) GoString() string { return s.String() }

// ReadOnly returns the reader halves only. The readers are wrapped so that a type assertion
// cannot recover a writer from them.
func (s Stores) ReadOnly() ReadOnlyStores {
	var r ReadOnlyStores
	if s.Conversations != nil {
		r.Conversations = conversationReader{s.Conversations}
	}
	if s.Interactions != nil {
		r.Interactions = interactionReader{s.Interactions}
	}
	if s.Journal != nil {
		r.Journal = journalReader{s.Journal}
	}
	if s.Events != nil {
		r.Events = eventReader{s.Events}
	}
	if s.Outbox != nil {
		r.Outbox = outboxReader{s.Outbox}
	}
	if s.Replay != nil {
		r.Replay = replayReader{s.Replay}
	}
	return r
}

// ReadOnlyStores holds the six reader halves: no commit, no writer, no way back to one. Give it
// to code that must only look (an inspector, a read replica's consumer).
type ReadOnlyStores struct {
	Conversations ConversationReader
	Interactions  InteractionReader
	Journal       JournalReader
	Events        EventReader
	Outbox        OutboxReader
	Replay        ReplayReader
}

// Check reports the first role without an implementation, in the order of Stores.Check, as a
// *MissingStoreError.
func (s ReadOnlyStores) Check() error {
	for _, r := range []struct {
		name string
		set  bool
	}{
		{"conversations", s.Conversations != nil},
		{"interactions", s.Interactions != nil},
		{"journal", s.Journal != nil},
		{"events", s.Events != nil},
		{"outbox", s.Outbox != nil},
		{"replay", s.Replay != nil},
	} {
		if !r.set {
			return &MissingStoreError{Role: r.name}
		}
	}
	return nil
}

// String names the roles only.
func (s ReadOnlyStores) String() string {
	return "turn.ReadOnlyStores{conversations, interactions, journal, events, outbox, replay}"
}

// GoString is String.
func (s ReadOnlyStores) GoString() string { return s.String() }

// The wrappers below hide every method but the reader's.

type conversationReader struct{ r ConversationReader }

func (w conversationReader) LoadConversation(ctx context.Context, account string, id ID) (Conversation, error) {
	return w.r.LoadConversation(ctx, account, id)
}
func (w conversationReader) ListConversations(ctx context.Context, account string, limit int) ([]Conversation, error) {
	return w.r.ListConversations(ctx, account, limit)
}
func (w conversationReader) LoadRecentTurns(ctx context.Context, account string, conversation ID, limit int) ([]Turn, error) {
	return w.r.LoadRecentTurns(ctx, account, conversation, limit)
}
func (w conversationReader) LoadTurn(ctx context.Context, account string, turn ID) (Turn, error) {
	return w.r.LoadTurn(ctx, account, turn)
}
func (w conversationReader) TurnPhase(ctx context.Context, account string, turn ID) (PhaseMarker, error) {
	return w.r.TurnPhase(ctx, account, turn)
}
func (w conversationReader) ListUnfinishedTurns(ctx context.Context, scope RecoveryScope, limit int) ([]PhaseMarker, error) {
	return w.r.ListUnfinishedTurns(ctx, scope, limit)
}

type interactionReader struct{ r InteractionReader }

func (w interactionReader) LoadInteraction(ctx context.Context, account string, id ID) (InteractionRecord, error) {
	return w.r.LoadInteraction(ctx, account, id)
}
func (w interactionReader) InteractionsForTurn(ctx context.Context, account string, turn ID) ([]InteractionRecord, error) {
	return w.r.InteractionsForTurn(ctx, account, turn)
}
func (w interactionReader) ListOpenForConversation(ctx context.Context, account string, conversation ID) ([]InteractionRecord, error) {
	return w.r.ListOpenForConversation(ctx, account, conversation)
}
func (w interactionReader) ListOpenForCase(ctx context.Context, account string, key CaseKey) ([]InteractionRecord, error) {
	return w.r.ListOpenForCase(ctx, account, key)
}
func (w interactionReader) BlockingAnsweredAt(ctx context.Context, account string, key CaseKey, revision Revision) (bool, error) {
	return w.r.BlockingAnsweredAt(ctx, account, key, revision)
}

type journalReader struct{ r JournalReader }

func (w journalReader) LoadCommand(ctx context.Context, account string, command ID) (JournalEntry, error) {
	return w.r.LoadCommand(ctx, account, command)
}
func (w journalReader) CommandsForTurn(ctx context.Context, account string, turn ID) ([]JournalEntry, error) {
	return w.r.CommandsForTurn(ctx, account, turn)
}
func (w journalReader) PendingForTurn(ctx context.Context, account string, turn ID) ([]JournalEntry, error) {
	return w.r.PendingForTurn(ctx, account, turn)
}

type eventReader struct{ r EventReader }

func (w eventReader) ListSince(ctx context.Context, account string, key CaseKey, since Revision, limit int) ([]Event, error) {
	return w.r.ListSince(ctx, account, key, since, limit)
}
func (w eventReader) ReadFrom(ctx context.Context, account string, after Cursor, limit int) (EventPage, error) {
	return w.r.ReadFrom(ctx, account, after, limit)
}
func (w eventReader) LoadEvents(ctx context.Context, account string, ids []ID) ([]Event, error) {
	return w.r.LoadEvents(ctx, account, ids)
}
func (w eventReader) CountEvents(ctx context.Context, account string, key CaseKey) (int64, error) {
	return w.r.CountEvents(ctx, account, key)
}

type outboxReader struct{ r OutboxReader }

func (w outboxReader) LoadOutbox(ctx context.Context, id ID) (OutboxRecord, error) {
	return w.r.LoadOutbox(ctx, id)
}
func (w outboxReader) OutboxForCommand(ctx context.Context, command ID) ([]OutboxRecord, error) {
	return w.r.OutboxForCommand(ctx, command)
}

type replayReader struct{ r ReplayReader }

func (w replayReader) LoadReplay(ctx context.Context, account string, turn ID) (ReplayRecord, error) {
	return w.r.LoadReplay(ctx, account, turn)
}
func (w replayReader) ReplaysForConversation(ctx context.Context, account string, conversation ID, limit int) ([]ReplayRecord, error) {
	return w.r.ReplaysForConversation(ctx, account, conversation, limit)
}
