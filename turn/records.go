package turn

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// Times: every time a store returns is in UTC with microsecond precision (see ClockTime). The
// times a store stamps itself (updated_at, resolved_at, completed_at, invalidation and redaction
// times, committed_at) come from the backend's clock, so that a value read back from PostgreSQL
// (timestamptz keeps microseconds) equals the one returned by the write. Caller-supplied times
// are kept to the microsecond as well.
//
// Documents (json.RawMessage fields) are stored whole and returned with the same JSON meaning,
// not necessarily the same bytes: PostgreSQL jsonb reorders object keys and drops insignificant
// whitespace. An empty document is stored as JSON null.

// Revision is the revision of a workflow case (the aggregate a command changes). It is never
// negative; a backend refuses a negative one with CodeInvalidRecord.
type Revision int64

// CaseKey names a workflow case: which workflow, and which case of it.
type CaseKey struct {
	Workflow string `json:"workflow"`
	CaseID   string `json:"case_id"`
}

// CaseRef is a case at the revision the caller saw. On an interaction, ExpectedRevision is the
// card's bound revision: the card is stale once the case moves past it.
type CaseRef struct {
	Workflow         string   `json:"workflow"`
	CaseID           string   `json:"case_id"`
	ExpectedRevision Revision `json:"expected_revision"`
}

// Key drops the revision.
func (r CaseRef) Key() CaseKey { return CaseKey{Workflow: r.Workflow, CaseID: r.CaseID} }

// Conversation is a conversation of one account.
type Conversation struct {
	ID        ID        `json:"id"`
	AccountID string    `json:"account_id"`
	CreatedAt time.Time `json:"created_at"`
	// Metadata is any JSON document the application keeps with the conversation; the store never
	// interprets it.
	Metadata json.RawMessage `json:"metadata"`
}

// Actor is who sent a user turn.
type Actor struct {
	AccountID string `json:"account_id"`
	UserID    string `json:"user_id"`
}

// TurnInput is a user turn as received.
type TurnInput struct {
	TurnID         ID     `json:"turn_id"`
	ConversationID ID     `json:"conversation_id"`
	Actor          Actor  `json:"actor"`
	Text           string `json:"text"`
	// InteractionResponse is the user's answer to a card, when the turn carries one.
	InteractionResponse json.RawMessage `json:"interaction_response"`
	Attachments         json.RawMessage `json:"attachments"`
	Origin              json.RawMessage `json:"origin"`
	Locale              string          `json:"locale,omitempty"`
	Effort              string          `json:"effort,omitempty"`
}

// UserTurn is a stored user turn. Its account is Input.Actor.AccountID.
type UserTurn struct {
	Input      TurnInput `json:"input"`
	ReceivedAt time.Time `json:"received_at"`
}

// AccountID returns the account the turn belongs to.
func (u UserTurn) AccountID() string { return u.Input.Actor.AccountID }

// Block is one block of an assistant turn (a notice, a card's view, an artifact, text...).
type Block struct {
	ID   string          `json:"id"`
	Kind string          `json:"kind"`
	Body json.RawMessage `json:"body"`
}

// AssistantTurn is the assistant's answer to a turn, stored exactly as returned.
type AssistantTurn struct {
	TurnID         ID              `json:"turn_id"`
	ConversationID ID              `json:"conversation_id"`
	Blocks         []Block         `json:"blocks,omitempty"`
	Subjects       json.RawMessage `json:"subjects"`
	Expectations   json.RawMessage `json:"expectations"`
	ReplayToken    string          `json:"replay_token,omitempty"`
	Done           bool            `json:"done"`
}

// Turn is a stored turn: the user turn, the assistant turn once attached, and the current phase.
type Turn struct {
	User      UserTurn       `json:"user"`
	Assistant *AssistantTurn `json:"assistant,omitempty"`
	Phase     Phase          `json:"phase"`
}

// PhaseMarker is the crash-recovery marker of a turn.
type PhaseMarker struct {
	AccountID      string    `json:"account_id"`
	ConversationID ID        `json:"conversation_id"`
	TurnID         ID        `json:"turn_id"`
	Phase          Phase     `json:"phase"`
	UpdatedAt      time.Time `json:"updated_at"` // the store's clock
}

// RecoveryScope selects whose unfinished turns ListUnfinishedTurns returns: one account, or every
// account when AccountID is empty (a recovery sweep after a crash spans tenants).
type RecoveryScope struct {
	AccountID string
}

// AccountScope is the scope of one account.
func AccountScope(account string) RecoveryScope { return RecoveryScope{AccountID: account} }

// AllAccounts is the scope spanning every account.
func AllAccounts() RecoveryScope { return RecoveryScope{} }

// CardOption is one answer a card offers.
type CardOption struct {
	ID             string `json:"id"`
	Label          string `json:"label"`
	Action         string `json:"action,omitempty"`
	FreeformPolicy string `json:"freeform_policy,omitempty"`
	Style          string `json:"style,omitempty"`
}

// CardPayload is what a card shows. It is immutable once the card is inserted.
type CardPayload struct {
	Title          string          `json:"title"`
	Body           string          `json:"body,omitempty"`
	Options        []CardOption    `json:"options,omitempty"`
	ReviewEntries  json.RawMessage `json:"review_entries"`
	FreeformPrompt string          `json:"freeform_prompt,omitempty"`
	Metadata       json.RawMessage `json:"metadata"`
}

// Interaction is a card: an immutable question plus the lifecycle the store owns.
type Interaction struct {
	ID             ID              `json:"id"`
	AccountID      string          `json:"account_id"`
	ConversationID ID              `json:"conversation_id"`
	CaseRef        CaseRef         `json:"case_ref"` // ExpectedRevision is the bound revision
	CreatedByTurn  ID              `json:"created_by_turn"`
	Kind           InteractionKind `json:"kind"`
	// Blocking cards hold the case's single blocking slot while open.
	Blocking    bool              `json:"blocking"`
	Payload     CardPayload       `json:"payload"`
	PayloadHash string            `json:"payload_hash"`
	Status      InteractionStatus `json:"status"`
	// RevisionIndependent cards survive the case moving to another revision.
	RevisionIndependent bool      `json:"revision_independent"`
	TextResolution      string    `json:"text_resolution,omitempty"`
	ConfirmsRisk        string    `json:"confirms_risk,omitempty"`
	CreatedAt           time.Time `json:"created_at"`
	ExpiresAt           time.Time `json:"expires_at,omitzero"` // zero: never expires
	// ResolvedAt is when BeginResolution accepted an answer (zero when none).
	ResolvedAt       time.Time `json:"resolved_at,omitzero"`
	ResolvedOptionID string    `json:"resolved_option_id,omitempty"`
}

// BoundRevision returns the revision the card is bound to, and false when it is revision
// independent.
func (i Interaction) BoundRevision() (Revision, bool) {
	if i.RevisionIndependent {
		return 0, false
	}
	return i.CaseRef.ExpectedRevision, true
}

// IsExpired reports whether the card has an expiry at or before now.
func (i Interaction) IsExpired(now time.Time) bool {
	return !i.ExpiresAt.IsZero() && !i.ExpiresAt.After(now)
}

// InteractionRecord is an interaction with what its resolution recorded.
type InteractionRecord struct {
	Interaction        Interaction   `json:"interaction"`
	ResolvedByTurn     ID            `json:"resolved_by_turn,omitzero"`
	ResolutionEventIDs []ID          `json:"resolution_event_ids,omitempty"`
	FailureCode        string        `json:"failure_code,omitempty"`
	Invalidation       *Invalidation `json:"invalidation,omitempty"`
}

// InvalidationKind says why a card was invalidated.
type InvalidationKind string

// The invalidation kinds.
const (
	InvalidationRevisionChanged InvalidationKind = "revision_changed"
	InvalidationSuperseded      InvalidationKind = "superseded"
	InvalidationCaseClosed      InvalidationKind = "case_closed"
	InvalidationAdministrative  InvalidationKind = "administrative"
)

// InvalidationReason says why a card was invalidated. By is set for superseded, Code for
// administrative.
type InvalidationReason struct {
	Kind InvalidationKind `json:"kind"`
	By   ID               `json:"by,omitzero"`
	Code string           `json:"code,omitempty"`
}

// RevisionChanged is the reason of the revision sweep.
func RevisionChanged() InvalidationReason {
	return InvalidationReason{Kind: InvalidationRevisionChanged}
}

// SupersededBy is the reason a replacing insert records on the card it displaced.
func SupersededBy(id ID) InvalidationReason {
	return InvalidationReason{Kind: InvalidationSuperseded, By: id}
}

// CaseClosed is the reason for cards of a closed case.
func CaseClosed() InvalidationReason { return InvalidationReason{Kind: InvalidationCaseClosed} }

// Administrative is an operator's reason, with a stable code.
func Administrative(code string) InvalidationReason {
	return InvalidationReason{Kind: InvalidationAdministrative, Code: code}
}

// Invalidation records how a card was invalidated.
type Invalidation struct {
	Reason InvalidationReason `json:"reason"`
	// NewRevision is set only by the revision sweep (InvalidateForCase).
	NewRevision *Revision `json:"new_revision,omitempty"`
	At          time.Time `json:"at"` // the store's clock
}

// ResolutionKind says how a resolving card is settled.
type ResolutionKind string

// The resolution kinds.
const (
	ResolutionResolved      ResolutionKind = "resolved"
	ResolutionFailed        ResolutionKind = "failed"
	ResolutionRestoreActive ResolutionKind = "restore_active"
)

// ResolutionOutcome settles a resolving card: resolved (with the events its answer committed),
// failed (with a code), or restored to active (the answer is dropped).
type ResolutionOutcome struct {
	Kind     ResolutionKind `json:"kind"`
	EventIDs []ID           `json:"event_ids,omitempty"`
	Code     string         `json:"code,omitempty"`
}

// Resolved settles a card as resolved by the given events (none for an answer that committed
// nothing, such as a decline).
func Resolved(eventIDs ...ID) ResolutionOutcome {
	return ResolutionOutcome{Kind: ResolutionResolved, EventIDs: eventIDs}
}

// ResolutionFailure settles a card as failed with a stable code.
func ResolutionFailure(code string) ResolutionOutcome {
	return ResolutionOutcome{Kind: ResolutionFailed, Code: code}
}

// RestoreActive drops the answer and makes the card active again.
func RestoreActive() ResolutionOutcome { return ResolutionOutcome{Kind: ResolutionRestoreActive} }

// Target returns the status the outcome settles a card in ("" for an unknown kind).
func (o ResolutionOutcome) Target() InteractionStatus {
	switch o.Kind {
	case ResolutionResolved:
		return InteractionResolved
	case ResolutionFailed:
		return InteractionFailed
	case ResolutionRestoreActive:
		return InteractionActive
	}
	return ""
}

// Matches reports whether rec already carries what this outcome would record: the same event
// ids in the same order (resolved), the same code (failed), or no answer at all (restore). A
// repeated finish that matches is accepted without change; one that does not is a conflict.
func (o ResolutionOutcome) Matches(rec InteractionRecord) bool {
	if rec.Interaction.Status != o.Target() {
		return false
	}
	switch o.Kind {
	case ResolutionResolved:
		if len(rec.ResolutionEventIDs) != len(o.EventIDs) {
			return false
		}
		for i := range o.EventIDs {
			if rec.ResolutionEventIDs[i] != o.EventIDs[i] {
				return false
			}
		}
		return true
	case ResolutionFailed:
		return rec.FailureCode == o.Code
	case ResolutionRestoreActive:
		return rec.ResolvedByTurn.IsZero() && rec.Interaction.ResolvedOptionID == ""
	}
	return false
}

// JournalEntry is a command in the idempotency journal.
type JournalEntry struct {
	CommandID      ID              `json:"command_id"`
	AccountID      string          `json:"account_id"`
	IdempotencyKey string          `json:"idempotency_key"`
	TurnID         ID              `json:"turn_id"`
	CaseRef        CaseRef         `json:"case_ref"`
	CommandType    string          `json:"command_type"`
	CommandPayload json.RawMessage `json:"command_payload"`
	// Origin says what issued the command (a user turn, a confirmation, an internal policy...).
	Origin      json.RawMessage `json:"origin"`
	Status      JournalStatus   `json:"status"`
	Result      *JournalOutcome `json:"result,omitempty"`
	CreatedAt   time.Time       `json:"created_at"`
	CompletedAt time.Time       `json:"completed_at,omitzero"` // the store's clock
}

// SameCommand reports whether other describes the same command: the same case reference,
// command type and payload (compared by JSON meaning). A replayed admission whose entry is not
// the same command means the idempotency key was reused for different work.
func (e JournalEntry) SameCommand(other JournalEntry) bool {
	return e.CaseRef == other.CaseRef && e.CommandType == other.CommandType &&
		SameJSON(e.CommandPayload, other.CommandPayload)
}

// OutcomeKind says how a command ended.
type OutcomeKind string

// The outcome kinds.
const (
	OutcomeCommitted        OutcomeKind = "committed"
	OutcomeRejected         OutcomeKind = "rejected"
	OutcomeRevisionConflict OutcomeKind = "revision_conflict"
	OutcomeFailed           OutcomeKind = "failed"
	OutcomeUnknown          OutcomeKind = "outcome_unknown"
)

// JournalOutcome is the persisted outcome of a command; every repeat of its idempotency key
// replays it. The fields used depend on Kind:
//   - committed: NewRevision, EventIDs;
//   - rejected: Rejection (a JSON document);
//   - revision_conflict: CurrentRevision;
//   - failed: Code;
//   - outcome_unknown: AttemptID, RemoteRef (optional), Reason.
type JournalOutcome struct {
	Kind            OutcomeKind     `json:"kind"`
	NewRevision     Revision        `json:"new_revision,omitempty"`
	EventIDs        []ID            `json:"event_ids,omitempty"`
	Rejection       json.RawMessage `json:"rejection,omitempty"`
	CurrentRevision Revision        `json:"current_revision,omitempty"`
	Code            string          `json:"code,omitempty"`
	AttemptID       string          `json:"attempt_id,omitempty"`
	RemoteRef       string          `json:"remote_ref,omitempty"`
	Reason          string          `json:"reason,omitempty"`
}

// Committed is the outcome of a command that moved its case to newRevision.
func Committed(newRevision Revision, eventIDs ...ID) JournalOutcome {
	return JournalOutcome{Kind: OutcomeCommitted, NewRevision: newRevision, EventIDs: eventIDs}
}

// Failed is the outcome of a command that failed with a stable code.
func Failed(code string) JournalOutcome { return JournalOutcome{Kind: OutcomeFailed, Code: code} }

// Status returns the journal status the outcome implies ("" for an unknown kind).
func (o JournalOutcome) Status() JournalStatus {
	switch o.Kind {
	case OutcomeCommitted:
		return JournalCommitted
	case OutcomeRejected, OutcomeRevisionConflict, OutcomeFailed:
		return JournalFailed
	case OutcomeUnknown:
		return JournalOutcomeUnknown
	}
	return ""
}

// Equal reports whether two outcomes record the same thing (documents compared by JSON meaning).
func (o JournalOutcome) Equal(p JournalOutcome) bool {
	if o.Kind != p.Kind || o.NewRevision != p.NewRevision || o.CurrentRevision != p.CurrentRevision ||
		o.Code != p.Code || o.AttemptID != p.AttemptID || o.RemoteRef != p.RemoteRef ||
		o.Reason != p.Reason || len(o.EventIDs) != len(p.EventIDs) {
		return false
	}
	for i := range o.EventIDs {
		if o.EventIDs[i] != p.EventIDs[i] {
			return false
		}
	}
	if len(o.Rejection) == 0 && len(p.Rejection) == 0 {
		return true
	}
	return SameJSON(o.Rejection, p.Rejection)
}

// Admission is the answer of BeginCommand. Fresh is true for exactly one caller per
// (account, idempotency key), ever; every other caller gets Fresh false and the persisted entry,
// with its recorded outcome once there is one. Entry is the persisted entry in both cases.
type Admission struct {
	Fresh bool
	Entry JournalEntry
}

// Event is a stored domain event.
type Event struct {
	// Sequence is assigned by the store: strictly increasing in append order across the whole
	// store (not per case or account), never reused, never changed. Gaps are allowed. Being
	// store-wide, it tells a tenant how many events others appended between two of its own (see
	// EventReader.ReadFrom).
	Sequence     int64    `json:"sequence"`
	EventID      ID       `json:"event_id"`
	AccountID    string   `json:"account_id"`
	CaseKey      CaseKey  `json:"case_key"`
	CaseRevision Revision `json:"case_revision"`
	CommandID    ID       `json:"command_id"`
	EventType    string   `json:"event_type"`
	// Payload is JSON null once redacted.
	Payload    json.RawMessage `json:"payload"`
	OccurredAt time.Time       `json:"occurred_at"`
	// Redaction records who erased the payload and when; nil while it never was.
	Redaction *Redaction `json:"redaction,omitempty"`
}

// Redaction records the erasure of an event's payload. It says who and when, never what.
type Redaction struct {
	RedactedAt time.Time `json:"redacted_at"`
	Authority  string    `json:"authority"`
}

// NewEvent is one event of a batch to append.
type NewEvent struct {
	EventID    ID              `json:"event_id"`
	EventType  string          `json:"event_type"`
	OccurredAt time.Time       `json:"occurred_at"`
	Payload    json.RawMessage `json:"payload"`
}

// EventBatch is the events one command committed on one case, appended atomically.
type EventBatch struct {
	AccountID string     `json:"account_id"`
	CaseKey   CaseKey    `json:"case_key"`
	CommandID ID         `json:"command_id"`
	Revision  Revision   `json:"revision"` // the case revision after the commit
	Events    []NewEvent `json:"events"`
}

// Cursor is a position in an account's event stream: ReadFrom returns the events with a
// sequence strictly after it. The zero Cursor is the start. It is a plain number on the wire.
//
// A read of the stream produces only Start and the sequence of one of the account's events
// (EventPage.Next), and events are never removed, so those are exactly the cursors ReadFrom
// accepts; After(e.Sequence) of one's own event is one of them. Anything else is ErrInvalid:
// a negative number, a number past the account's last event (which would otherwise read as
// "caught up" and hide the events appended below it), a position between two of its events or
// another account's sequence. What the check cannot tell is whose cursor it is: a genuine cursor
// of the same account further along the stream skips the events before it. A cursor is therefore
// the consumer's own state, not a token to accept from an untrusted party.
type Cursor int64

// Start is the cursor before every event.
const Start Cursor = 0

// After returns the cursor that resumes strictly after sequence seq.
func After(seq int64) Cursor { return Cursor(seq) }

// EventPage is one page of an account's event stream.
type EventPage struct {
	Events []Event `json:"events"`
	// Next is the sequence of the last event of the page, or the cursor that was asked for when
	// the page is empty (caught up: repeat the same call later). It never moves backwards.
	Next Cursor `json:"next"`
}

// OutboxEntry is an external side effect awaiting dispatch. The outbox is a system queue
// addressed by OutboxID: it carries no account (CommandID traces a row back to the
// account-scoped journal entry that produced it).
type OutboxEntry struct {
	OutboxID       ID              `json:"outbox_id"`
	CommandID      ID              `json:"command_id"`
	Destination    string          `json:"destination"`
	Payload        json.RawMessage `json:"payload"`
	IdempotencyKey string          `json:"idempotency_key"`
	Status         OutboxStatus    `json:"status"`
	AttemptCount   int             `json:"attempt_count"`
	NextAttemptAt  time.Time       `json:"next_attempt_at,omitzero"` // zero: due now
	CreatedAt      time.Time       `json:"created_at"`
	CompletedAt    time.Time       `json:"completed_at,omitzero"` // the store's clock
}

// OutboxClaim says which dispatcher holds a row and since when.
type OutboxClaim struct {
	WorkerID  string    `json:"worker_id"`
	ClaimedAt time.Time `json:"claimed_at"` // the now given to ClaimDue
}

// OutboxRecord is an outbox row with its dispatch bookkeeping.
type OutboxRecord struct {
	Entry       OutboxEntry  `json:"entry"`
	Claim       *OutboxClaim `json:"claim,omitempty"`
	LastFailure string       `json:"last_failure,omitempty"` // a stable code
	RemoteRef   string       `json:"remote_ref,omitempty"`
}

// MaxAttemptCount is the largest attempt count a store keeps (a 32-bit column).
const MaxAttemptCount = 1<<31 - 1

// ReplayRecord is what a turn needs to be replayed or audited, one per turn, keyed by
// (AccountID, TurnID). The store reads only the identity, Phase and RecordedAt; Details is an
// opaque document (versions, understanding, hashes, provider attempts...).
type ReplayRecord struct {
	TurnID         ID              `json:"turn_id"`
	ConversationID ID              `json:"conversation_id"`
	AccountID      string          `json:"account_id"`
	Phase          Phase           `json:"phase"`
	RecordedAt     time.Time       `json:"recorded_at"`
	EventIDs       []ID            `json:"event_ids,omitempty"`
	Details        json.RawMessage `json:"details"`
}

// ReceivedReplay is the minimal record of a turn just received.
func ReceivedReplay(turn, conversation ID, account string, at time.Time) ReplayRecord {
	return ReplayRecord{TurnID: turn, ConversationID: conversation, AccountID: account,
		Phase: PhaseReceived, RecordedAt: at}
}

// SameJSON reports whether two documents have the same JSON meaning (object key order and
// whitespace ignored; an empty document counts as null). Malformed input compares by bytes.
func SameJSON(a, b json.RawMessage) bool {
	var x, y any
	if len(bytes.TrimSpace(a)) == 0 {
		a = json.RawMessage("null")
	}
	if len(bytes.TrimSpace(b)) == 0 {
		b = json.RawMessage("null")
	}
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xa, errA := json.Marshal(x)
	yb, errB := json.Marshal(y)
	return errA == nil && errB == nil && bytes.Equal(xa, yb)
}

// HashPayload returns the hex SHA-256 of the payload's canonical JSON (object keys sorted, no
// insignificant whitespace), the value an Interaction carries as PayloadHash. Two payloads with
// the same meaning hash alike, whichever store they were read back from.
func HashPayload(p CardPayload) string {
	raw, err := json.Marshal(p)
	if err != nil { // only an invalid embedded document; hash its bytes as given
		raw = []byte(p.Title + "\x00" + p.Body)
	}
	var v any
	if json.Unmarshal(raw, &v) == nil {
		if canon, err := json.Marshal(v); err == nil {
			raw = canon
		}
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}
