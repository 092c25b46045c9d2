package turn

import (
	"encoding/json"
	"time"
)

// The checked Stores hand every result back in one shape, whichever backend produced it:
//   - times in UTC at microsecond precision (ClockTime), the zero time for "unset";
//   - a document that is required (every one but a rejection) as JSON null when it is empty;
//   - slices inside a record nil when empty; lists a method returns non-nil, even when empty.
//
// A backend hands over what it returns, so the results are normalised in place.

func nullDoc(d json.RawMessage) json.RawMessage {
	if len(d) == 0 {
		return json.RawMessage("null")
	}
	return d
}

func nilIfEmpty[T any](xs []T) []T {
	if len(xs) == 0 {
		return nil
	}
	return xs
}

// list normalises each element of xs in place and returns a non-nil slice.
func list[T any](xs []T, normalise func(*T)) []T {
	if xs == nil {
		return []T{}
	}
	for i := range xs {
		normalise(&xs[i])
	}
	return xs
}

func times(ts ...*time.Time) {
	for _, t := range ts {
		*t = ClockTime(*t)
	}
}

func (c *Conversation) normalise() {
	times(&c.CreatedAt)
	c.Metadata = nullDoc(c.Metadata)
}

func (u *UserTurn) normalise() {
	times(&u.ReceivedAt)
	in := &u.Input
	in.InteractionResponse, in.Attachments, in.Origin = nullDoc(in.InteractionResponse), nullDoc(in.Attachments), nullDoc(in.Origin)
}

func (a *AssistantTurn) normalise() {
	a.Blocks = nilIfEmpty(a.Blocks)
	for i := range a.Blocks {
		a.Blocks[i].Body = nullDoc(a.Blocks[i].Body)
	}
	a.Subjects, a.Expectations = nullDoc(a.Subjects), nullDoc(a.Expectations)
}

func (t *Turn) normalise() {
	t.User.normalise()
	if t.Assistant != nil {
		t.Assistant.normalise()
	}
}

func (m *PhaseMarker) normalise() { times(&m.UpdatedAt) }

func (i *Interaction) normalise() {
	times(&i.CreatedAt, &i.ExpiresAt, &i.ResolvedAt)
	i.Payload.Options = nilIfEmpty(i.Payload.Options)
	i.Payload.ReviewEntries, i.Payload.Metadata = nullDoc(i.Payload.ReviewEntries), nullDoc(i.Payload.Metadata)
}

func (r *InteractionRecord) normalise() {
	r.Interaction.normalise()
	r.ResolutionEventIDs = nilIfEmpty(r.ResolutionEventIDs)
	if r.Invalidation != nil {
		times(&r.Invalidation.At)
	}
}

func (e *JournalEntry) normalise() {
	times(&e.CreatedAt, &e.CompletedAt)
	e.CommandPayload, e.Origin = nullDoc(e.CommandPayload), nullDoc(e.Origin)
	if e.Result != nil {
		e.Result.EventIDs = nilIfEmpty(e.Result.EventIDs)
	}
}

func (e *Event) normalise() {
	times(&e.OccurredAt)
	e.Payload = nullDoc(e.Payload)
	if e.Redaction != nil {
		e.Redaction.normalise()
	}
}

func (r *Redaction) normalise() { times(&r.RedactedAt) }

func (e *OutboxEntry) normalise() {
	times(&e.NextAttemptAt, &e.CreatedAt, &e.CompletedAt)
	e.Payload = nullDoc(e.Payload)
}

func (r *OutboxRecord) normalise() {
	r.Entry.normalise()
	if r.Claim != nil {
		times(&r.Claim.ClaimedAt)
	}
}

func (r *ReplayRecord) normalise() {
	times(&r.RecordedAt)
	r.EventIDs = nilIfEmpty(r.EventIDs)
	r.Details = nullDoc(r.Details)
}

func (r *Receipt) normalise() {
	times(&r.CommittedAt)
	for _, ids := range []*[]ID{&r.EventIDs, &r.InsertedInteractions, &r.InvalidatedInteractions} {
		if *ids == nil {
			*ids = []ID{}
		}
	}
}
