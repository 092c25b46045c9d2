package pgturn

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/internal/codec"
)

func (s *Backend) loadConversation(ctx context.Context, q querier, account string, id turn.ID) (turn.Conversation, error) {
	c := turn.Conversation{ID: id, AccountID: account}
	var created time.Time
	var meta []byte
	if err := scanOne(q.QueryRow(ctx, s.st.LoadConversation, account, id), "conversation", id, &created, &meta); err != nil {
		return c, err
	}
	c.CreatedAt, c.Metadata = created.UTC(), readDoc(meta)
	return c, nil
}

// conversationRow is a conversation as listed; the rows of a listing do not repeat the account.
type conversationRow struct {
	id      turn.ID
	created time.Time
	meta    []byte
}

func (r *conversationRow) dest() []any { return []any{&r.id, &r.created, &r.meta} }

func (s *Backend) listConversations(ctx context.Context, q querier, account string, limit int) ([]turn.Conversation, error) {
	rows, err := q.Query(ctx, s.st.ListConversations, account, int64(limit))
	return collect(rows, err, (*conversationRow).dest, func(r *conversationRow) (turn.Conversation, error) {
		return turn.Conversation{ID: r.id, AccountID: account, CreatedAt: r.created.UTC(), Metadata: readDoc(r.meta)}, nil
	})
}

func (s *Backend) createConversationStep(c turn.Conversation) step {
	return execStep("", s.st.CreateConversation, []any{c.AccountID, c.ID, c.CreatedAt, codec.Doc(c.Metadata)}, nil)
}

func (s *Backend) appendUserTurnStep(u turn.UserTurn, at time.Time) (step, error) {
	input, err := codec.Marshal(u.Input)
	if err != nil {
		return step{}, err
	}
	args := []any{u.AccountID(), u.Input.TurnID, u.Input.ConversationID, u.ReceivedAt, input, at}
	return execStep("", s.st.AppendUserTurn, args, func(tag pgconn.CommandTag) error {
		if tag.RowsAffected() == 0 {
			return codec.NotFound("conversation", u.Input.ConversationID)
		}
		return nil
	}), nil
}

func (s *Backend) appendAssistantTurnStep(account string, a turn.AssistantTurn) (step, error) {
	body, err := codec.Marshal(a)
	if err != nil {
		return step{}, err
	}
	return step{sql: s.st.AppendAssistantTurn, args: []any{account, a.TurnID, a.ConversationID, body},
		read: func(r results) error {
			var answered bool
			var conv *turn.ID
			if err := r.QueryRow().Scan(&answered, &conv); err != nil {
				return classify(err)
			}
			switch {
			case answered:
				return nil
			case conv == nil:
				return codec.NotFound("turn", a.TurnID)
			case *conv != a.ConversationID:
				return turn.IdentityMismatch("assistant turn %s names conversation %s, the user turn %s", a.TurnID, a.ConversationID, *conv)
			}
			return codec.Conflict("turn %s already has its assistant turn", a.TurnID)
		}}, nil
}

// turnRow holds a turn read with its phase: the user turn, received_at, the assistant turn and
// the phase. All are NULL on the empty side of an outer join.
type turnRow struct {
	user, assistant []byte
	received        *time.Time
	phase           *string
}

func (r *turnRow) dest() []any { return []any{&r.user, &r.received, &r.assistant, &r.phase} }

func (r *turnRow) turn() (turn.Turn, error) {
	var t turn.Turn
	if err := codec.Unmarshal(r.user, &t.User.Input, "user turn"); err != nil {
		return t, err
	}
	t.User.ReceivedAt = utc(r.received)
	if r.assistant != nil {
		t.Assistant = new(turn.AssistantTurn)
		if err := codec.Unmarshal(r.assistant, t.Assistant, "assistant turn"); err != nil {
			return t, err
		}
	}
	var err error
	t.Phase, err = codec.Phase(text(r.phase))
	return t, err
}

func (s *Backend) loadTurn(ctx context.Context, q querier, account string, id turn.ID) (turn.Turn, error) {
	var r turnRow
	if err := scanOne(q.QueryRow(ctx, s.st.LoadTurn, account, id), "turn", id, r.dest()...); err != nil {
		return turn.Turn{}, err
	}
	return r.turn()
}

func (s *Backend) loadRecentTurns(ctx context.Context, q querier, account string, conv turn.ID, limit int) ([]turn.Turn, error) {
	rows, err := q.Query(ctx, s.st.LoadRecentTurns, account, conv, int64(limit))
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
		if r.user == nil {
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
}

func (s *Backend) turnPhase(ctx context.Context, q querier, account string, id turn.ID) (turn.PhaseMarker, error) {
	m := turn.PhaseMarker{AccountID: account, TurnID: id}
	var ph string
	if err := scanOne(q.QueryRow(ctx, s.st.TurnPhase, account, id), "turn", id, &m.ConversationID, &ph, &m.UpdatedAt); err != nil {
		return m, err
	}
	m.UpdatedAt = m.UpdatedAt.UTC()
	var err error
	m.Phase, err = codec.Phase(ph)
	return m, err
}

// phaseStep moves the turn's marker to p, stamped at, into *out.
func (s *Backend) phaseStep(what, account string, id turn.ID, p turn.Phase, at time.Time, out *turn.PhaseMarker) step {
	return step{what: what, sql: s.st.SetTurnPhase, args: []any{account, id, string(p), at},
		read: func(r results) error {
			var moved bool
			m := turn.PhaseMarker{AccountID: account, TurnID: id, Phase: p, UpdatedAt: at}
			if err := scanOne(r.QueryRow(), "turn", id, &moved, &m.ConversationID); err != nil {
				return err
			}
			if !moved {
				return codec.Conflict("turn %s is in a terminal phase", id)
			}
			if out != nil {
				*out = m
			}
			return nil
		}}
}

// markerRow is a phase marker as listed, its phase still a label.
type markerRow struct {
	m     turn.PhaseMarker
	phase string
}

func (r *markerRow) dest() []any {
	return []any{&r.m.AccountID, &r.m.ConversationID, &r.m.TurnID, &r.phase, &r.m.UpdatedAt}
}

func (r *markerRow) marker() (turn.PhaseMarker, error) {
	m := r.m
	m.UpdatedAt = m.UpdatedAt.UTC()
	var err error
	m.Phase, err = codec.Phase(r.phase)
	return m, err
}

func (s *Backend) listUnfinishedTurns(ctx context.Context, q querier, scope turn.RecoveryScope, limit int) ([]turn.PhaseMarker, error) {
	rows, err := q.Query(ctx, s.st.ListUnfinishedTurns, scope.AccountID, int64(limit))
	return collect(rows, err, (*markerRow).dest, (*markerRow).marker)
}
