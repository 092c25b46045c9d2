package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/sqliteturn"
)

// turnWorld is what seedTurns wrote: one turn of account "acme" that went all the way to
// committed, with a card, a journal entry, two events and an outbox row, beside rows that are
// not the turn's (another conversation, another command's event, another account).
type turnWorld struct {
	path                 string
	conv, newerConv      turn.ID
	turnID, idleTurn     turn.ID
	card, command        turn.ID
	first, second, noise turn.ID // the turn's two events, and an event of another command
	outbox               turn.ID
	foreignConv          turn.ID // a conversation of account "other"
}

var seedTime = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func seedTurns(t *testing.T) turnWorld {
	t.Helper()
	ctx := t.Context()
	w := turnWorld{path: filepath.Join(t.TempDir(), "turns.db"),
		conv: turn.NewID(), newerConv: turn.NewID(), turnID: turn.NewID(), idleTurn: turn.NewID(),
		card: turn.NewID(), command: turn.NewID(), first: turn.NewID(), second: turn.NewID(),
		noise: turn.NewID(), outbox: turn.NewID(), foreignConv: turn.NewID()}
	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: w.path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := sqliteturn.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	must := func(err error, what string) {
		t.Helper()
		if err != nil {
			t.Fatalf("seed: %s: %v", what, err)
		}
	}
	at := func(minutes int) time.Time { return seedTime.Add(time.Duration(minutes) * time.Minute) }
	must(s.Conversations.CreateConversation(ctx, turn.Conversation{ID: w.conv, AccountID: "acme", CreatedAt: at(0),
		Metadata: json.RawMessage(`{"channel":"web"}`)}), "conversation")
	must(s.Conversations.CreateConversation(ctx, turn.Conversation{ID: w.newerConv, AccountID: "acme", CreatedAt: at(5)}), "newer conversation")
	must(s.Conversations.CreateConversation(ctx, turn.Conversation{ID: w.foreignConv, AccountID: "other", CreatedAt: at(9)}), "foreign conversation")
	user := func(id turn.ID, text string, minutes int) turn.UserTurn {
		return turn.UserTurn{ReceivedAt: at(minutes), Input: turn.TurnInput{TurnID: id, ConversationID: w.conv,
			Actor: turn.Actor{AccountID: "acme", UserID: "ada"}, Text: text}}
	}
	must(s.Conversations.AppendUserTurn(ctx, user(w.turnID, "cancel my\norder", 1)), "user turn")
	must(s.Conversations.AppendUserTurn(ctx, user(w.idleTurn, "hello again", 2)), "a second turn")

	ref := turn.CaseRef{Workflow: "orders", CaseID: "o-7", ExpectedRevision: 1}
	_, err = s.Journal.BeginCommand(ctx, turn.JournalEntry{CommandID: w.command, AccountID: "acme", IdempotencyKey: "cancel-o-7",
		TurnID: w.turnID, CaseRef: ref, CommandType: "order.cancel", Status: turn.JournalPending, CreatedAt: at(1)})
	must(err, "begin command")
	must(s.Journal.MarkExecuting(ctx, "acme", w.command), "mark executing")
	// Another command's event lands between the turn's own, so show must filter the stream.
	_, err = s.Events.AppendEvents(ctx, turn.EventBatch{AccountID: "acme", CaseKey: turn.CaseKey{Workflow: "orders", CaseID: "o-8"},
		CommandID: turn.NewID(), Revision: 4, Events: []turn.NewEvent{{EventID: w.noise, EventType: "order.noted", OccurredAt: at(1)}}})
	must(err, "another command's event")
	payload := turn.CardPayload{Title: "Cancel order o-7?", Options: []turn.CardOption{{ID: "yes", Label: "Yes"}}}
	_, err = s.Commits.Commit(ctx, "acme", turn.Bundle{
		JournalCompletions: []turn.JournalCompletion{{CommandID: w.command, Outcome: turn.Committed(2, w.first, w.second)}},
		Events: []turn.EventBatch{{AccountID: "acme", CaseKey: ref.Key(), CommandID: w.command, Revision: 2, Events: []turn.NewEvent{
			{EventID: w.first, EventType: "order.cancel_requested", OccurredAt: at(1), Payload: json.RawMessage(`{"by":"Ada Lovelace"}`)},
			{EventID: w.second, EventType: "order.cancelled", OccurredAt: at(1), Payload: json.RawMessage(`{"refund":12}`)},
		}}},
		InteractionInserts: []turn.InteractionInsert{{Interaction: turn.Interaction{ID: w.card, AccountID: "acme",
			ConversationID: w.conv, CaseRef: ref, CreatedByTurn: w.turnID, Kind: turn.KindConfirmCommand, Blocking: true,
			Payload: payload, PayloadHash: turn.HashPayload(payload), Status: turn.InteractionActive, CreatedAt: at(1)}}},
		OutboxEntries: []turn.OutboxEntry{{OutboxID: w.outbox, CommandID: w.command, Destination: "mailer",
			Payload: json.RawMessage(`{"template":"cancelled"}`), IdempotencyKey: "mail-o-7", Status: turn.OutboxPending, CreatedAt: at(1)}},
		TurnPhase: &turn.PhaseUpdate{TurnID: w.turnID, Phase: turn.PhaseCommitted},
	})
	must(err, "commit")
	_, err = s.Events.AppendEvents(ctx, turn.EventBatch{AccountID: "other", CaseKey: ref.Key(), CommandID: w.command, Revision: 1,
		Events: []turn.NewEvent{{EventID: turn.NewID(), EventType: "order.cancelled", OccurredAt: at(1)}}})
	must(err, "another account's event under the same command id")
	must(s.Conversations.AppendAssistantTurn(ctx, "acme", turn.AssistantTurn{TurnID: w.turnID, ConversationID: w.conv,
		Blocks: []turn.Block{{ID: "b1", Kind: "text"}}, Done: true}), "assistant turn")
	return w
}

// ok runs the command and requires exit 0 and an empty stderr.
func ok(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := cli(t, context.Background(), args...)
	if code != 0 || errOut != "" {
		t.Fatalf("stead %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
	}
	return out
}

// inOrder reports whether every want occurs in s, in this order.
func inOrder(s string, want ...string) bool {
	for _, w := range want {
		i := strings.Index(s, w)
		if i < 0 {
			return false
		}
		s = s[i+len(w):]
	}
	return true
}

func TestTurnsConversations(t *testing.T) {
	t.Parallel()
	w := seedTurns(t)
	store := []string{"--store", w.path, "--account", "acme"}
	args := func(extra ...string) []string {
		return append(append([]string{"turns", "conversations"}, store...), extra...)
	}

	for _, tc := range []struct {
		name    string
		args    []string
		want    []string // in this order
		without []string
	}{
		{"oldest first", args(), []string{"CONVERSATION", w.conv.String(), `{"channel":"web"}`, w.newerConv.String()},
			[]string{w.foreignConv.String()}},
		{"the newest one", args("--limit", "1"), []string{w.newerConv.String()}, []string{w.conv.String()}},
		{"one conversation", args(w.conv.String()), []string{
			"conversation  " + w.conv.String(), `"channel": "web"`, "open cards (1)", w.card.String(), "confirm_command",
			"turns (2, the newest 20 at most, oldest first)", w.turnID.String(), "committed", "yes", "cancel my order",
			w.idleTurn.String(), "received", "no", "hello again"}, nil},
		{"its newest turn", args(w.conv.String(), "--limit", "1"), []string{w.idleTurn.String()}, []string{w.turnID.String()}},
		{"no conversation of another account", []string{"turns", "conversations", "--store", w.path, "--account", "nobody"},
			[]string{"CONVERSATION"}, []string{w.conv.String(), w.foreignConv.String()}},
	} {
		out := ok(t, tc.args...)
		if !inOrder(out, tc.want...) {
			t.Errorf("%s: output lacks %q in this order:\n%s", tc.name, tc.want, out)
		}
		for _, no := range tc.without {
			if strings.Contains(out, no) {
				t.Errorf("%s: output shows %s:\n%s", tc.name, no, out)
			}
		}
	}

	var list struct{ Conversations []turn.Conversation }
	if err := json.Unmarshal([]byte(ok(t, args("--json")...)), &list); err != nil || len(list.Conversations) != 2 ||
		list.Conversations[0].ID != w.conv || list.Conversations[1].ID != w.newerConv {
		t.Fatalf("conversations --json: %v %+v", err, list)
	}
	var one conversationDetail
	if err := json.Unmarshal([]byte(ok(t, args(w.conv.String(), "--json")...)), &one); err != nil ||
		one.Conversation.ID != w.conv || len(one.OpenCards) != 1 || len(one.Turns) != 2 ||
		one.Turns[0].User.Input.TurnID != w.turnID || one.Turns[0].Phase != turn.PhaseCommitted {
		t.Fatalf("conversations <id> --json: %v %+v", err, one)
	}
}

func TestTurnsShow(t *testing.T) {
	t.Parallel()
	w := seedTurns(t)
	show := func(extra ...string) string {
		return ok(t, append([]string{"turns", "show", "--store", w.path, "--account", "acme", w.turnID.String()}, extra...)...)
	}

	out := show()
	if !inOrder(out,
		"turn ", w.turnID.String(), "conversation ", w.conv.String(), "account ", "acme", "user ", "ada",
		"phase ", "committed (since ", "text ", "cancel my order", "answer ", "1 block(s), done: true",
		"cards (1)", w.card.String(), "confirm_command", "active", "blocking", `"Cancel order o-7?"`, "(created by this turn)",
		"journal (1)", w.command.String(), "committed", "order.cancel", "case orders/o-7@1", "key cancel-o-7", "outcome committed",
		"outbox (1)", w.outbox.String(), "-> mailer", "pending", "attempts 0",
		"events (2 after cursor 0)", w.first.String(), "orders/o-7@2", "order.cancel_requested", `{"by":"Ada Lovelace"}`,
		w.second.String(), "order.cancelled", `{"refund":12}`) {
		t.Fatalf("show lacks something, or in another order:\n%s", out)
	}
	if strings.Contains(out, w.noise.String()) || strings.Contains(out, "more:") {
		t.Fatalf("show lists another command's event, or more than there is:\n%s", out)
	}

	// Paged one event at a time: each full page prints the cursor to continue from, and the
	// cursors walk the turn's events exactly once.
	var seen []string
	after := "0"
	for range 3 {
		out := show("--after", after, "--limit", "1")
		var d turnDetail
		if err := json.Unmarshal([]byte(show("--after", after, "--limit", "1", "--json")), &d); err != nil {
			t.Fatal(err)
		}
		for _, e := range d.Events.Events {
			seen = append(seen, e.EventID.String())
		}
		if len(d.Events.Events) == 0 {
			if strings.Contains(out, "more:") {
				t.Fatalf("an empty page prints a cursor:\n%s", out)
			}
			break
		}
		next := fmt.Sprint(int64(d.Events.Next))
		if !strings.Contains(out, "more: --after "+next) {
			t.Fatalf("a full page does not print its cursor %s:\n%s", next, out)
		}
		after = next
	}
	if len(seen) != 2 || seen[0] != w.first.String() || seen[1] != w.second.String() {
		t.Fatalf("paging one at a time saw %v, want the turn's two events in order", seen)
	}

	var d turnDetail
	if err := json.Unmarshal([]byte(show("--json")), &d); err != nil {
		t.Fatal(err)
	}
	if d.Turn.User.Input.TurnID != w.turnID || d.Turn.Assistant == nil || d.Phase.Phase != turn.PhaseCommitted ||
		len(d.Cards) != 1 || d.Cards[0].Interaction.ID != w.card || len(d.Journal) != 1 || d.Journal[0].CommandID != w.command ||
		len(d.Outbox) != 1 || d.Outbox[0].Entry.OutboxID != w.outbox || len(d.Events.Events) != 2 {
		t.Fatalf("show --json: %+v", d)
	}

	// A turn with no command has nothing in the journal, the outbox or the events.
	idle := ok(t, "turns", "show", "--store", w.path, "--account", "acme", w.idleTurn.String())
	if !inOrder(idle, "phase ", "received", "cards (0)", "journal (0)", "outbox (0)", "events (0 after cursor 0)") {
		t.Fatalf("show of an idle turn:\n%s", idle)
	}
}

func TestTurnsErase(t *testing.T) {
	t.Parallel()
	w := seedTurns(t)
	erase := func(authority string, extra ...string) string {
		return ok(t, append([]string{"turns", "erase", "--store", w.path, "--account", "acme", "--event", w.first.String(),
			"--authority", authority}, extra...)...)
	}
	first := erase("ticket-1")
	if !strings.HasPrefix(first, "event "+w.first.String()+": payload erased at ") || !strings.HasSuffix(first, "on the authority of ticket-1\n") {
		t.Fatalf("erase: %q", first)
	}
	if again := erase("ticket-2"); again != first {
		t.Fatalf("erasing again printed %q, want the first record %q", again, first)
	}
	var rec struct {
		EventID   turn.ID        `json:"event_id"`
		Redaction turn.Redaction `json:"redaction"`
	}
	if err := json.Unmarshal([]byte(erase("ticket-3", "--json")), &rec); err != nil || rec.EventID != w.first ||
		rec.Redaction.Authority != "ticket-1" || !strings.Contains(first, stamp(rec.Redaction.RedactedAt)) {
		t.Fatalf("erase --json: %v %+v", err, rec)
	}

	out := ok(t, "turns", "show", "--store", w.path, "--account", "acme", w.turnID.String())
	if !inOrder(out, "events (2 after cursor 0)", w.first.String(), "(erased "+stamp(rec.Redaction.RedactedAt)+" on the authority of ticket-1)",
		w.second.String(), `{"refund":12}`) || strings.Contains(out, "Ada Lovelace") {
		t.Fatalf("show after the erasure:\n%s", out)
	}
}

// TestTurnsErrors checks that every refusal of the turns commands is one line on stderr with the
// exit code of its kind: 2 for the command line, 1 for what the store said.
func TestTurnsErrors(t *testing.T) {
	t.Parallel()
	w := seedTurns(t)
	db := []string{"--store", w.path}
	acme := append(db, "--account", "acme")
	cmd := func(name string, args ...string) []string { return append([]string{"turns", name}, args...) }
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown subcommand", cmd("frobnicate"), 1, `unknown command "frobnicate" for "stead turns"`},
		{"no account", cmd("conversations", db...), 2, "--account is required"},
		{"no store", cmd("show", "--account", "acme", w.turnID.String()), 2, "--store is required"},
		{"zero limit", cmd("conversations", append(acme, "--limit", "0")...), 2, "--limit must be at least 1"},
		{"a limit the store refuses", cmd("conversations", append(acme, "--limit", "1001")...), 2, "--limit must be at most 1000, got 1001"},
		{"two conversation ids", cmd("conversations", append(acme, "a", "b")...), 2, "at most one"},
		{"malformed conversation id", cmd("conversations", append(acme, "c-1")...), 2, `conversation id: invalid input: malformed id "c-1"`},
		{"unknown conversation", cmd("conversations", append(acme, turn.NewID().String())...), 1, "not found"},
		{"another account's conversation", cmd("conversations", append(acme, w.foreignConv.String())...), 1, "not found"},
		{"no turn id", cmd("show", acme...), 2, "want a turn id"},
		{"malformed turn id", cmd("show", append(acme, "turn-1")...), 2, `turn id: invalid input: malformed id "turn-1"`},
		{"unknown turn", cmd("show", append(acme, turn.NewID().String())...), 1, "not found"},
		{"another account's turn", cmd("show", "--store", w.path, "--account", "other", w.turnID.String()), 1, "not found"},
		{"a cursor no read produced", cmd("show", append(acme, w.turnID.String(), "--after", "987654")...), 1, "cursor 987654"},
		{"bad cursor flag", cmd("show", append(acme, w.turnID.String(), "--after", "soon")...), 2, "--after"},
		{"erase without authority", cmd("erase", append(acme, "--event", w.first.String())...), 2, "--authority"},
		{"erase a malformed event", cmd("erase", append(acme, "--event", "e-1", "--authority", "x")...), 2, `--event: invalid input: malformed id "e-1"`},
		{"erase another account's event", cmd("erase", "--store", w.path, "--account", "other", "--event", w.first.String(),
			"--authority", "x"), 1, "not found"},
		{"erase with a NUL authority", cmd("erase", append(acme, "--event", w.first.String(), "--authority", "a\x00b")...), 1, "invalid"},
	} {
		code, out, errOut := cli(t, context.Background(), tc.args...)
		lines := strings.Split(strings.TrimRight(errOut, "\n"), "\n")
		if code != tc.code || len(lines) != 1 || !strings.HasPrefix(errOut, "stead: ") || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d (want %d), stderr %q (want one line with %q), stdout %q", tc.name, code, tc.code, errOut, tc.want, out)
		}
	}
}

// The turns commands open the turn store alone: on a fresh file they create its tables and
// none of the execution store's or the transport's.
func TestTurnsOpenOnlyTheTurnStore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "fresh.db")
	ok(t, "turns", "conversations", "--store", path, "--create", "--account", "acme")
	db, err := sqlitedb.Open(t.Context(), sqlitedb.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for table, want := range map[string]bool{"turn_migrations": true, "stead_migrations": false, "transport_migrations": false} {
		var n int
		if err := db.R.QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if (n == 1) != want {
			t.Errorf("table %s exists: %v, want %v", table, n == 1, want)
		}
	}
}

func TestTurnsHelp(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"turns", "turns conversations", "turns show", "turns erase"} {
		code, out, errOut := cli(t, context.Background(), append(strings.Fields(cmd), "--help")...)
		if code != 0 || !strings.Contains(out, "Usage:") || errOut != "" {
			t.Errorf("stead %s --help: exit %d, stdout %q, stderr %q", cmd, code, out, errOut)
		}
	}
}
