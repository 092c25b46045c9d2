package console

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/memturn"
)

// turnWorld is one turn of account "acme" that went all the way to committed, with a card, a
// journal entry, two events and an outbox row, beside an event of another command and a
// conversation of another account.
type turnWorld struct {
	conv, turnID, card, command, first, second, noise, outbox, foreignConv turn.ID
}

func seedTurns(t *testing.T) (turn.Stores, turnWorld) {
	t.Helper()
	ctx := t.Context()
	s := memturn.New()
	t.Cleanup(func() { s.Close() })
	w := turnWorld{conv: turn.NewID(), turnID: turn.NewID(), card: turn.NewID(), command: turn.NewID(),
		first: turn.NewID(), second: turn.NewID(), noise: turn.NewID(), outbox: turn.NewID(), foreignConv: turn.NewID()}
	must := func(err error, what string) {
		t.Helper()
		if err != nil {
			t.Fatalf("seed: %s: %v", what, err)
		}
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	must(s.Conversations.CreateConversation(ctx, turn.Conversation{ID: w.conv, AccountID: "acme", CreatedAt: at,
		Metadata: json.RawMessage(`{"channel":"web"}`)}), "conversation")
	must(s.Conversations.CreateConversation(ctx, turn.Conversation{ID: w.foreignConv, AccountID: "other", CreatedAt: at}), "foreign conversation")
	must(s.Conversations.AppendUserTurn(ctx, turn.UserTurn{ReceivedAt: at, Input: turn.TurnInput{TurnID: w.turnID,
		ConversationID: w.conv, Actor: turn.Actor{AccountID: "acme", UserID: "ada"}, Text: "cancel my <b>order</b>"}}), "user turn")
	ref := turn.CaseRef{Workflow: "orders", CaseID: "o-7", ExpectedRevision: 1}
	_, err := s.Journal.BeginCommand(ctx, turn.JournalEntry{CommandID: w.command, AccountID: "acme", IdempotencyKey: "cancel-o-7",
		TurnID: w.turnID, CaseRef: ref, CommandType: "order.cancel", Status: turn.JournalPending, CreatedAt: at})
	must(err, "begin command")
	must(s.Journal.MarkExecuting(ctx, "acme", w.command), "mark executing")
	_, err = s.Events.AppendEvents(ctx, turn.EventBatch{AccountID: "acme", CaseKey: turn.CaseKey{Workflow: "orders", CaseID: "o-8"},
		CommandID: turn.NewID(), Revision: 4, Events: []turn.NewEvent{{EventID: w.noise, EventType: "order.noted", OccurredAt: at}}})
	must(err, "another command's event")
	payload := turn.CardPayload{Title: "Cancel order o-7?", Options: []turn.CardOption{{ID: "yes", Label: "Yes"}}}
	_, err = s.Commits.Commit(ctx, "acme", turn.Bundle{
		JournalCompletions: []turn.JournalCompletion{{CommandID: w.command, Outcome: turn.Committed(2, w.first, w.second)}},
		Events: []turn.EventBatch{{AccountID: "acme", CaseKey: ref.Key(), CommandID: w.command, Revision: 2, Events: []turn.NewEvent{
			{EventID: w.first, EventType: "order.cancel_requested", OccurredAt: at, Payload: json.RawMessage(`{"by":"Ada"}`)},
			{EventID: w.second, EventType: "order.cancelled", OccurredAt: at, Payload: json.RawMessage(`{"refund":12}`)},
		}}},
		InteractionInserts: []turn.InteractionInsert{{Interaction: turn.Interaction{ID: w.card, AccountID: "acme",
			ConversationID: w.conv, CaseRef: ref, CreatedByTurn: w.turnID, Kind: turn.KindConfirmCommand, Blocking: true,
			Payload: payload, PayloadHash: turn.HashPayload(payload), Status: turn.InteractionActive, CreatedAt: at}}},
		OutboxEntries: []turn.OutboxEntry{{OutboxID: w.outbox, CommandID: w.command, Destination: "mailer",
			Payload: json.RawMessage(`{"template":"cancelled"}`), IdempotencyKey: "mail-o-7", Status: turn.OutboxPending, CreatedAt: at}},
		TurnPhase: &turn.PhaseUpdate{TurnID: w.turnID, Phase: turn.PhaseCommitted},
	})
	must(err, "commit")
	_, err = s.Events.RedactPayload(ctx, "acme", w.first, "erasure request 12")
	must(err, "erase")
	must(s.Conversations.AppendAssistantTurn(ctx, "acme", turn.AssistantTurn{TurnID: w.turnID, ConversationID: w.conv,
		Blocks: []turn.Block{{ID: "b1", Kind: "text"}}, Done: true}), "assistant turn")
	return s, w
}

// TestTurnPages reads a turn store through the console: an account's conversations, one
// conversation, one turn with its cards, journal, outbox and events (its own only, an erased one
// marked), each scoped by the account, and every mistake a page that says what it is.
func TestTurnPages(t *testing.T) {
	stores, w := seedTurns(t)
	ro := stores.ReadOnly()
	f := newFixture(t, Config{Turns: &ro})
	q := func(path, account string, id turn.ID) string {
		return path + "?account=" + account + "&id=" + id.String()
	}
	for _, tc := range []struct {
		name, target string
		status       int
		say          []string
		not          []string
	}{
		{"nav link", "/", 200, []string{`id="nav-turns"`}, nil},
		{"ask for an account", "/turns", 200, []string{"one account at a time"}, []string{`id="conversations"`}},
		{"conversations", "/turns?account=acme", 200, []string{w.conv.String(), "channel"}, []string{w.foreignConv.String()}},
		{"no conversations", "/turns?account=nobody", 200, []string{`id="no-conversations"`}, nil},
		{"conversation", q("/turns/conversation", "acme", w.conv), 200,
			[]string{w.turnID.String(), "committed", "Cancel order o-7?", "cancel my &lt;b&gt;order&lt;/b&gt;"}, []string{"<b>order"}},
		{"turn", q("/turns/turn", "acme", w.turnID), 200, []string{
			`id="phase">committed`, "1 block(s), done", w.card.String(), w.command.String(), "order.cancel", "cancel-o-7",
			w.outbox.String(), "mailer", w.second.String(), "refund", "on the authority of erasure request 12",
		}, []string{w.noise.String(), `{"by":"Ada"}`}},
		{"another account's conversation", q("/turns/conversation", "other", w.conv), 404, []string{"no such conversation or turn in that account"}, nil},
		{"another account's turn", q("/turns/turn", "other", w.turnID), 404, []string{"no such conversation or turn"}, nil},
		{"no account", "/turns/turn?id=" + w.turnID.String(), 400, []string{"no account"}, nil},
		{"malformed id", "/turns/turn?account=acme&id=t-1", 400, []string{"is not a turn-store id"}, nil},
		{"bad cursor", q("/turns/turn", "acme", w.turnID) + "&after=-1", 400, []string{"want an event cursor"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := f.get(tc.target)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, body)
			}
			for _, s := range tc.say {
				if !strings.Contains(body, s) {
					t.Errorf("page lacks %q", s)
				}
			}
			for _, s := range tc.not {
				if strings.Contains(body, s) {
					t.Errorf("page shows %q", s)
				}
			}
		})
	}
	// Without a turn store there are no turn pages.
	plain := newFixture(t, Config{})
	if res, body := plain.get("/turns?account=acme"); res.StatusCode != http.StatusNotFound || strings.Contains(body, "nav-turns") {
		t.Errorf("a console without Turns: /turns answers %d", res.StatusCode)
	}
}
