package turntest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/steadhq/stead/turn"
)

// Time: every fixture time is an offset from the Unix epoch, so runs are reproducible.
var epoch = time.Unix(0, 0).UTC()

func at(s int) time.Time { return epoch.Add(time.Duration(s) * time.Second) }

const (
	workflow      = "conformance"
	authority     = "conformance-erasure-request"
	authority2    = "conformance-second-erasure-request"
	personalValue = "conformance-personal-data"
)

func caseRef(rev turn.Revision) turn.CaseRef {
	return turn.CaseRef{Workflow: workflow, CaseID: "case-1", ExpectedRevision: rev}
}

func otherCase(rev turn.Revision) turn.CaseRef {
	return turn.CaseRef{Workflow: workflow, CaseID: "case-2", ExpectedRevision: rev}
}

func caseKey() turn.CaseKey      { return caseRef(0).Key() }
func otherCaseKey() turn.CaseKey { return otherCase(0).Key() }

type cardOpt func(*turn.Interaction)

func nonBlocking(i *turn.Interaction)         { i.Blocking = false }
func revisionIndependent(i *turn.Interaction) { i.RevisionIndependent = true }
func expiresIn(d time.Duration) cardOpt {
	return func(i *turn.Interaction) { i.ExpiresAt = i.CreatedAt.Add(d) }
}

// card is a blocking, revision-bound single-select card with one option "ack", active, created
// at now in the check's conversation.
func (c *C) card(account string, ref turn.CaseRef, now time.Time, opts ...cardOpt) turn.Interaction {
	payload := turn.CardPayload{
		Title:    "conformance card",
		Options:  []turn.CardOption{{ID: "ack", Label: "Got it", Action: "dismiss"}},
		Metadata: json.RawMessage(`{"source":"conformance"}`),
	}
	it := turn.Interaction{
		ID: turn.NewID(), AccountID: account, ConversationID: c.conv, CaseRef: ref,
		CreatedByTurn: c.turnID, Kind: turn.KindSingleSelect, Blocking: true, Payload: payload,
		PayloadHash: turn.HashPayload(payload), Status: turn.InteractionActive,
		TextResolution: "never", ConfirmsRisk: "conservative", CreatedAt: now,
	}
	for _, o := range opts {
		o(&it)
	}
	return it
}

func (c *C) journalEntry(account string, turnID, cmd turn.ID, key string, createdAt time.Time) turn.JournalEntry {
	return turn.JournalEntry{
		CommandID: cmd, AccountID: account, IdempotencyKey: key, TurnID: turnID, CaseRef: caseRef(1),
		CommandType:    "conformance.noop",
		CommandPayload: jsonOf(map[string]string{"key": key}),
		Origin:         json.RawMessage(`{"kind":"internal_policy","policy_key":"conformance"}`),
		Status:         turn.JournalPending, CreatedAt: createdAt,
	}
}

func eventBatch(account string, cmd turn.ID, rev turn.Revision, ids []turn.ID, at time.Time) turn.EventBatch {
	return eventBatchFor(account, caseKey(), cmd, rev, ids, at)
}

func eventBatchFor(account string, key turn.CaseKey, cmd turn.ID, rev turn.Revision, ids []turn.ID, at time.Time) turn.EventBatch {
	b := turn.EventBatch{AccountID: account, CaseKey: key, CommandID: cmd, Revision: rev}
	for i, id := range ids {
		b.Events = append(b.Events, turn.NewEvent{EventID: id, EventType: "conformance.happened",
			OccurredAt: at, Payload: jsonOf(map[string]int{"index": i})})
	}
	return b
}

// withPersonalData adds a personal field to every payload of the batch.
func withPersonalData(b turn.EventBatch) turn.EventBatch {
	for i := range b.Events {
		b.Events[i].Payload = jsonOf(map[string]any{"index": i, "full_name": personalValue})
	}
	return b
}

func (c *C) outboxEntry(id, cmd turn.ID, key string, createdAt time.Time) turn.OutboxEntry {
	return turn.OutboxEntry{OutboxID: id, CommandID: cmd, Destination: c.destination,
		Payload: jsonOf(map[string]string{"key": key}), IdempotencyKey: key,
		Status: turn.OutboxPending, CreatedAt: createdAt}
}

func (c *C) conversation(account string, id turn.ID) turn.Conversation {
	return turn.Conversation{ID: id, AccountID: account, CreatedAt: epoch,
		Metadata: json.RawMessage(`{"channel":"conformance"}`)}
}

func userTurn(account string, conv, turnID turn.ID, at time.Time) turn.UserTurn {
	return turn.UserTurn{Input: turn.TurnInput{
		TurnID: turnID, ConversationID: conv,
		Actor: turn.Actor{AccountID: account, UserID: "conformance-user"},
		Text:  "conformance turn", Locale: "en",
		Origin: json.RawMessage(`{"channel":"conformance"}`),
	}, ReceivedAt: at}
}

func assistantTurn(conv, turnID turn.ID, card turn.Interaction) turn.AssistantTurn {
	return turn.AssistantTurn{
		TurnID: turnID, ConversationID: conv,
		Blocks: []turn.Block{
			{ID: "block-notice", Kind: "notice", Body: json.RawMessage(`{"code":"stead.notice.conformance","level":"info"}`)},
			{ID: "block-card", Kind: "card", Body: jsonOf(map[string]any{"interaction_id": card.ID, "title": card.Payload.Title})},
			{ID: "block-artifact", Kind: "artifact", Body: json.RawMessage(`{"name":"conformance.txt"}`)},
		},
		ReplayToken: "conformance-replay-token",
		Done:        true,
	}
}

func newIDs(n int) []turn.ID {
	out := make([]turn.ID, n)
	for i := range out {
		out[i] = turn.NewID()
	}
	return out
}

func jsonOf(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err) // fixtures only marshal plain maps
	}
	return raw
}

// canonical is v marshalled to JSON and decoded back: documents compare by meaning, and an
// empty slice equals an absent one, as they do after a round trip through any backend.
func canonical(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(raw, &out)
	return out, err
}

// Assertions: each stops the check at the first failure.

func (c *C) ok(err error, what string, args ...any) {
	if err != nil {
		c.fatalf("%s: unexpected error: %v", fmt.Sprintf(what, args...), err)
	}
}

func (c *C) errIs(err, target error, what string, args ...any) {
	if !errors.Is(err, target) {
		c.fatalf("%s: got error %v, want %v", fmt.Sprintf(what, args...), err, target)
	}
	if target == turn.ErrConflict {
		if why := explainedConflict(err); why != "" {
			c.fatalf("%s: conflict %q %s", fmt.Sprintf(what, args...), err.Error(), why)
		}
	}
}

// sqlText holds fragments of what SQLite and PostgreSQL say about a refused write. A conflict's
// message is for the caller (and the caller's logs and users): it says which rule refused the
// write in the contract's words, never the server's.
var sqlText = []string{"constraint failed", "violates", "duplicate key", "SQLSTATE", "UNIQUE",
	"FOREIGN KEY", "could not serialize", "deadlock detected", "sqlite", "(SQLITE_"}

// explainedConflict returns why a conflict's message breaks the rule ("" when it keeps it): it
// must say more than the sentinel, and carry no SQL server text.
func explainedConflict(err error) string {
	msg := err.Error()
	if msg == turn.ErrConflict.Error() {
		return "says only that there was a conflict, not which rule refused the write"
	}
	for _, frag := range sqlText {
		if strings.Contains(msg, frag) {
			return "carries the database's own text (" + frag + "): say which rule refused the write instead"
		}
	}
	return ""
}

func (c *C) errCode(err error, code string, what string, args ...any) {
	if !turn.HasCode(err, code) {
		c.fatalf("%s: got error %v, want code %s", fmt.Sprintf(what, args...), err, code)
	}
}

func (c *C) that(cond bool, format string, args ...any) {
	if !cond {
		c.fatalf(format, args...)
	}
}

func (c *C) same(got, want any, what string, args ...any) {
	g, err1 := canonical(got)
	w, err2 := canonical(want)
	if err1 != nil || err2 != nil || !reflect.DeepEqual(g, w) {
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		c.fatalf("%s:\n got  %s\n want %s", fmt.Sprintf(what, args...), gj, wj)
	}
}

func (c *C) idsEq(got, want []turn.ID, what string, args ...any) {
	if len(got) != len(want) {
		c.fatalf("%s: got %d ids %v, want %d %v", fmt.Sprintf(what, args...), len(got), got, len(want), want)
	}
	for i := range got {
		if got[i] != want[i] {
			c.fatalf("%s: got %v, want %v", fmt.Sprintf(what, args...), got, want)
		}
	}
}

func contains(ids []turn.ID, id turn.ID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// only keeps the ids that are among mine, in order: global operations (expiry, claims, recovery
// lists) may also name other writers' rows on a shared database.
func only(ids []turn.ID, mine ...turn.ID) []turn.ID {
	out := []turn.ID{}
	for _, id := range ids {
		if contains(mine, id) {
			out = append(out, id)
		}
	}
	return out
}

// val takes a (value, error) pair and returns a function that stops the check on the error and
// otherwise yields the value: v := val(store.Method(...))(c, "what").
func val[T any](v T, err error) func(c *C, what string, args ...any) T {
	return func(c *C, what string, args ...any) T {
		c.ok(err, what, args...)
		return v
	}
}

func interactionIDs(recs []turn.InteractionRecord) []turn.ID {
	out := []turn.ID{}
	for _, r := range recs {
		out = append(out, r.Interaction.ID)
	}
	return out
}

func commandIDs(es []turn.JournalEntry) []turn.ID {
	out := []turn.ID{}
	for _, e := range es {
		out = append(out, e.CommandID)
	}
	return out
}

func eventIDs(es []turn.Event) []turn.ID {
	out := []turn.ID{}
	for _, e := range es {
		out = append(out, e.EventID)
	}
	return out
}

func outboxIDs(es []turn.OutboxEntry) []turn.ID {
	out := []turn.ID{}
	for _, e := range es {
		out = append(out, e.OutboxID)
	}
	return out
}

func (c *C) loadCard(account string, id turn.ID) turn.InteractionRecord {
	rec, err := c.s.Interactions.LoadInteraction(c.ctx, account, id)
	c.ok(err, "load interaction %s", id)
	return rec
}

func (c *C) cardStatus(id turn.ID) turn.InteractionStatus {
	return c.loadCard(c.a, id).Interaction.Status
}
