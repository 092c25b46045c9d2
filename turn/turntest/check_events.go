package turntest

import (
	"encoding/json"
	"math"
	"strings"

	"github.com/steadhq/stead/turn"
)

func (c *C) strictlyIncreasing(events []turn.Event, what string) {
	for i := 1; i < len(events); i++ {
		if events[i].Sequence <= events[i-1].Sequence {
			c.fatalf("%s: sequence %d follows %d", what, events[i].Sequence, events[i-1].Sequence)
		}
	}
}

// Appends get sequences in batch order; revision reads, lookups and counts see them; a
// duplicate or an empty batch writes nothing.
func checkEventAppendOrderingAndGetByIDs(c *C) {
	ev := c.s.Events
	ids := newIDs(3)
	a, b, cc := ids[0], ids[1], ids[2]
	got := val(ev.AppendEvents(c.ctx, eventBatch(c.a, turn.NewID(), 1, []turn.ID{a, b}, epoch)))(c, "append batch 1")
	c.idsEq(got, []turn.ID{a, b}, "ids returned by append")
	val(ev.AppendEvents(c.ctx, eventBatch(c.a, turn.NewID(), 2, []turn.ID{cc}, at(1))))(c, "append batch 2")

	history := val(ev.ListSince(c.ctx, c.a, caseKey(), 0, 10))(c, "list since 0")
	c.idsEq(eventIDs(history), []turn.ID{a, b, cc}, "list since 0")
	c.strictlyIncreasing(history, "list since 0")
	c.that(history[2].CaseRevision == 2, "the third event's revision is %d, want 2", history[2].CaseRevision)
	c.that(history[0].AccountID == c.a && history[0].CaseKey == caseKey() && history[0].EventType == "conformance.happened",
		"the first event's identity is wrong: %+v", history[0])
	c.that(history[0].OccurredAt.Equal(epoch) && history[2].OccurredAt.Equal(at(1)), "occurred_at not kept")
	c.that(turn.SameJSON(history[1].Payload, json.RawMessage(`{"index":1}`)), "payload not kept: %s", history[1].Payload)
	c.that(history[0].Redaction == nil, "a fresh event is marked redacted")
	since1 := val(ev.ListSince(c.ctx, c.a, caseKey(), 1, 10))(c, "list since 1")
	c.idsEq(eventIDs(since1), []turn.ID{cc}, "list since 1")
	capped := val(ev.ListSince(c.ctx, c.a, caseKey(), 0, 2))(c, "list since 0, limit 2")
	c.that(len(capped) == 2, "list since 0 with limit 2 returned %d", len(capped))

	unknown := turn.NewID()
	byID := val(ev.LoadEvents(c.ctx, c.a, []turn.ID{cc, unknown, a}))(c, "load events")
	c.idsEq(eventIDs(byID), []turn.ID{cc, a}, "load events in request order")
	c.same(byID[1], history[0], "an event loaded by id")
	byID = val(ev.LoadEvents(c.ctx, c.b, []turn.ID{cc, unknown, a}))(c, "load events as B")
	c.that(len(byID) == 0, "B loads %d of A's events", len(byID))
	byID = val(ev.LoadEvents(c.ctx, c.a, nil))(c, "load no events")
	c.that(len(byID) == 0, "an empty request returned %d events", len(byID))
	n := val(ev.CountEvents(c.ctx, c.a, caseKey()))(c, "count")
	c.that(n == 3, "count is %d, want 3", n)

	fresh := turn.NewID()
	_, err := ev.AppendEvents(c.ctx, eventBatch(c.a, turn.NewID(), 3, []turn.ID{fresh, a}, at(2)))
	c.errIs(err, turn.ErrConflict, "a batch repeating a stored id")
	dup := turn.NewID()
	_, err = ev.AppendEvents(c.ctx, eventBatch(c.a, turn.NewID(), 3, []turn.ID{dup, dup}, at(2)))
	c.errIs(err, turn.ErrConflict, "a batch repeating an id within itself")
	n = val(ev.CountEvents(c.ctx, c.a, caseKey()))(c, "count after refused batches")
	c.that(n == 3, "count after refused batches is %d, want 3", n)
	byID = val(ev.LoadEvents(c.ctx, c.a, []turn.ID{fresh, dup}))(c, "load the refused events")
	c.that(len(byID) == 0, "a refused batch left %d events", len(byID))
	_, err = ev.AppendEvents(c.ctx, turn.EventBatch{AccountID: c.a, CaseKey: caseKey(), CommandID: turn.NewID(), Revision: 3})
	c.errCode(err, turn.CodeInvalidRecord, "an empty batch")
}

// ReadFrom delivers every event of the account exactly once, in order, while appends continue.
func checkEventStreamCursorPagesExactlyOnce(c *C) {
	ev := c.s.Events
	f := newIDs(3)
	val(ev.AppendEvents(c.ctx, eventBatch(c.a, turn.NewID(), 1, f, epoch)))(c, "append f")
	page := val(ev.ReadFrom(c.ctx, c.a, turn.Start, 2))(c, "read the first page")
	c.idsEq(eventIDs(page.Events), f[:2], "the first page")
	c.that(page.Next == turn.After(page.Events[1].Sequence), "next cursor %d, want the sequence of f1 (%d)", page.Next, page.Events[1].Sequence)
	seen := page.Events
	cursor := page.Next

	s := newIDs(2)
	val(ev.AppendEvents(c.ctx, eventBatchFor(c.a, otherCaseKey(), turn.NewID(), 1, s, at(1))))(c, "append s on the other case")
	foreign := newIDs(1)
	val(ev.AppendEvents(c.ctx, eventBatch(c.b, turn.NewID(), 1, foreign, at(1))))(c, "append B's event")
	t0 := newIDs(1)
	val(ev.AppendEvents(c.ctx, eventBatch(c.a, turn.NewID(), 2, t0, at(2))))(c, "append t0")

	for round := 0; ; round++ {
		c.that(round < 10, "paging did not catch up in 10 rounds")
		page = val(ev.ReadFrom(c.ctx, c.a, cursor, 2))(c, "read from %d", cursor)
		if len(page.Events) == 0 {
			c.that(page.Next == cursor, "an empty page moved the cursor from %d to %d", cursor, page.Next)
			break
		}
		c.that(page.Next > cursor, "a page moved the cursor from %d to %d", cursor, page.Next)
		c.that(page.Next == turn.After(page.Events[len(page.Events)-1].Sequence), "next cursor is not the last sequence")
		seen = append(seen, page.Events...)
		cursor = page.Next
	}
	want := append(append(append([]turn.ID{}, f...), s...), t0...)
	c.idsEq(eventIDs(seen), want, "every event paged")
	c.strictlyIncreasing(seen, "paged events")
	page = val(ev.ReadFrom(c.ctx, c.a, cursor, 10))(c, "read after the end")
	c.that(len(page.Events) == 0 && page.Next == cursor, "reading after the end gave %d events, cursor %d", len(page.Events), page.Next)
	page = val(ev.ReadFrom(c.ctx, c.a, cursor, 0))(c, "read after the end with limit 0")
	c.that(len(page.Events) == 0 && page.Next == cursor, "limit 0 after the end gave %d events, cursor %d", len(page.Events), page.Next)
	page = val(ev.ReadFrom(c.ctx, c.a, turn.Start, 0))(c, "read from the start with limit 0")
	c.idsEq(eventIDs(page.Events), want, "limit 0 reads turn.DefaultLimit events: all of them")

	late := newIDs(1)
	val(ev.AppendEvents(c.ctx, eventBatch(c.a, turn.NewID(), 3, late, at(3))))(c, "append late")
	page = val(ev.ReadFrom(c.ctx, c.a, cursor, 10))(c, "read from the stored cursor")
	c.idsEq(eventIDs(page.Events), late, "events after the stored cursor")

	// The cursor survives as a plain number.
	raw, err := json.Marshal(cursor)
	c.ok(err, "marshal the cursor")
	var resumed turn.Cursor
	c.ok(json.Unmarshal(raw, &resumed), "unmarshal the cursor")
	c.that(resumed == cursor && !strings.ContainsAny(string(raw), `"{`), "the cursor is not a plain number: %s", raw)

	var replay []turn.Event
	cursor = turn.Start
	for round := 0; ; round++ {
		c.that(round < 20, "replay did not catch up in 20 rounds")
		page = val(ev.ReadFrom(c.ctx, c.a, cursor, 1))(c, "replay from %d", cursor)
		if len(page.Events) == 0 {
			break
		}
		replay = append(replay, page.Events...)
		cursor = page.Next
	}
	c.idsEq(eventIDs(replay), append(want, late...), "a replay from the start, one per page")
	page = val(ev.ReadFrom(c.ctx, c.b, turn.Start, 10))(c, "B's stream")
	c.idsEq(eventIDs(page.Events), foreign, "B's stream")
	_, err = ev.ReadFrom(c.ctx, c.a, -1, 10)
	c.errIs(err, turn.ErrInvalid, "a negative cursor")
	_, err = ev.ReadFrom(c.ctx, c.a, turn.Start, -1)
	c.errIs(err, turn.ErrInvalid, "a negative limit")
}

// ListSince is a cap that cannot resume inside a revision; ReadFrom can, up to the largest limit,
// and a larger one is refused. A cursor past the stream is no position a read produced: it is refused rather than
// read as "caught up", which would hide the events appended below it.
func checkRevisionReadTruncatesInsideARevision(c *C) {
	ev := c.s.Events
	ids := newIDs(3)
	val(ev.AppendEvents(c.ctx, eventBatch(c.a, turn.NewID(), 1, ids, epoch)))(c, "append")
	first := val(ev.ListSince(c.ctx, c.a, caseKey(), 0, 2))(c, "list since 0, limit 2")
	c.idsEq(eventIDs(first), ids[:2], "list since 0, limit 2")
	rest := val(ev.ListSince(c.ctx, c.a, caseKey(), 1, 2))(c, "list since 1")
	c.idsEq(eventIDs(rest), nil, "list since 1 (cannot resume inside revision 1)")
	page := val(ev.ReadFrom(c.ctx, c.a, turn.After(first[1].Sequence), turn.MaxLimit))(c, "read from the second event with the largest limit")
	c.idsEq(eventIDs(page.Events), ids[2:], "read from the second event")
	last := page.Next
	page = val(ev.ReadFrom(c.ctx, c.a, last, turn.MaxLimit))(c, "read from the last event with the largest limit")
	c.that(len(page.Events) == 0 && page.Next == last, "reading from the last event gave %d events and cursor %d, want none at %d",
		len(page.Events), page.Next, last)
	_, err := ev.ReadFrom(c.ctx, c.a, last, turn.MaxLimit+1)
	c.errIs(err, turn.ErrInvalid, "read with a limit above turn.MaxLimit")
	_, err = ev.ReadFrom(c.ctx, c.a, math.MaxInt64, 10)
	c.errIs(err, turn.ErrInvalid, "read from the largest cursor")
}

// Erasing a payload keeps the event's identity, order and count, and leaves no trace of it.
func checkEventRedactionPreservesIdentityAndOrder(c *C) {
	ev := c.s.Events
	p := newIDs(2)
	q := newIDs(1)
	val(ev.AppendEvents(c.ctx, withPersonalData(eventBatch(c.a, turn.NewID(), 1, p, epoch))))(c, "append p")
	val(ev.AppendEvents(c.ctx, withPersonalData(eventBatch(c.a, turn.NewID(), 2, q, at(1)))))(c, "append q")
	foreign := newIDs(1)
	val(ev.AppendEvents(c.ctx, withPersonalData(eventBatch(c.b, turn.NewID(), 1, foreign, epoch))))(c, "append B's event")
	before := val(ev.ReadFrom(c.ctx, c.a, turn.Start, 10))(c, "read before")
	c.that(len(before.Events) == 3, "read before: %d events, want 3", len(before.Events))

	red := val(ev.RedactPayload(c.ctx, c.a, p[1], authority))(c, "redact p1")
	c.that(red.Authority == authority, "the redaction's authority is %q", red.Authority)
	c.that(!red.RedactedAt.IsZero(), "the redaction has no time")
	after := val(ev.ReadFrom(c.ctx, c.a, turn.Start, 10))(c, "read after")
	const detail = "an erasure must not add, remove or move an event"
	c.that(len(after.Events) == len(before.Events) && after.Next == before.Next, "%s: %d events, next %d; before %d, next %d",
		detail, len(after.Events), after.Next, len(before.Events), before.Next)
	for i, e := range after.Events {
		b := before.Events[i]
		c.that(e.Sequence == b.Sequence && e.EventID == b.EventID && e.CaseRevision == b.CaseRevision &&
			e.EventType == b.EventType && e.OccurredAt.Equal(b.OccurredAt) && e.CommandID == b.CommandID &&
			e.CaseKey == b.CaseKey, "%s: event %d changed", detail, i)
		if e.EventID == p[1] {
			c.that(e.Redaction != nil, "p1 is not marked redacted")
			c.same(*e.Redaction, red, "p1's stored redaction")
			c.that(turn.SameJSON(e.Payload, json.RawMessage("null")), "p1's payload is %s, want null", e.Payload)
			raw, err := json.Marshal(e)
			c.ok(err, "marshal p1")
			c.that(!strings.Contains(string(raw), personalValue), "the redacted event still carries the erased value")
			groups := turn.GroupForReceipts([]turn.Event{e})
			c.that(len(groups) == 1 && len(groups[0].Events) == 1 && groups[0].Events[0].Redacted, "p1's receipt form is not redacted")
			continue
		}
		c.same(e, b, "an event the erasure did not target")
	}
	n := val(ev.CountEvents(c.ctx, c.a, caseKey()))(c, "count")
	c.that(n == 3, "%s: count is %d, want 3", detail, n)
	byID := val(ev.LoadEvents(c.ctx, c.a, []turn.ID{p[1]}))(c, "load p1")
	c.idsEq(eventIDs(byID), p[1:], "load p1 after the erasure")
	history := val(ev.ListSince(c.ctx, c.a, caseKey(), 0, 10))(c, "list since 0")
	c.idsEq(eventIDs(history), []turn.ID{p[0], p[1], q[0]}, detail)
	var paged []turn.Event
	cursor := turn.Start
	for round := 0; round < 10; round++ {
		page := val(ev.ReadFrom(c.ctx, c.a, cursor, 1))(c, "page by one")
		if len(page.Events) == 0 {
			break
		}
		paged = append(paged, page.Events...)
		cursor = page.Next
	}
	c.idsEq(eventIDs(paged), []turn.ID{p[0], p[1], q[0]}, detail)
	other := val(ev.ReadFrom(c.ctx, c.b, turn.Start, 10))(c, "B's stream")
	c.that(len(other.Events) == 1 && other.Events[0].Redaction == nil, "B's event was touched")
}

// An erasure is recorded once: a repeat keeps the first record.
func checkEventRedactionIsAuditedAndIdempotent(c *C) {
	ev := c.s.Events
	ids := newIDs(2)
	val(ev.AppendEvents(c.ctx, withPersonalData(eventBatch(c.a, turn.NewID(), 1, ids, epoch))))(c, "append")
	record := val(ev.RedactPayload(c.ctx, c.a, ids[0], authority))(c, "redact")
	stored := val(ev.LoadEvents(c.ctx, c.a, ids[:1]))(c, "load the redacted event")
	c.that(len(stored) == 1 && stored[0].Redaction != nil, "the stored event carries no redaction")
	c.same(*stored[0].Redaction, record, "the stored redaction")
	again := val(ev.RedactPayload(c.ctx, c.a, ids[0], authority2))(c, "redact again with another authority")
	c.same(again, record, "the repeated erasure's record")
	after := val(ev.LoadEvents(c.ctx, c.a, ids[:1]))(c, "load after the repeat")
	c.same(after, stored, "the event after a repeated erasure")
	n := val(ev.CountEvents(c.ctx, c.a, caseKey()))(c, "count")
	c.that(n == 2, "count is %d, want 2", n)
	_, err := ev.RedactPayload(c.ctx, c.a, turn.NewID(), authority)
	c.errIs(err, turn.ErrNotFound, "redact an unknown event")
	_, err = ev.RedactPayload(c.ctx, c.b, ids[1], authority)
	c.errIs(err, turn.ErrNotFound, "redact A's event as B")
	kept := val(ev.LoadEvents(c.ctx, c.a, ids[1:]))(c, "load the untouched event")
	c.that(len(kept) == 1 && kept[0].Redaction == nil && strings.Contains(string(kept[0].Payload), "full_name"),
		"the event B tried to erase lost its payload")
}
