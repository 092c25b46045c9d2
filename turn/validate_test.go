package turn_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead/turn"
)

var at0 = time.Unix(0, 0).UTC()

// Each record's Validate accepts a well-formed value and refuses each kind of bad field with
// ErrInvalid (CodeInvalidRecord where the refusal is structural).
func TestRecordValidation(t *testing.T) {
	conv := func() turn.Conversation { return turn.Conversation{ID: turn.NewID(), AccountID: "a", CreatedAt: at0} }
	user := func() turn.UserTurn {
		return turn.UserTurn{ReceivedAt: at0, Input: turn.TurnInput{TurnID: turn.NewID(), ConversationID: turn.NewID(),
			Actor: turn.Actor{AccountID: "a", UserID: "u"}, Text: "hi"}}
	}
	assistant := func() turn.AssistantTurn {
		return turn.AssistantTurn{TurnID: turn.NewID(), ConversationID: turn.NewID(), Blocks: []turn.Block{{ID: "b", Kind: "text"}}}
	}
	card := func() turn.Interaction {
		return turn.Interaction{ID: turn.NewID(), AccountID: "a", ConversationID: turn.NewID(),
			CaseRef: turn.CaseRef{Workflow: "w", CaseID: "c", ExpectedRevision: 1}, CreatedByTurn: turn.NewID(), Kind: turn.KindBoolean,
			Status: turn.InteractionActive, CreatedAt: at0, Payload: turn.CardPayload{Title: "t", Options: []turn.CardOption{{ID: "o", Label: "l"}}}}
	}
	entry := func() turn.JournalEntry {
		return turn.JournalEntry{CommandID: turn.NewID(), AccountID: "a", IdempotencyKey: "k", TurnID: turn.NewID(),
			CaseRef: turn.CaseRef{Workflow: "w", CaseID: "c"}, CommandType: "t", Status: turn.JournalPending, CreatedAt: at0}
	}
	outbox := func() turn.OutboxEntry {
		return turn.OutboxEntry{OutboxID: turn.NewID(), CommandID: turn.NewID(), Destination: "d", IdempotencyKey: "k",
			Status: turn.OutboxPending, CreatedAt: at0}
	}
	replay := func() turn.ReplayRecord { return turn.ReceivedReplay(turn.NewID(), turn.NewID(), "a", at0) }

	tests := []struct {
		name       string
		validate   func() error
		ok         bool
		structural bool // CodeInvalidRecord
	}{
		{"conversation", func() error { return conv().Validate() }, true, false},
		{"conversation without account", func() error { c := conv(); c.AccountID = ""; return c.Validate() }, false, false},
		{"conversation with zero id", func() error { c := conv(); c.ID = turn.ID{}; return c.Validate() }, false, false},
		{"conversation in year 10000", func() error {
			c := conv()
			c.CreatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
			return c.Validate()
		}, false, false},
		{"conversation created at the zero time", func() error { c := conv(); c.CreatedAt = time.Time{}; return c.Validate() }, false, false},
		{"conversation on the last day at -05:00, which is year 10000 in UTC", func() error {
			c := conv()
			c.CreatedAt = time.Date(9999, 12, 31, 20, 0, 0, 0, time.FixedZone("EST", -5*3600))
			return c.Validate()
		}, false, false},
		{"conversation on the last day at +05:00", func() error {
			c := conv()
			c.CreatedAt = time.Date(9999, 12, 31, 20, 0, 0, 0, time.FixedZone("", 5*3600))
			return c.Validate()
		}, true, false},
		{"conversation with a lone surrogate in its metadata", func() error {
			c := conv()
			c.Metadata = json.RawMessage(`{"name":"\ud800"}`)
			return c.Validate()
		}, false, false},
		{"conversation with array metadata", func() error { c := conv(); c.Metadata = json.RawMessage(`[1]`); return c.Validate() }, true, false},
		{"user turn", func() error { return user().Validate() }, true, false},
		{"user turn with oversized text", func() error { u := user(); u.Input.Text = strings.Repeat("x", turn.MaxPayload+1); return u.Validate() }, false, false},
		{"user turn with bad attachments", func() error { u := user(); u.Input.Attachments = json.RawMessage(`{`); return u.Validate() }, false, false},
		{"user turn with NUL locale", func() error { u := user(); u.Input.Locale = "\x00"; return u.Validate() }, false, false},
		{"assistant turn", func() error { return assistant().Validate() }, true, false},
		{"assistant turn with bad block body", func() error { a := assistant(); a.Blocks[0].Body = json.RawMessage(`nul`); return a.Validate() }, false, false},
		{"assistant turn without turn", func() error { a := assistant(); a.TurnID = turn.ID{}; return a.Validate() }, false, false},
		{"card", func() error { return card().Validate() }, true, false},
		{"card without its creating turn", func() error { c := card(); c.CreatedByTurn = turn.ID{}; return c.Validate() }, false, false},
		{"card with unknown status", func() error { c := card(); c.Status = "pondering"; return c.Validate() }, false, false},
		{"card with negative revision", func() error { c := card(); c.CaseRef.ExpectedRevision = -3; return c.Validate() }, false, true},
		{"card with empty case id", func() error { c := card(); c.CaseRef.CaseID = ""; return c.Validate() }, false, false},
		{"card with NUL option id", func() error { c := card(); c.Payload.Options[0].ID = "\x00"; return c.Validate() }, false, false},
		{"card expiring in year 0", func() error { c := card(); c.ExpiresAt = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC); return c.Validate() }, false, false},
		{"journal entry", func() error { return entry().Validate() }, true, false},
		{"journal entry without type", func() error { e := entry(); e.CommandType = ""; return e.Validate() }, false, false},
		{"journal entry with bad result", func() error { e := entry(); e.Result = &turn.JournalOutcome{Kind: "?"}; return e.Validate() }, false, false},
		{"journal entry with negative outcome revision", func() error {
			e := entry()
			o := turn.Committed(-1)
			e.Result = &o
			return e.Validate()
		}, false, true},
		{"outbox entry", func() error { return outbox().Validate() }, true, false},
		{"outbox entry with huge attempt count", func() error { o := outbox(); o.AttemptCount = turn.MaxAttemptCount + 1; return o.Validate() }, false, true},
		{"outbox entry with unknown status", func() error { o := outbox(); o.Status = "lost"; return o.Validate() }, false, false},
		{"replay record", func() error { return replay().Validate() }, true, false},
		{"replay record with zero event id", func() error { r := replay(); r.EventIDs = []turn.ID{{}}; return r.Validate() }, false, false},
		{"replay record with bad details", func() error { r := replay(); r.Details = json.RawMessage(`}`); return r.Validate() }, false, false},
		{"superseded without successor", func() error { return turn.SupersededBy(turn.ID{}).Validate() }, false, false},
		{"administrative without code", func() error { return turn.Administrative("").Validate() }, false, false},
		{"administrative", func() error { return turn.Administrative("ops.withdrawn").Validate() }, true, false},
		{"failed resolution without code", func() error { return turn.ResolutionFailure("").Validate() }, false, false},
		{"resolved with zero event", func() error { return turn.Resolved(turn.ID{}).Validate() }, false, false},
		{"restore", func() error { return turn.RestoreActive().Validate() }, true, false},
		{"limit -1", func() error { return turn.ValidateLimit(-1) }, false, false},
		{"cursor -1", func() error { return turn.ValidateCursor(-1) }, false, false},
		{"time on the last day at -05:00", func() error {
			return turn.ValidateTime("t", time.Date(9999, 12, 31, 19, 0, 0, 0, time.FixedZone("EST", -5*3600)))
		}, false, false},
		{"time on the last day in UTC", func() error {
			return turn.ValidateTime("t", time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC))
		}, true, false},
		{"the zero time, which means unset", func() error { return turn.ValidateTime("t", time.Time{}) }, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.validate()
			switch {
			case tt.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case !tt.ok && !errors.Is(err, turn.ErrInvalid):
				t.Fatalf("got %v, want ErrInvalid", err)
			case tt.structural && !turn.HasCode(err, turn.CodeInvalidRecord):
				t.Fatalf("got %v, want code %s", err, turn.CodeInvalidRecord)
			}
		})
	}
}

func TestOutcomeHelpers(t *testing.T) {
	e := turn.NewID()
	tests := []struct {
		o    turn.JournalOutcome
		want turn.JournalStatus
	}{
		{turn.Committed(1, e), turn.JournalCommitted},
		{turn.Failed("x"), turn.JournalFailed},
		{turn.JournalOutcome{Kind: turn.OutcomeRejected, Rejection: json.RawMessage(`{"why":"no"}`)}, turn.JournalFailed},
		{turn.JournalOutcome{Kind: turn.OutcomeRevisionConflict, CurrentRevision: 3}, turn.JournalFailed},
		{turn.JournalOutcome{Kind: turn.OutcomeUnknown, AttemptID: "a"}, turn.JournalOutcomeUnknown},
	}
	for _, tt := range tests {
		if got := tt.o.Status(); got != tt.want {
			t.Errorf("%s: status %s, want %s", tt.o.Kind, got, tt.want)
		}
		if !tt.o.Equal(tt.o) {
			t.Errorf("%s is not equal to itself", tt.o.Kind)
		}
	}
	a := turn.JournalOutcome{Kind: turn.OutcomeRejected, Rejection: json.RawMessage(`{"a":1,"b":2}`)}
	b := turn.JournalOutcome{Kind: turn.OutcomeRejected, Rejection: json.RawMessage(`{"b":2, "a":1}`)}
	if !a.Equal(b) {
		t.Error("rejections equal in meaning compare unequal")
	}
	if turn.Committed(1, e).Equal(turn.Committed(1, turn.NewID())) || turn.Committed(1).Equal(turn.Committed(2)) {
		t.Error("different outcomes compare equal")
	}
}

func TestResolutionMatches(t *testing.T) {
	e := turn.NewID()
	rec := turn.InteractionRecord{Interaction: turn.Interaction{Status: turn.InteractionResolved}, ResolutionEventIDs: []turn.ID{e}}
	if !turn.Resolved(e).Matches(rec) || turn.Resolved().Matches(rec) || turn.ResolutionFailure("x").Matches(rec) {
		t.Error("resolved matching is wrong")
	}
	failed := turn.InteractionRecord{Interaction: turn.Interaction{Status: turn.InteractionFailed}, FailureCode: "x"}
	if !turn.ResolutionFailure("x").Matches(failed) || turn.ResolutionFailure("y").Matches(failed) {
		t.Error("failed matching is wrong")
	}
	active := turn.InteractionRecord{Interaction: turn.Interaction{Status: turn.InteractionActive}}
	if !turn.RestoreActive().Matches(active) {
		t.Error("a restored card does not match restore")
	}
	active.ResolvedByTurn = turn.NewID()
	if turn.RestoreActive().Matches(active) {
		t.Error("an active card with an answer matches restore")
	}
}

func TestGroupForReceipts(t *testing.T) {
	c1, c2 := turn.CaseKey{Workflow: "w", CaseID: "1"}, turn.CaseKey{Workflow: "w", CaseID: "2"}
	cmdA, cmdB := turn.NewID(), turn.NewID()
	ev := func(seq int64, c turn.CaseKey, cmd turn.ID, redacted bool) turn.Event {
		e := turn.Event{Sequence: seq, EventID: turn.NewID(), CaseKey: c, CommandID: cmd, Payload: json.RawMessage(`{"secret":1}`)}
		if redacted {
			e.Redaction = &turn.Redaction{Authority: "x"}
		}
		return e
	}
	events := []turn.Event{ev(1, c1, cmdA, false), ev(2, c2, cmdB, false), ev(3, c1, cmdA, true)}
	groups := turn.GroupForReceipts(events)
	if len(groups) != 2 || groups[0].CaseKey != c1 || groups[1].CaseKey != c2 {
		t.Fatalf("groups %+v", groups)
	}
	if len(groups[0].Events) != 2 || groups[0].Events[1].Sequence != 3 || !groups[0].Events[1].Redacted ||
		string(groups[0].Events[1].Payload) != "null" || groups[0].Events[0].Redacted {
		t.Fatalf("first group %+v", groups[0])
	}
}
