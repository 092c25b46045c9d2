package turntest

import (
	"encoding/json"
	"math"
	"time"

	"github.com/steadhq/stead/turn"
)

// The checks below hold every backend to the input rules the checked Stores keep: each of them
// names a way a backend once answered bad input differently from another.

// inputWorld is a conversation with one turn, an active card, a pending command, a pending outbox
// row and one event: real rows for a refused call to leave untouched.
type inputWorld struct {
	card, cmd, outbox, event turn.ID
}

func (c *C) inputWorld() inputWorld {
	s := c.s
	c.ok(s.Conversations.CreateConversation(c.ctx, c.conversation(c.a, c.conv)), "create the conversation")
	c.ok(s.Conversations.AppendUserTurn(c.ctx, userTurn(c.a, c.conv, c.turnID, epoch)), "append the turn")
	card := c.card(c.a, caseRef(1), epoch)
	c.ok(s.Interactions.InsertInteraction(c.ctx, card), "insert the card")
	w := inputWorld{card: card.ID, cmd: turn.NewID(), outbox: turn.NewID(), event: turn.NewID()}
	val(s.Journal.BeginCommand(c.ctx, c.journalEntry(c.a, c.turnID, w.cmd, "input", epoch)))(c, "begin the command")
	c.ok(s.Outbox.Enqueue(c.ctx, c.outboxEntry(w.outbox, w.cmd, "input", epoch)), "enqueue")
	val(s.Events.AppendEvents(c.ctx, eventBatch(c.a, w.cmd, 1, []turn.ID{w.event}, epoch)))(c, "append the event")
	return w
}

// untouched checks that the world's rows are as inputWorld left them.
func (c *C) untouched(w inputWorld) {
	s := c.s
	c.that(c.cardStatus(w.card) == turn.InteractionActive, "the card was moved by a refused call: %s", c.cardStatus(w.card))
	e := val(s.Journal.LoadCommand(c.ctx, c.a, w.cmd))(c, "load the command")
	c.that(e.Status == turn.JournalPending && e.Result == nil, "the command was moved by a refused call: %s", e.Status)
	o := val(s.Outbox.LoadOutbox(c.ctx, w.outbox))(c, "load the outbox row")
	c.that(o.Entry.Status == turn.OutboxPending && o.LastFailure == "", "the outbox row was moved by a refused call: %s", o.Entry.Status)
	evs := val(s.Events.LoadEvents(c.ctx, c.a, []turn.ID{w.event}))(c, "load the event")
	c.that(len(evs) == 1 && evs[0].Redaction == nil, "the event was erased by a refused call")
	m := val(s.Conversations.TurnPhase(c.ctx, c.a, c.turnID))(c, "the turn's phase")
	c.that(m.Phase == turn.PhaseReceived, "the turn's phase was moved by a refused call: %s", m.Phase)
	_, err := s.Replay.LoadReplay(c.ctx, c.a, c.turnID)
	c.errIs(err, turn.ErrNotFound, "a replay record written by a refused call")
	convs := val(s.Conversations.LoadRecentTurns(c.ctx, c.a, c.conv, 10))(c, "the conversation's turns")
	c.that(len(convs) == 1 && convs[0].Assistant == nil, "a refused call answered or added a turn")
}

// A zero id or an empty account is ErrInvalid wherever one is required, never ErrNotFound or an
// empty answer, and nothing is written.
func checkZeroIDsAndEmptyAccountsAreInvalid(c *C) {
	w := c.inputWorld()
	s := c.s
	var zero turn.ID
	a := c.a
	key := caseKey()
	errOf := func(_ any, err error) error { return err }
	calls := []struct {
		name string
		err  error
	}{
		{"load a conversation by zero id", errOf(s.Conversations.LoadConversation(c.ctx, a, zero))},
		{"load a conversation of no account", errOf(s.Conversations.LoadConversation(c.ctx, "", c.conv))},
		{"cards of a zero turn", errOf(s.Interactions.InteractionsForTurn(c.ctx, a, zero))},
		{"cards of a turn of no account", errOf(s.Interactions.InteractionsForTurn(c.ctx, "", c.turnID))},
		{"conversations of no account", errOf(s.Conversations.ListConversations(c.ctx, "", 10))},
		{"recent turns of a zero conversation", errOf(s.Conversations.LoadRecentTurns(c.ctx, a, zero, 10))},
		{"recent turns of no account", errOf(s.Conversations.LoadRecentTurns(c.ctx, "", c.conv, 10))},
		{"load a zero turn", errOf(s.Conversations.LoadTurn(c.ctx, a, zero))},
		{"load a turn of no account", errOf(s.Conversations.LoadTurn(c.ctx, "", c.turnID))},
		{"phase of a zero turn", errOf(s.Conversations.TurnPhase(c.ctx, a, zero))},
		{"phase of no account", errOf(s.Conversations.TurnPhase(c.ctx, "", c.turnID))},
		{"answer a zero turn", s.Conversations.AppendAssistantTurn(c.ctx, a, turn.AssistantTurn{TurnID: zero, ConversationID: c.conv})},
		{"answer for no account", s.Conversations.AppendAssistantTurn(c.ctx, "", turn.AssistantTurn{TurnID: c.turnID, ConversationID: c.conv})},
		{"set the phase of a zero turn", errOf(s.Conversations.SetTurnPhase(c.ctx, a, zero, turn.PhaseReduced))},
		{"set a phase for no account", errOf(s.Conversations.SetTurnPhase(c.ctx, "", c.turnID, turn.PhaseReduced))},
		{"load a zero card", errOf(s.Interactions.LoadInteraction(c.ctx, a, zero))},
		{"load a card of no account", errOf(s.Interactions.LoadInteraction(c.ctx, "", w.card))},
		{"open cards of a zero conversation", errOf(s.Interactions.ListOpenForConversation(c.ctx, a, zero))},
		{"open cards of no account", errOf(s.Interactions.ListOpenForConversation(c.ctx, "", c.conv))},
		{"open cards of a case of no account", errOf(s.Interactions.ListOpenForCase(c.ctx, "", key))},
		{"answered blocking card of no account", errOf(s.Interactions.BlockingAnsweredAt(c.ctx, "", key, 1))},
		{"begin resolving a zero card", errOf(s.Interactions.BeginResolution(c.ctx, a, zero, turn.InteractionActive, "ack", c.turnID))},
		{"begin resolving answered by a zero turn", errOf(s.Interactions.BeginResolution(c.ctx, a, w.card, turn.InteractionActive, "ack", zero))},
		{"begin resolving for no account", errOf(s.Interactions.BeginResolution(c.ctx, "", w.card, turn.InteractionActive, "ack", c.turnID))},
		{"finish a zero card", errOf(s.Interactions.FinishResolution(c.ctx, a, zero, turn.Resolved()))},
		{"finish for no account", errOf(s.Interactions.FinishResolution(c.ctx, "", w.card, turn.Resolved()))},
		{"invalidate for no account", errOf(s.Interactions.InvalidateForCase(c.ctx, "", key, 2, turn.RevisionChanged()))},
		{"withdraw cards for no account", errOf(s.Interactions.InvalidateCaseCards(c.ctx, "", key, turn.CaseClosed()))},
		{"load a zero command", errOf(s.Journal.LoadCommand(c.ctx, a, zero))},
		{"load a command of no account", errOf(s.Journal.LoadCommand(c.ctx, "", w.cmd))},
		{"commands of a zero turn", errOf(s.Journal.CommandsForTurn(c.ctx, a, zero))},
		{"commands of no account", errOf(s.Journal.CommandsForTurn(c.ctx, "", c.turnID))},
		{"pending commands of a zero turn", errOf(s.Journal.PendingForTurn(c.ctx, a, zero))},
		{"pending commands of no account", errOf(s.Journal.PendingForTurn(c.ctx, "", c.turnID))},
		{"execute a zero command", s.Journal.MarkExecuting(c.ctx, a, zero)},
		{"execute for no account", s.Journal.MarkExecuting(c.ctx, "", w.cmd)},
		{"complete a zero command", s.Journal.CompleteCommand(c.ctx, a, zero, turn.Failed("input"))},
		{"complete for no account", s.Journal.CompleteCommand(c.ctx, "", w.cmd, turn.Failed("input"))},
		{"events of a case of no account", errOf(s.Events.ListSince(c.ctx, "", key, 0, 10))},
		{"the stream of no account", errOf(s.Events.ReadFrom(c.ctx, "", turn.Start, 10))},
		{"load a zero event", errOf(s.Events.LoadEvents(c.ctx, a, []turn.ID{w.event, zero}))},
		{"load events of no account", errOf(s.Events.LoadEvents(c.ctx, "", []turn.ID{w.event}))},
		{"count events of no account", errOf(s.Events.CountEvents(c.ctx, "", key))},
		{"erase a zero event", errOf(s.Events.RedactPayload(c.ctx, a, zero, authority))},
		{"erase for no account", errOf(s.Events.RedactPayload(c.ctx, "", w.event, authority))},
		{"load a zero outbox row", errOf(s.Outbox.LoadOutbox(c.ctx, zero))},
		{"outbox rows of a zero command", errOf(s.Outbox.OutboxForCommand(c.ctx, zero))},
		{"complete a zero outbox row", s.Outbox.MarkCompleted(c.ctx, zero)},
		{"fail a zero outbox row", s.Outbox.MarkFailed(c.ctx, zero, "input", time.Time{})},
		{"retry a zero outbox row", s.Outbox.MarkFailed(c.ctx, zero, "input", at(5))},
		{"mark a zero outbox row unknown", s.Outbox.MarkOutcomeUnknown(c.ctx, zero, "")},
		{"reschedule a zero outbox row", s.Outbox.Reschedule(c.ctx, zero, at(5))},
		{"load a replay record of a zero turn", errOf(s.Replay.LoadReplay(c.ctx, a, zero))},
		{"load a replay record of no account", errOf(s.Replay.LoadReplay(c.ctx, "", c.turnID))},
		{"replay records of a zero conversation", errOf(s.Replay.ReplaysForConversation(c.ctx, a, zero, 10))},
		{"replay records of no account", errOf(s.Replay.ReplaysForConversation(c.ctx, "", c.conv, 10))},
		{"a bundle completing a zero command", errOf(s.Commits.Commit(c.ctx, a, turn.Bundle{
			JournalCompletions: []turn.JournalCompletion{{Outcome: turn.Failed("input")}},
			TurnPhase:          &turn.PhaseUpdate{TurnID: c.turnID, Phase: turn.PhaseCommitted}}))},
		{"a bundle finishing a zero card", errOf(s.Commits.Commit(c.ctx, a, turn.Bundle{
			InteractionFinishes: []turn.InteractionFinish{{Outcome: turn.Resolved()}},
			TurnPhase:           &turn.PhaseUpdate{TurnID: c.turnID, Phase: turn.PhaseCommitted}}))},
		{"a bundle setting the phase of a zero turn", errOf(s.Commits.Commit(c.ctx, a, turn.Bundle{
			TurnPhase: &turn.PhaseUpdate{Phase: turn.PhaseCommitted}}))},
	}
	for _, call := range calls {
		c.errIs(call.err, turn.ErrInvalid, "%s", call.name)
	}
	c.untouched(w)
}

// A document PostgreSQL's jsonb would refuse is ErrInvalid on every backend: a lone surrogate
// escape, and a number whose exponent numeric cannot hold.
func checkJSONPostgresRefusesIsInvalid(c *C) {
	w := c.inputWorld()
	s := c.s
	docs := []struct {
		name string
		doc  json.RawMessage
	}{
		{"a lone high surrogate", json.RawMessage(`{"name":"\ud800"}`)},
		{"a lone low surrogate", json.RawMessage(`{"name":"\udc00"}`)},
		{"a high surrogate followed by no low one", json.RawMessage(`["\ud800\u0041"]`)},
		{"a lone high surrogate in a key", json.RawMessage(`{"\ud800":true}`)},
		{"an exponent numeric cannot hold", json.RawMessage(`{"amount":1e999999}`)},
		{"a scale numeric cannot hold", json.RawMessage(`[1e-16384]`)},
	}
	errOf := func(_ any, err error) error { return err }
	for _, d := range docs {
		conv := c.conversation(c.a, turn.NewID())
		conv.Metadata = d.doc
		c.errIs(s.Conversations.CreateConversation(c.ctx, conv), turn.ErrInvalid, "conversation metadata with %s", d.name)
		batch := eventBatch(c.a, w.cmd, 2, newIDs(1), epoch)
		batch.Events[0].Payload = d.doc
		c.errIs(errOf(s.Events.AppendEvents(c.ctx, batch)), turn.ErrInvalid, "an event payload with %s", d.name)
		entry := c.outboxEntry(turn.NewID(), w.cmd, "json", epoch)
		entry.Payload = d.doc
		c.errIs(s.Outbox.Enqueue(c.ctx, entry), turn.ErrInvalid, "an outbox payload with %s", d.name)
		replay := turn.ReceivedReplay(c.turnID, c.conv, c.a, epoch)
		replay.Details = d.doc
		c.errIs(s.Replay.PutReplay(c.ctx, replay), turn.ErrInvalid, "replay details with %s", d.name)
		c.errIs(s.Journal.CompleteCommand(c.ctx, c.a, w.cmd, turn.JournalOutcome{Kind: turn.OutcomeRejected, Rejection: d.doc}),
			turn.ErrInvalid, "a rejection with %s", d.name)
		c.errIs(errOf(s.Commits.Commit(c.ctx, c.a, turn.Bundle{Events: []turn.EventBatch{batch},
			TurnPhase: &turn.PhaseUpdate{TurnID: c.turnID, Phase: turn.PhaseCommitted}})), turn.ErrInvalid, "a bundle event with %s", d.name)
	}
	n := val(s.Events.CountEvents(c.ctx, c.a, caseKey()))(c, "count the events")
	c.that(n == 1, "%d events after refused appends, want the world's one", n)
	c.untouched(w)

	// What jsonb does store is stored: a surrogate pair, and numbers at numeric's limits.
	conv := c.conversation(c.a, turn.NewID())
	conv.Metadata = json.RawMessage(`{"smile":"\ud83d\ude00"}`)
	c.ok(s.Conversations.CreateConversation(c.ctx, conv), "metadata with a surrogate pair")
	got := val(s.Conversations.LoadConversation(c.ctx, c.a, conv.ID))(c, "load it back")
	c.that(turn.SameJSON(got.Metadata, json.RawMessage(`{"smile":"😀"}`)), "metadata read back as %s", got.Metadata)
	conv = c.conversation(c.a, turn.NewID())
	conv.Metadata = json.RawMessage(`{"big":1e131071,"small":1e-16383,"zero":0e999999}`)
	c.ok(s.Conversations.CreateConversation(c.ctx, conv), "metadata with numbers at numeric's limits")
}

// An enum argument that is no value of its type is ErrInvalid, never a conflict: a legal value
// the rule refuses is the conflict.
func checkUnknownEnumValuesAreInvalid(c *C) {
	w := c.inputWorld()
	s := c.s
	_, err := s.Interactions.BeginResolution(c.ctx, c.a, w.card, "pondering", "ack", c.turnID)
	c.errIs(err, turn.ErrInvalid, "begin resolution expecting an unknown status")
	_, err = s.Interactions.BeginResolution(c.ctx, c.a, w.card, "", "ack", c.turnID)
	c.errIs(err, turn.ErrInvalid, "begin resolution expecting no status")
	_, err = s.Interactions.BeginResolution(c.ctx, c.a, w.card, turn.InteractionExpired, "ack", c.turnID)
	c.errIs(err, turn.ErrConflict, "begin resolution expecting a status it cannot start from")
	_, err = s.Conversations.SetTurnPhase(c.ctx, c.a, c.turnID, "teleported")
	c.errIs(err, turn.ErrInvalid, "an unknown phase")
	_, err = s.Interactions.FinishResolution(c.ctx, c.a, w.card, turn.ResolutionOutcome{Kind: "shrugged"})
	c.errIs(err, turn.ErrInvalid, "an unknown resolution")
	_, err = s.Interactions.InvalidateForCase(c.ctx, c.a, caseKey(), 2, turn.InvalidationReason{Kind: "whim"})
	c.errIs(err, turn.ErrInvalid, "an unknown invalidation")
	c.errIs(s.Journal.CompleteCommand(c.ctx, c.a, w.cmd, turn.JournalOutcome{Kind: "shrug"}), turn.ErrInvalid, "an unknown outcome")
	card := c.card(c.a, otherCase(1), epoch)
	card.Kind = "riddle"
	c.errIs(s.Interactions.InsertInteraction(c.ctx, card), turn.ErrInvalid, "an unknown card kind")
	card = c.card(c.a, otherCase(1), epoch)
	card.Status = "pondering"
	c.errIs(s.Interactions.InsertInteraction(c.ctx, card), turn.ErrInvalid, "an unknown card status")
	entry := c.journalEntry(c.a, c.turnID, turn.NewID(), "enum", epoch)
	entry.Status = "sleeping"
	_, err = s.Journal.BeginCommand(c.ctx, entry)
	c.errIs(err, turn.ErrInvalid, "an unknown journal status")
	row := c.outboxEntry(turn.NewID(), w.cmd, "enum", epoch)
	row.Status = "lost"
	c.errIs(s.Outbox.Enqueue(c.ctx, row), turn.ErrInvalid, "an unknown outbox status")
	replay := turn.ReceivedReplay(c.turnID, c.conv, c.a, epoch)
	replay.Phase = "later"
	c.errIs(s.Replay.PutReplay(c.ctx, replay), turn.ErrInvalid, "an unknown replay phase")
	_, err = s.Commits.Commit(c.ctx, c.a, turn.Bundle{TurnPhase: &turn.PhaseUpdate{TurnID: c.turnID, Phase: "later"}})
	c.errIs(err, turn.ErrInvalid, "a bundle with an unknown phase")
	c.untouched(w)
}

// Times are checked once in UTC: an offset cannot carry a time past the years 1 to 9999, and
// what is stored comes back in UTC at microsecond precision.
func checkTimesAreCheckedInUTC(c *C) {
	s := c.s
	west := time.FixedZone("UTC-5", -5*3600)
	east := time.FixedZone("UTC+5", 5*3600)
	late := time.Date(9999, 12, 31, 20, 0, 0, 0, west) // 10000-01-01T01:00Z
	early := time.Date(1, 1, 1, 1, 0, 0, 0, east)      // year 0 in UTC
	errOf := func(_ any, err error) error { return err }
	for _, t := range []struct {
		name string
		at   time.Time
	}{{"the last day at -05:00", late}, {"the first day at +05:00", early}} {
		conv := c.conversation(c.a, turn.NewID())
		conv.CreatedAt = t.at
		c.errIs(s.Conversations.CreateConversation(c.ctx, conv), turn.ErrInvalid, "a conversation created on %s", t.name)
		batch := eventBatch(c.a, turn.NewID(), 1, newIDs(1), t.at)
		c.errIs(errOf(s.Events.AppendEvents(c.ctx, batch)), turn.ErrInvalid, "an event that occurred on %s", t.name)
		card := c.card(c.a, caseRef(1), epoch, expiresIn(0))
		card.ExpiresAt = t.at
		c.errIs(s.Interactions.InsertInteraction(c.ctx, card), turn.ErrInvalid, "a card expiring on %s", t.name)
		row := c.outboxEntry(turn.NewID(), turn.NewID(), "utc-"+t.name, epoch)
		row.NextAttemptAt = t.at
		c.errIs(s.Outbox.Enqueue(c.ctx, row), turn.ErrInvalid, "an outbox row due on %s", t.name)
		c.errIs(errOf(s.Outbox.ClaimDue(c.ctx, t.at, 1, "utc")), turn.ErrInvalid, "a claim at %s", t.name)
		c.errIs(errOf(s.Interactions.ExpireDue(c.ctx, t.at)), turn.ErrInvalid, "an expiry sweep at %s", t.name)
		c.errIs(errOf(s.Outbox.ReleaseExpiredClaims(c.ctx, t.at)), turn.ErrInvalid, "a reaping at %s", t.name)
		c.errIs(errOf(s.Commits.Commit(c.ctx, c.a, turn.Bundle{Events: []turn.EventBatch{batch}})), turn.ErrInvalid,
			"a bundle with an event that occurred on %s", t.name)
	}
	c.errIs(errOf(s.Outbox.ClaimDue(c.ctx, time.Time{}, 1, "utc")), turn.ErrInvalid, "a claim at the zero time")
	c.errIs(errOf(s.Interactions.ExpireDue(c.ctx, time.Time{})), turn.ErrInvalid, "an expiry sweep at the zero time")
	conv := c.conversation(c.a, turn.NewID())
	conv.CreatedAt = time.Time{}
	c.errIs(s.Conversations.CreateConversation(c.ctx, conv), turn.ErrInvalid, "a conversation created at the zero time")
	page := val(s.Events.ReadFrom(c.ctx, c.a, turn.Start, 10))(c, "the stream")
	c.that(len(page.Events) == 0, "%d refused events were written", len(page.Events))

	// The same last day east of Greenwich is still year 9999 in UTC, and comes back in UTC.
	conv = c.conversation(c.a, turn.NewID())
	conv.CreatedAt = time.Date(9999, 12, 31, 20, 0, 0, 123456789, east)
	c.ok(s.Conversations.CreateConversation(c.ctx, conv), "a conversation created on the last day at +05:00")
	got := val(s.Conversations.LoadConversation(c.ctx, c.a, conv.ID))(c, "load it")
	want := time.Date(9999, 12, 31, 15, 0, 0, 123456000, time.UTC)
	c.that(got.CreatedAt.Equal(want) && got.CreatedAt.Location() == time.UTC, "created at read back as %v, want %v", got.CreatedAt, want)
}

// ReadFrom accepts exactly the cursors a read can produce, Start and the sequence of one of the
// account's events, and refuses every other one with ErrInvalid.
func checkForgedCursorsAreInvalid(c *C) {
	ev := c.s.Events
	mine := newIDs(3)
	val(ev.AppendEvents(c.ctx, eventBatch(c.a, turn.NewID(), 1, mine[:2], epoch)))(c, "append A's first events")
	theirs := newIDs(1)
	val(ev.AppendEvents(c.ctx, eventBatch(c.b, turn.NewID(), 1, theirs, epoch)))(c, "append B's event")
	val(ev.AppendEvents(c.ctx, eventBatch(c.a, turn.NewID(), 2, mine[2:], epoch)))(c, "append A's last event")
	page := val(ev.ReadFrom(c.ctx, c.a, turn.Start, 10))(c, "A's stream")
	c.idsEq(eventIDs(page.Events), mine, "A's stream")
	foreign := val(ev.ReadFrom(c.ctx, c.b, turn.Start, 10))(c, "B's stream").Events[0].Sequence

	// Every cursor a read produced, and After of every event of A's, resumes.
	for i, e := range page.Events {
		rest := val(ev.ReadFrom(c.ctx, c.a, turn.After(e.Sequence), 10))(c, "resume after event %d", i)
		c.idsEq(eventIDs(rest.Events), mine[i+1:], "resume after event %d", i)
	}
	last := page.Next
	caught := val(ev.ReadFrom(c.ctx, c.a, last, 10))(c, "read when caught up")
	c.that(len(caught.Events) == 0 && caught.Next == last, "caught up: %d events, cursor %d, want none at %d", len(caught.Events), caught.Next, last)

	forged := []struct {
		name   string
		cursor turn.Cursor
	}{
		{"a negative cursor", -1},
		{"the smallest cursor", math.MinInt64},
		{"a cursor just past A's last event", last + 1},
		{"the largest cursor", math.MaxInt64},
		{"another account's sequence", turn.After(foreign)},
	}
	for _, f := range forged {
		_, err := ev.ReadFrom(c.ctx, c.a, f.cursor, 10)
		c.errIs(err, turn.ErrInvalid, "%s (%d)", f.name, f.cursor)
		_, err = c.s.ReadOnly().Events.ReadFrom(c.ctx, c.a, f.cursor, 0)
		c.errIs(err, turn.ErrInvalid, "%s (%d) through the read-only view, limit 0", f.name, f.cursor)
	}
	// Sequences are store-wide with gaps: a number between two of A's events that is not one of
	// them was never handed to A.
	for seq := page.Events[0].Sequence + 1; seq < min(page.Events[2].Sequence, page.Events[0].Sequence+64); seq++ {
		if seq == page.Events[1].Sequence {
			continue
		}
		_, err := ev.ReadFrom(c.ctx, c.a, turn.After(seq), 10)
		c.errIs(err, turn.ErrInvalid, "the cursor %d between two of A's events", seq)
	}
}
