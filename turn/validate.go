package turn

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/steadhq/stead/internal/check"
)

// Size limits every backend enforces alike (the execution store's too).
const (
	// MaxIDLen is the longest account, key, code or other short text, in bytes.
	MaxIDLen = 512
	// MaxPayload is the largest JSON document or free text (a user turn's text), in bytes.
	MaxPayload = 1 << 20
)

// The one rule of every limit the Stores take (a page, a list, a claim), the execution store's
// too: 0 asks for DefaultLimit, a negative one or one above MaxLimit is ErrInvalid, and the
// backend is given the limit resolved.
const (
	// DefaultLimit is what a limit of 0 asks for.
	DefaultLimit = 100
	// MaxLimit is the largest limit accepted.
	MaxLimit = 1000
)

// ValidateAccount checks an account id: non-empty, valid UTF-8, no NUL, at most MaxIDLen bytes.
func ValidateAccount(account string) error { return check.ID("account", account) }

// ValidateID checks that a required id is set.
func ValidateID(field string, id ID) error {
	if id.IsZero() {
		return check.Invalidf("%s is empty", field)
	}
	return nil
}

// ValidateKey checks a required short text (an idempotency key, a worker id, a code, an
// authority, a destination).
func ValidateKey(field, v string) error { return check.ID(field, v) }

// ValidateText checks an optional short text.
func ValidateText(field, v string) error { return check.Text(field, v) }

// ValidateLimit refuses a negative limit and one above MaxLimit; 0 is legal, and asks for
// DefaultLimit.
func ValidateLimit(limit int) error {
	_, err := resolveLimit(limit)
	return err
}

// resolveLimit returns the limit a backend is given for limit: DefaultLimit for 0, limit itself
// from 1 to MaxLimit. A negative limit, or one above MaxLimit, is ErrInvalid.
func resolveLimit(limit int) (int, error) {
	return check.Limit("limit", limit, DefaultLimit, MaxLimit)
}

// ValidateRevision refuses a negative revision with CodeInvalidRecord (the column is a
// non-negative bigint).
func ValidateRevision(field string, r Revision) error {
	if r < 0 {
		return InvalidRecord("%s is negative (%d)", field, r)
	}
	return nil
}

// ValidateCursor refuses a negative cursor. Whether a non-negative cursor was produced by the
// account's stream only the stream can tell: ReadFrom checks that (see Cursor).
func ValidateCursor(c Cursor) error {
	if c < 0 {
		return check.Invalidf("cursor is negative (%d)", c)
	}
	return nil
}

// ValidateTime refuses a time that, converted to UTC, lies outside the years 1 to 9999: the range
// every backend stores exactly. The check runs on the UTC value, so no offset can carry a time
// past it. The zero time passes (it means "unset" where a time is optional).
func ValidateTime(field string, t time.Time) error {
	_, err := check.Time(field, t)
	return err
}

// The prepare methods below validate a record and return the copy a backend receives: times in
// UTC at microsecond precision, empty documents nil, slices that were changed copied so the
// caller's value is never modified. A required time must be set; an optional one may be zero.

func optionalTime(field string, t *time.Time) error {
	v, err := check.Time(field, *t)
	*t = v
	return err
}

func requiredTime(field string, t *time.Time) error {
	v, err := check.RequiredTime(field, *t)
	*t = v
	return err
}

func document(field string, d *json.RawMessage) error {
	if err := check.JSON(field, *d); err != nil {
		return err
	}
	if len(*d) == 0 {
		*d = nil
	}
	return nil
}

// texts checks optional short texts, in order.
func texts(fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if err := check.Text(fields[i], fields[i+1]); err != nil {
			return err
		}
	}
	return nil
}

func validIDs(field string, xs []ID) error {
	for _, id := range xs {
		if err := ValidateID(field, id); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the key's workflow and case id.
func (k CaseKey) Validate() error {
	if err := check.ID("workflow", k.Workflow); err != nil {
		return err
	}
	return check.ID("case id", k.CaseID)
}

// Validate checks the key and the revision.
func (r CaseRef) Validate() error {
	if err := r.Key().Validate(); err != nil {
		return err
	}
	return ValidateRevision("expected revision", r.ExpectedRevision)
}

// Validate checks the conversation: account, id, a creation time, metadata.
func (c Conversation) Validate() error {
	_, err := c.prepare()
	return err
}

func (c Conversation) prepare() (Conversation, error) {
	if err := ValidateAccount(c.AccountID); err != nil {
		return c, err
	}
	if err := ValidateID("conversation id", c.ID); err != nil {
		return c, err
	}
	if err := requiredTime("created at", &c.CreatedAt); err != nil {
		return c, err
	}
	return c, document("metadata", &c.Metadata)
}

// Validate checks the user turn: its actor's account, its ids, when it was received, its texts
// and documents.
func (u UserTurn) Validate() error {
	_, err := u.prepare()
	return err
}

func (u UserTurn) prepare() (UserTurn, error) {
	in := &u.Input
	if err := ValidateAccount(in.Actor.AccountID); err != nil {
		return u, err
	}
	if err := ValidateID("turn id", in.TurnID); err != nil {
		return u, err
	}
	if err := ValidateID("conversation id", in.ConversationID); err != nil {
		return u, err
	}
	if err := requiredTime("received at", &u.ReceivedAt); err != nil {
		return u, err
	}
	if err := texts("user id", in.Actor.UserID, "locale", in.Locale, "effort", in.Effort); err != nil {
		return u, err
	}
	if err := check.TextMax("text", in.Text, MaxPayload); err != nil {
		return u, err
	}
	if err := document("interaction response", &in.InteractionResponse); err != nil {
		return u, err
	}
	if err := document("attachments", &in.Attachments); err != nil {
		return u, err
	}
	return u, document("origin", &in.Origin)
}

// Validate checks the assistant turn.
func (a AssistantTurn) Validate() error {
	_, err := a.prepare()
	return err
}

func (a AssistantTurn) prepare() (AssistantTurn, error) {
	if err := ValidateID("turn id", a.TurnID); err != nil {
		return a, err
	}
	if err := ValidateID("conversation id", a.ConversationID); err != nil {
		return a, err
	}
	a.Blocks = slices.Clone(a.Blocks)
	for i := range a.Blocks {
		b := &a.Blocks[i]
		if err := texts("block id", b.ID, "block kind", b.Kind); err != nil {
			return a, err
		}
		if err := document("block body", &b.Body); err != nil {
			return a, err
		}
	}
	if len(a.Blocks) == 0 {
		a.Blocks = nil
	}
	if err := check.Text("replay token", a.ReplayToken); err != nil {
		return a, err
	}
	if err := document("subjects", &a.Subjects); err != nil {
		return a, err
	}
	return a, document("expectations", &a.Expectations)
}

// Validate checks the interaction's fields. It accepts any valid status: InsertInteraction
// further requires a new card (see prepareInsert).
func (i Interaction) Validate() error {
	_, err := i.prepare()
	return err
}

func (i Interaction) prepare() (Interaction, error) {
	if err := ValidateAccount(i.AccountID); err != nil {
		return i, err
	}
	if err := ValidateID("interaction id", i.ID); err != nil {
		return i, err
	}
	if err := ValidateID("conversation id", i.ConversationID); err != nil {
		return i, err
	}
	if err := ValidateID("created by turn", i.CreatedByTurn); err != nil {
		return i, err
	}
	if err := i.CaseRef.Validate(); err != nil {
		return i, err
	}
	if !i.Kind.Valid() {
		return i, check.Invalidf("interaction %s: unknown kind %q", i.ID, i.Kind)
	}
	if !i.Status.Valid() {
		return i, check.Invalidf("interaction %s: unknown status %q", i.ID, i.Status)
	}
	if err := texts("payload hash", i.PayloadHash, "text resolution", i.TextResolution,
		"confirms risk", i.ConfirmsRisk, "resolved option id", i.ResolvedOptionID,
		"freeform prompt", i.Payload.FreeformPrompt); err != nil {
		return i, err
	}
	if err := check.TextMax("title", i.Payload.Title, check.MaxMessageLen); err != nil {
		return i, err
	}
	if err := check.TextMax("body", i.Payload.Body, MaxPayload); err != nil {
		return i, err
	}
	for _, o := range i.Payload.Options {
		if err := texts("option id", o.ID, "option action", o.Action,
			"option freeform policy", o.FreeformPolicy, "option style", o.Style); err != nil {
			return i, err
		}
		if err := check.TextMax("option label", o.Label, check.MaxMessageLen); err != nil {
			return i, err
		}
	}
	if len(i.Payload.Options) == 0 {
		i.Payload.Options = nil
	}
	if err := document("review entries", &i.Payload.ReviewEntries); err != nil {
		return i, err
	}
	if err := document("payload metadata", &i.Payload.Metadata); err != nil {
		return i, err
	}
	if err := requiredTime("created at", &i.CreatedAt); err != nil {
		return i, err
	}
	if err := optionalTime("expires at", &i.ExpiresAt); err != nil {
		return i, err
	}
	return i, optionalTime("resolved at", &i.ResolvedAt)
}

// prepareInsert is prepare for a card being inserted: it must be active and carry no answer
// yet, since the lifecycle fields are the store's to set (CodeInvalidRecord otherwise).
func (i Interaction) prepareInsert() (Interaction, error) {
	i, err := i.prepare()
	switch {
	case err != nil:
		return i, err
	case i.Status != InteractionActive:
		return i, InvalidRecord("interaction %s is inserted %s, not active", i.ID, i.Status)
	case !i.ResolvedAt.IsZero() || i.ResolvedOptionID != "":
		return i, InvalidRecord("interaction %s is inserted with an answer already recorded", i.ID)
	}
	return i, nil
}

// Validate checks the reason.
func (r InvalidationReason) Validate() error {
	switch r.Kind {
	case InvalidationRevisionChanged, InvalidationCaseClosed:
	case InvalidationSuperseded:
		if err := ValidateID("superseding interaction id", r.By); err != nil {
			return err
		}
	case InvalidationAdministrative:
		if err := check.ID("administrative code", r.Code); err != nil {
			return err
		}
	default:
		return check.Invalidf("unknown invalidation kind %q", r.Kind)
	}
	return check.Text("invalidation code", r.Code)
}

// Validate checks the outcome.
func (o ResolutionOutcome) Validate() error {
	switch o.Kind {
	case ResolutionResolved, ResolutionRestoreActive:
	case ResolutionFailed:
		if err := check.ID("failure code", o.Code); err != nil {
			return err
		}
	default:
		return check.Invalidf("unknown resolution kind %q", o.Kind)
	}
	if err := validIDs("resolution event id", o.EventIDs); err != nil {
		return err
	}
	return check.Text("failure code", o.Code)
}

// Validate checks the journal entry.
func (e JournalEntry) Validate() error {
	_, err := e.prepare()
	return err
}

func (e JournalEntry) prepare() (JournalEntry, error) {
	if err := ValidateAccount(e.AccountID); err != nil {
		return e, err
	}
	if err := ValidateID("command id", e.CommandID); err != nil {
		return e, err
	}
	if err := ValidateID("turn id", e.TurnID); err != nil {
		return e, err
	}
	if err := check.ID("idempotency key", e.IdempotencyKey); err != nil {
		return e, err
	}
	if err := check.ID("command type", e.CommandType); err != nil {
		return e, err
	}
	if err := e.CaseRef.Validate(); err != nil {
		return e, err
	}
	if !e.Status.Valid() {
		return e, check.Invalidf("command %s: unknown status %q", e.CommandID, e.Status)
	}
	if err := document("command payload", &e.CommandPayload); err != nil {
		return e, err
	}
	if err := document("origin", &e.Origin); err != nil {
		return e, err
	}
	if e.Result != nil {
		o, err := e.Result.prepare()
		if err != nil {
			return e, err
		}
		e.Result = &o
	}
	if err := requiredTime("created at", &e.CreatedAt); err != nil {
		return e, err
	}
	return e, optionalTime("completed at", &e.CompletedAt)
}

// prepareAdmission is prepare for an entry BeginCommand admits: pending or awaiting
// confirmation, with no outcome yet (CodeInvalidRecord otherwise).
func (e JournalEntry) prepareAdmission() (JournalEntry, error) {
	e, err := e.prepare()
	switch {
	case err != nil:
		return e, err
	case e.Status != JournalPending && e.Status != JournalAwaitingConfirmation:
		return e, InvalidRecord("command %s begins %s, not pending or awaiting_confirmation", e.CommandID, e.Status)
	case e.Result != nil || !e.CompletedAt.IsZero():
		return e, InvalidRecord("command %s begins with an outcome already recorded", e.CommandID)
	}
	return e, nil
}

// Validate checks the outcome.
func (o JournalOutcome) Validate() error {
	_, err := o.prepare()
	return err
}

func (o JournalOutcome) prepare() (JournalOutcome, error) {
	if o.Status() == "" {
		return o, check.Invalidf("unknown outcome kind %q", o.Kind)
	}
	if err := ValidateRevision("new revision", o.NewRevision); err != nil {
		return o, err
	}
	if err := ValidateRevision("current revision", o.CurrentRevision); err != nil {
		return o, err
	}
	if err := validIDs("outcome event id", o.EventIDs); err != nil {
		return o, err
	}
	if err := texts("outcome code", o.Code, "attempt id", o.AttemptID, "remote ref", o.RemoteRef,
		"reason", o.Reason); err != nil {
		return o, err
	}
	return o, document("rejection", &o.Rejection)
}

// Validate checks the batch: account, case, command, revision, and that it is non-empty
// (CodeInvalidRecord) with every event well-formed. Duplicate ids are a conflict found while
// appending, not a validation error.
func (b EventBatch) Validate() error {
	_, err := b.prepare()
	return err
}

func (b EventBatch) prepare() (EventBatch, error) {
	if err := ValidateAccount(b.AccountID); err != nil {
		return b, err
	}
	if len(b.Events) == 0 {
		return b, InvalidRecord("event batch is empty")
	}
	if err := b.CaseKey.Validate(); err != nil {
		return b, err
	}
	if err := ValidateID("command id", b.CommandID); err != nil {
		return b, err
	}
	if err := ValidateRevision("revision", b.Revision); err != nil {
		return b, err
	}
	b.Events = slices.Clone(b.Events)
	for i := range b.Events {
		e := &b.Events[i]
		if err := ValidateID("event id", e.EventID); err != nil {
			return b, err
		}
		if err := check.ID("event type", e.EventType); err != nil {
			return b, err
		}
		if err := requiredTime("occurred at", &e.OccurredAt); err != nil {
			return b, err
		}
		if err := document("event payload", &e.Payload); err != nil {
			return b, err
		}
	}
	return b, nil
}

// Validate checks the entry's fields. Enqueue further requires a new row (see prepareEnqueue).
func (e OutboxEntry) Validate() error {
	_, err := e.prepare()
	return err
}

func (e OutboxEntry) prepare() (OutboxEntry, error) {
	if err := ValidateID("outbox id", e.OutboxID); err != nil {
		return e, err
	}
	if err := ValidateID("command id", e.CommandID); err != nil {
		return e, err
	}
	if err := check.ID("destination", e.Destination); err != nil {
		return e, err
	}
	if err := check.ID("idempotency key", e.IdempotencyKey); err != nil {
		return e, err
	}
	if !e.Status.Valid() {
		return e, check.Invalidf("outbox %s: unknown status %q", e.OutboxID, e.Status)
	}
	if e.AttemptCount < 0 || e.AttemptCount > MaxAttemptCount {
		return e, InvalidRecord("outbox %s: attempt count %d out of range", e.OutboxID, e.AttemptCount)
	}
	if err := document("outbox payload", &e.Payload); err != nil {
		return e, err
	}
	if err := requiredTime("created at", &e.CreatedAt); err != nil {
		return e, err
	}
	if err := optionalTime("next attempt at", &e.NextAttemptAt); err != nil {
		return e, err
	}
	return e, optionalTime("completed at", &e.CompletedAt)
}

// prepareEnqueue is prepare for a row Enqueue inserts: pending and not completed
// (CodeInvalidRecord otherwise).
func (e OutboxEntry) prepareEnqueue() (OutboxEntry, error) {
	e, err := e.prepare()
	switch {
	case err != nil:
		return e, err
	case e.Status != OutboxPending:
		return e, InvalidRecord("outbox row %s is enqueued %s, not pending", e.OutboxID, e.Status)
	case !e.CompletedAt.IsZero():
		return e, InvalidRecord("outbox row %s is enqueued already completed", e.OutboxID)
	}
	return e, nil
}

// Validate checks the replay record.
func (r ReplayRecord) Validate() error {
	_, err := r.prepare()
	return err
}

func (r ReplayRecord) prepare() (ReplayRecord, error) {
	if err := ValidateAccount(r.AccountID); err != nil {
		return r, err
	}
	if err := ValidateID("turn id", r.TurnID); err != nil {
		return r, err
	}
	if err := ValidateID("conversation id", r.ConversationID); err != nil {
		return r, err
	}
	if !r.Phase.Valid() {
		return r, check.Invalidf("replay record: unknown phase %q", r.Phase)
	}
	if err := requiredTime("recorded at", &r.RecordedAt); err != nil {
		return r, err
	}
	if err := validIDs("replay event id", r.EventIDs); err != nil {
		return r, err
	}
	return r, document("replay details", &r.Details)
}

func validPhase(p Phase) error {
	if !p.Valid() {
		return check.Invalidf("unknown turn phase %q", p)
	}
	return nil
}

func validStatus(s InteractionStatus) error {
	if !s.Valid() {
		return check.Invalidf("unknown interaction status %q", s)
	}
	return nil
}
