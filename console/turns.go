package console

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/steadhq/stead/turn"
)

// The turn pages show what a turn store keeps, one account at a time and read-only (through
// turn.ReadOnlyStores): an account's conversations, one conversation with its open cards and
// recent turns, and one turn with its phase, cards, journal entries, outbox rows and events.
// Every read is scoped by the account in the query, as the contract scopes it: another
// account's id is "not found".

// turnsLimit is how many conversations, or turns of a conversation, a page shows; turnEventsLimit
// how many of a turn's events, and eventScanPage how many events of the account's stream one
// read examines while looking for them.
const (
	turnsLimit      = 50
	turnEventsLimit = 50
	eventScanPage   = 500
)

type turnsPage struct {
	Account       string
	Conversations []turn.Conversation
}

type conversationPage struct {
	Account   string
	Conv      turn.Conversation
	Metadata  string
	OpenCards []turn.InteractionRecord
	Turns     []turn.Turn
}

type turnPage struct {
	Account string
	Turn    turn.Turn
	Phase   turn.PhaseMarker
	Cards   []turn.InteractionRecord
	Journal []turn.JournalEntry
	Outbox  []turn.OutboxRecord
	Events  []eventRow
	NextURL string // the next page of the turn's events, when this one is full
}

type eventRow struct {
	turn.Event
	Payload string
}

// account reads the account of a turn page's query; empty shows the form that asks for it.
func account(r *http.Request) (string, error) {
	a := strings.TrimSpace(r.URL.Query().Get("account"))
	if len(a) > 512 || strings.IndexByte(a, 0) >= 0 {
		return "", badRequestf("account: want an account id")
	}
	return a, nil
}

// turnID reads the id parameter of a turn page; a malformed one is the request's mistake.
func turnID(r *http.Request, what string) (turn.ID, error) {
	v := r.URL.Query().Get("id")
	if v == "" {
		return turn.ID{}, badRequestf("no %s id", what)
	}
	id, err := turn.ParseID(v)
	if err != nil {
		return turn.ID{}, badRequestf("%s id %q is not a turn-store id (8-4-4-4-12 hex digits)", what, v)
	}
	return id, nil
}

func (s *Server) handleTurns(w http.ResponseWriter, r *http.Request) {
	acct, err := account(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p := turnsPage{Account: acct}
	if acct != "" {
		if p.Conversations, err = s.cfg.Turns.Conversations.ListConversations(r.Context(), acct, turnsLimit); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	s.render(w, http.StatusOK, "turns", s.page(w, r, "Conversations", p))
}

func (s *Server) handleConversation(w http.ResponseWriter, r *http.Request) {
	acct, err := account(r)
	if err == nil && acct == "" {
		err = badRequestf("no account: the turn store answers one account at a time")
	}
	var id turn.ID
	if err == nil {
		id, err = turnID(r, "conversation")
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx, t := r.Context(), s.cfg.Turns
	p := conversationPage{Account: acct}
	if p.Conv, err = t.Conversations.LoadConversation(ctx, acct, id); err == nil {
		p.Metadata = pretty(p.Conv.Metadata)
		if p.OpenCards, err = t.Interactions.ListOpenForConversation(ctx, acct, id); err == nil {
			p.Turns, err = t.Conversations.LoadRecentTurns(ctx, acct, id, turnsLimit)
		}
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, http.StatusOK, "conversation", s.page(w, r, "Conversation "+id.String(), p))
}

func (s *Server) handleTurn(w http.ResponseWriter, r *http.Request) {
	acct, err := account(r)
	if err == nil && acct == "" {
		err = badRequestf("no account: the turn store answers one account at a time")
	}
	var id turn.ID
	if err == nil {
		id, err = turnID(r, "turn")
	}
	var after int64
	if v := r.URL.Query().Get("after"); err == nil && v != "" {
		if after, err = strconv.ParseInt(v, 10, 64); err != nil || after < 0 {
			err = badRequestf("after %q: want an event cursor (a sequence number)", v)
		}
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p, next, err := s.loadTurn(r.Context(), acct, id, turn.Cursor(after))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if len(p.Events) == turnEventsLimit {
		p.NextURL = s.path("/turns/turn") + "?" + url.Values{"account": {acct}, "id": {id.String()},
			"after": {strconv.FormatInt(int64(next), 10)}}.Encode()
	}
	s.render(w, http.StatusOK, "turn", s.page(w, r, "Turn "+id.String(), p))
}

// loadTurn reads one turn and everything of its: the outbox rows of its commands, and their
// events from the cursor on. An event names its command and a command its turn, so the events
// are a filter over the account's stream; the cursor returned resumes it where it stopped.
func (s *Server) loadTurn(ctx context.Context, acct string, id turn.ID, after turn.Cursor) (*turnPage, turn.Cursor, error) {
	t := s.cfg.Turns
	p := &turnPage{Account: acct}
	var err error
	if p.Turn, err = t.Conversations.LoadTurn(ctx, acct, id); err != nil {
		return nil, 0, err
	}
	if p.Phase, err = t.Conversations.TurnPhase(ctx, acct, id); err != nil {
		return nil, 0, err
	}
	if p.Cards, err = t.Interactions.InteractionsForTurn(ctx, acct, id); err != nil {
		return nil, 0, err
	}
	if p.Journal, err = t.Journal.CommandsForTurn(ctx, acct, id); err != nil {
		return nil, 0, err
	}
	mine := map[turn.ID]bool{}
	for _, e := range p.Journal {
		mine[e.CommandID] = true
		// The outbox has no account; the commands do, so only this account's rows are reached.
		rows, err := t.Outbox.OutboxForCommand(ctx, e.CommandID)
		if err != nil {
			return nil, 0, err
		}
		p.Outbox = append(p.Outbox, rows...)
	}
	next := after
	for len(mine) > 0 && len(p.Events) < turnEventsLimit {
		page, err := t.Events.ReadFrom(ctx, acct, next, eventScanPage)
		if err != nil {
			return nil, 0, err
		}
		for _, e := range page.Events {
			next = turn.After(e.Sequence)
			if mine[e.CommandID] {
				p.Events = append(p.Events, eventRow{Event: e, Payload: pretty(e.Payload)})
				if len(p.Events) == turnEventsLimit {
					break
				}
			}
		}
		if len(page.Events) < eventScanPage {
			break // the end of the stream, for now
		}
	}
	return p, next, nil
}
