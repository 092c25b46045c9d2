package turn

import (
	"encoding/json"
	"time"

	"github.com/steadhq/stead/internal/check"
)

// Size limits every backend enforces alike.
const (
	// MaxIDLen is the longest account, key, code or other short text, in bytes.
	MaxIDLen = check.MaxIDLen
	// MaxPayload is the largest JSON document or free text (a user turn's text), in bytes.
	MaxPayload = check.MaxPayload
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

// ValidateLimit refuses a negative limit. Zero and huge limits are legal (a backend saturates
// rather than overflows).
func ValidateLimit(limit int) error {
	if limit < 0 {
		return check.Invalidf("limit is negative (%d)", limit)
	}
	return nil
}

// ValidateRevision refuses a negative revision with CodeInvalidRecord (the column is a
// non-negative bigint).
func ValidateRevision(field string, r Revision) error {
	if r < 0 {
		return InvalidRecord("%s is negative (%d)", field, r)
	}
	return nil
}

// ValidateCursor refuses a negative cursor.
func ValidateCursor(c Cursor) error {
	if c < 0 {
		return check.Invalidf("cursor is negative (%d)", c)
	}
	return nil
}

// ValidateTime refuses a time outside the years 1..9999 (what both JSON and PostgreSQL hold).
func ValidateTime(field string, t time.Time) error {
	if y := t.Year(); y < 1 || y > 9999 {
		return check.Invalidf("%s is outside the years 1..9999", field)
	}
	return nil
}

func validateJSON(field string, raw json.RawMessage) error { return check.JSON(field, raw) }

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

// Validate checks the conversation.
func (c Conversation) Validate() error {
	if err := ValidateAccount(c.AccountID); err != nil {
		return err
	}
	if err := ValidateID("conversation id", c.ID); err != nil {
		return err
	}
	if err := ValidateTime("created at", c.CreatedAt); err != nil {
		return err
	}
	return validateJSON("metadata", c.Metadata)
}

// Validate checks the user turn.
func (u UserTurn) Validate() error {
	in := u.Input
	if err := ValidateAccount(in.Actor.AccountID); err != nil {
		return err
	}
	if err := ValidateID("turn id", in.TurnID); err != nil {
		return err
	}
	if err := ValidateID("conversation id", in.ConversationID); err != nil {
		return err
	}
	if err := ValidateTime("received at", u.ReceivedAt); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{
		{"user id", in.Actor.UserID}, {"locale", in.Locale}, {"effort", in.Effort},
	} {
		if err := check.Text(f.name, f.v); err != nil {
			return err
		}
	}
	if err := check.TextMax("text", in.Text, MaxPayload); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    json.RawMessage
	}{
		{"interaction response", in.InteractionResponse}, {"attachments", in.Attachments}, {"origin", in.Origin},
	} {
		if err := validateJSON(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the assistant turn.
func (a AssistantTurn) Validate() error {
	if err := ValidateID("turn id", a.TurnID); err != nil {
		return err
	}
	if err := ValidateID("conversation id", a.ConversationID); err != nil {
		return err
	}
	for _, b := range a.Blocks {
		if err := check.Text("block id", b.ID); err != nil {
			return err
		}
		if err := check.Text("block kind", b.Kind); err != nil {
			return err
		}
		if err := validateJSON("block body", b.Body); err != nil {
			return err
		}
	}
	if err := check.Text("replay token", a.ReplayToken); err != nil {
		return err
	}
	if err := validateJSON("subjects", a.Subjects); err != nil {
		return err
	}
	return validateJSON("expectations", a.Expectations)
}

// Validate checks the interaction's fields. It accepts any valid status: InsertInteraction
// further requires active (CodeInvalidRecord).
func (i Interaction) Validate() error {
	if err := ValidateAccount(i.AccountID); err != nil {
		return err
	}
	if err := ValidateID("interaction id", i.ID); err != nil {
		return err
	}
	if err := ValidateID("conversation id", i.ConversationID); err != nil {
		return err
	}
	if err := i.CaseRef.Validate(); err != nil {
		return err
	}
	if !i.Kind.Valid() {
		return check.Invalidf("interaction %s: unknown kind %q", i.ID, i.Kind)
	}
	if !i.Status.Valid() {
		return check.Invalidf("interaction %s: unknown status %q", i.ID, i.Status)
	}
	for _, f := range []struct{ name, v string }{
		{"payload hash", i.PayloadHash}, {"text resolution", i.TextResolution},
		{"confirms risk", i.ConfirmsRisk}, {"resolved option id", i.ResolvedOptionID},
		{"freeform prompt", i.Payload.FreeformPrompt},
	} {
		if err := check.Text(f.name, f.v); err != nil {
			return err
		}
	}
	if err := check.TextMax("title", i.Payload.Title, check.MaxMessageLen); err != nil {
		return err
	}
	if err := check.TextMax("body", i.Payload.Body, MaxPayload); err != nil {
		return err
	}
	for _, o := range i.Payload.Options {
		for _, f := range []struct{ name, v string }{
			{"option id", o.ID}, {"option action", o.Action}, {"option freeform policy", o.FreeformPolicy},
			{"option style", o.Style},
		} {
			if err := check.Text(f.name, f.v); err != nil {
				return err
			}
		}
		if err := check.TextMax("option label", o.Label, check.MaxMessageLen); err != nil {
			return err
		}
	}
	if err := validateJSON("review entries", i.Payload.ReviewEntries); err != nil {
		return err
	}
	if err := validateJSON("payload metadata", i.Payload.Metadata); err != nil {
		return err
	}
	for _, t := range []struct {
		name string
		v    time.Time
	}{{"created at", i.CreatedAt}, {"expires at", i.ExpiresAt}, {"resolved at", i.ResolvedAt}} {
		if t.v.IsZero() && t.name != "created at" {
			continue
		}
		if err := ValidateTime(t.name, t.v); err != nil {
			return err
		}
	}
	return nil
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
	for _, id := range o.EventIDs {
		if err := ValidateID("resolution event id", id); err != nil {
			return err
		}
	}
	return check.Text("failure code", o.Code)
}

// Validate checks the journal entry.
func (e JournalEntry) Validate() error {
	if err := ValidateAccount(e.AccountID); err != nil {
		return err
	}
	if err := ValidateID("command id", e.CommandID); err != nil {
		return err
	}
	if err := ValidateID("turn id", e.TurnID); err != nil {
		return err
	}
	if err := check.ID("idempotency key", e.IdempotencyKey); err != nil {
		return err
	}
	if err := check.ID("command type", e.CommandType); err != nil {
		return err
	}
	if err := e.CaseRef.Validate(); err != nil {
		return err
	}
	if !e.Status.Valid() {
		return check.Invalidf("command %s: unknown status %q", e.CommandID, e.Status)
	}
	if err := validateJSON("command payload", e.CommandPayload); err != nil {
		return err
	}
	if err := validateJSON("origin", e.Origin); err != nil {
		return err
	}
	if e.Result != nil {
		if err := e.Result.Validate(); err != nil {
			return err
		}
	}
	if err := ValidateTime("created at", e.CreatedAt); err != nil {
		return err
	}
	if !e.CompletedAt.IsZero() {
		return ValidateTime("completed at", e.CompletedAt)
	}
	return nil
}

// Validate checks the outcome.
func (o JournalOutcome) Validate() error {
	if o.Status() == "" {
		return check.Invalidf("unknown outcome kind %q", o.Kind)
	}
	if err := ValidateRevision("new revision", o.NewRevision); err != nil {
		return err
	}
	if err := ValidateRevision("current revision", o.CurrentRevision); err != nil {
		return err
	}
	for _, id := range o.EventIDs {
		if err := ValidateID("outcome event id", id); err != nil {
			return err
		}
	}
	for _, f := range []struct{ name, v string }{
		{"outcome code", o.Code}, {"attempt id", o.AttemptID}, {"remote ref", o.RemoteRef}, {"reason", o.Reason},
	} {
		if err := check.Text(f.name, f.v); err != nil {
			return err
		}
	}
	return validateJSON("rejection", o.Rejection)
}

// Validate checks the batch: account, case, command, revision, and that it is non-empty
// (CodeInvalidRecord) with every event well-formed. Duplicate ids are a conflict found while
// appending, not a validation error.
func (b EventBatch) Validate() error {
	if err := ValidateAccount(b.AccountID); err != nil {
		return err
	}
	if len(b.Events) == 0 {
		return InvalidRecord("event batch is empty")
	}
	if err := b.CaseKey.Validate(); err != nil {
		return err
	}
	if err := ValidateID("command id", b.CommandID); err != nil {
		return err
	}
	if err := ValidateRevision("revision", b.Revision); err != nil {
		return err
	}
	for _, e := range b.Events {
		if err := ValidateID("event id", e.EventID); err != nil {
			return err
		}
		if err := check.ID("event type", e.EventType); err != nil {
			return err
		}
		if err := ValidateTime("occurred at", e.OccurredAt); err != nil {
			return err
		}
		if err := validateJSON("event payload", e.Payload); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the entry's fields. Enqueue further requires pending (CodeInvalidRecord).
func (e OutboxEntry) Validate() error {
	if err := ValidateID("outbox id", e.OutboxID); err != nil {
		return err
	}
	if err := ValidateID("command id", e.CommandID); err != nil {
		return err
	}
	if err := check.ID("destination", e.Destination); err != nil {
		return err
	}
	if err := check.ID("idempotency key", e.IdempotencyKey); err != nil {
		return err
	}
	if !e.Status.Valid() {
		return check.Invalidf("outbox %s: unknown status %q", e.OutboxID, e.Status)
	}
	if e.AttemptCount < 0 || e.AttemptCount > MaxAttemptCount {
		return InvalidRecord("outbox %s: attempt count %d out of range", e.OutboxID, e.AttemptCount)
	}
	if err := validateJSON("outbox payload", e.Payload); err != nil {
		return err
	}
	if err := ValidateTime("created at", e.CreatedAt); err != nil {
		return err
	}
	for _, t := range []struct {
		name string
		v    time.Time
	}{{"next attempt at", e.NextAttemptAt}, {"completed at", e.CompletedAt}} {
		if !t.v.IsZero() {
			if err := ValidateTime(t.name, t.v); err != nil {
				return err
			}
		}
	}
	return nil
}

// Validate checks the replay record.
func (r ReplayRecord) Validate() error {
	if err := ValidateAccount(r.AccountID); err != nil {
		return err
	}
	if err := ValidateID("turn id", r.TurnID); err != nil {
		return err
	}
	if err := ValidateID("conversation id", r.ConversationID); err != nil {
		return err
	}
	if !r.Phase.Valid() {
		return check.Invalidf("replay record: unknown phase %q", r.Phase)
	}
	if err := ValidateTime("recorded at", r.RecordedAt); err != nil {
		return err
	}
	for _, id := range r.EventIDs {
		if err := ValidateID("replay event id", id); err != nil {
			return err
		}
	}
	return validateJSON("replay details", r.Details)
}
