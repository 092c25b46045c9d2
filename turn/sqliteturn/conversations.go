package sqliteturn

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/internal/codec"
)

// Every method receives arguments the checked front has validated and normalised (see
// turn.Backend). A write a bundle can carry is a function of the write statements, run by the standalone
// method in a transaction of its own and by Commit inside the bundle's: a bundle item obeys
// exactly the rule of its standalone method.

// LoadConversation implements turn.ConversationReader.
func (s *Backend) LoadConversation(ctx context.Context, account string, id turn.ID) (turn.Conversation, error) {
	return readOne(ctx, s, func(st *statements) (turn.Conversation, error) {
		c := turn.Conversation{ID: id, AccountID: account}
		var created int64
		var meta sql.NullString
		if err := scanOne(st.LoadConversation.QueryRowContext(ctx, account, id), "conversation", id, &created, &meta); err != nil {
			return c, err
		}
		c.CreatedAt, c.Metadata = time.UnixMicro(created).UTC(), readDoc(meta)
		return c, nil
	})
}

// conversationRow is a conversation as listed.
type conversationRow struct {
	id      turn.ID
	created int64
	meta    sql.NullString
}

func (r *conversationRow) dest() []any { return []any{&r.id, &r.created, &r.meta} }

// conversation needs the account: the rows of a listing do not repeat it.
func (r *conversationRow) conversation(account string) turn.Conversation {
	return turn.Conversation{ID: r.id, AccountID: account, CreatedAt: time.UnixMicro(r.created).UTC(), Metadata: readDoc(r.meta)}
}

// ListConversations implements turn.ConversationReader.
func (s *Backend) ListConversations(ctx context.Context, account string, limit int) ([]turn.Conversation, error) {
	return readOne(ctx, s, func(st *statements) ([]turn.Conversation, error) {
		rows, err := st.ListConversations.QueryContext(ctx, account, int64(limit))
		return collect(rows, err, (*conversationRow).dest, func(r *conversationRow) (turn.Conversation, error) {
			return r.conversation(account), nil
		})
	})
}

// CreateConversation implements turn.ConversationWriter.
func (s *Backend) CreateConversation(ctx context.Context, c turn.Conversation) error {
	return s.write(ctx, func(st *statements) error {
		_, err := st.CreateConversation.ExecContext(bg, c.AccountID, c.ID, micros(c.CreatedAt), codec.Doc(c.Metadata))
		return classify(err)
	})
}

// AppendUserTurn implements turn.ConversationWriter.
func (s *Backend) AppendUserTurn(ctx context.Context, t turn.UserTurn) error {
	input, err := codec.Marshal(t.Input)
	if err != nil {
		return err
	}
	at := s.now()
	return s.write(ctx, func(st *statements) error {
		n, err := affected(st.AppendUserTurn.ExecContext(bg, t.AccountID(), t.Input.TurnID, t.Input.ConversationID,
			micros(t.ReceivedAt), input))
		if err != nil {
			return err
		}
		if n == 0 {
			return codec.NotFound("conversation", t.Input.ConversationID)
		}
		_, err = st.AppendUserTurnPhase.ExecContext(bg, t.AccountID(), t.Input.TurnID, t.Input.ConversationID, micros(at))
		return classify(err)
	})
}

// AppendAssistantTurn implements turn.ConversationWriter.
func (s *Backend) AppendAssistantTurn(ctx context.Context, account string, a turn.AssistantTurn) error {
	body, err := codec.Marshal(a)
	if err != nil {
		return err
	}
	return s.write(ctx, func(st *statements) error {
		n, err := affected(st.AppendAssistantTurn.ExecContext(bg, account, a.TurnID, a.ConversationID, body))
		if err != nil || n == 1 {
			return err
		}
		var conv turn.ID
		if err := scanOne(st.AppendAssistantTurnStored.QueryRowContext(bg, account, a.TurnID), "turn", a.TurnID, &conv); err != nil {
			return err
		}
		if conv != a.ConversationID {
			return turn.IdentityMismatch("assistant turn %s names conversation %s, the user turn %s", a.TurnID, a.ConversationID, conv)
		}
		return codec.Conflict("turn %s already has its assistant turn", a.TurnID)
	})
}

// turnRow holds a turn read with its phase. All are NULL on the empty side of an outer join.
type turnRow struct {
	user, assistant, phase sql.NullString
	received               sql.NullInt64
}

func (r *turnRow) dest() []any { return []any{&r.user, &r.received, &r.assistant, &r.phase} }

func (r *turnRow) turn() (turn.Turn, error) {
	var t turn.Turn
	if err := codec.Unmarshal(r.user.String, &t.User.Input, "user turn"); err != nil {
		return t, err
	}
	t.User.ReceivedAt = fromMicros(r.received)
	if r.assistant.Valid {
		t.Assistant = new(turn.AssistantTurn)
		if err := codec.Unmarshal(r.assistant.String, t.Assistant, "assistant turn"); err != nil {
			return t, err
		}
	}
	var err error
	t.Phase, err = codec.Phase(r.phase.String)
	return t, err
}

// LoadTurn implements turn.ConversationReader.
func (s *Backend) LoadTurn(ctx context.Context, account string, id turn.ID) (turn.Turn, error) {
	return readOne(ctx, s, func(st *statements) (turn.Turn, error) {
		var r turnRow
		if err := scanOne(st.LoadTurn.QueryRowContext(ctx, account, id), "turn", id, r.dest()...); err != nil {
			return turn.Turn{}, err
		}
		return r.turn()
	})
}

// LoadRecentTurns implements turn.ConversationReader.
func (s *Backend) LoadRecentTurns(ctx context.Context, account string, conv turn.ID, limit int) ([]turn.Turn, error) {
	return readOne(ctx, s, func(st *statements) ([]turn.Turn, error) {
		rows, err := st.LoadRecentTurns.QueryContext(ctx, account, conv, int64(limit))
		if err != nil {
			return nil, classify(err)
		}
		defer rows.Close()
		seen := false
		out := []turn.Turn{}
		for rows.Next() {
			seen = true
			var r turnRow
			if err := rows.Scan(r.dest()...); err != nil {
				return nil, classify(err)
			}
			if !r.user.Valid {
				continue // the conversation exists and has no turns
			}
			t, err := r.turn()
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		}
		if err := rows.Err(); err != nil {
			return nil, classify(err)
		}
		if !seen {
			return nil, codec.NotFound("conversation", conv)
		}
		return out, nil
	})
}

// TurnPhase implements turn.ConversationReader.
func (s *Backend) TurnPhase(ctx context.Context, account string, id turn.ID) (turn.PhaseMarker, error) {
	return readOne(ctx, s, func(st *statements) (turn.PhaseMarker, error) {
		m := turn.PhaseMarker{AccountID: account, TurnID: id}
		var ph string
		var updated sql.NullInt64
		if err := scanOne(st.TurnPhase.QueryRowContext(ctx, account, id), "turn", id, &m.ConversationID, &ph, &updated); err != nil {
			return m, err
		}
		m.UpdatedAt = fromMicros(updated)
		var err error
		m.Phase, err = codec.Phase(ph)
		return m, err
	})
}

// SetTurnPhase implements turn.ConversationWriter.
func (s *Backend) SetTurnPhase(ctx context.Context, account string, id turn.ID, p turn.Phase) (turn.PhaseMarker, error) {
	at := s.now()
	return writeOne(ctx, s, func(st *statements) (turn.PhaseMarker, error) { return s.setPhase(st, account, id, p, at) })
}

// setPhase moves the turn's marker to p, stamped at. A terminal phase is left only for itself.
func (s *Backend) setPhase(st *statements, account string, id turn.ID, p turn.Phase, at time.Time) (turn.PhaseMarker, error) {
	m := turn.PhaseMarker{AccountID: account, TurnID: id, Phase: p, UpdatedAt: at}
	err := st.SetTurnPhase.QueryRowContext(bg, account, id, string(p), micros(at)).Scan(&m.ConversationID)
	if err == nil {
		return m, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return m, classify(err)
	}
	var exists bool
	if err := st.SetTurnPhaseExists.QueryRowContext(bg, account, id).Scan(&exists); err != nil {
		return m, classify(err)
	}
	if !exists {
		return m, codec.NotFound("turn", id)
	}
	return m, codec.Conflict("turn %s is in a terminal phase", id)
}

// markerRow is a phase marker as listed, its phase still a label.
type markerRow struct {
	m       turn.PhaseMarker
	phase   string
	updated sql.NullInt64
}

func (r *markerRow) dest() []any {
	return []any{&r.m.AccountID, &r.m.ConversationID, &r.m.TurnID, &r.phase, &r.updated}
}

func (r *markerRow) marker() (turn.PhaseMarker, error) {
	m := r.m
	m.UpdatedAt = fromMicros(r.updated)
	var err error
	m.Phase, err = codec.Phase(r.phase)
	return m, err
}

// ListUnfinishedTurns implements turn.ConversationReader.
func (s *Backend) ListUnfinishedTurns(ctx context.Context, scope turn.RecoveryScope, limit int) ([]turn.PhaseMarker, error) {
	return readOne(ctx, s, func(st *statements) ([]turn.PhaseMarker, error) {
		rows, err := st.ListUnfinishedTurns.QueryContext(ctx, scope.AccountID, int64(limit))
		return collect(rows, err, (*markerRow).dest, (*markerRow).marker)
	})
}
