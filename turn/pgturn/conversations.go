package pgturn

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/steadhq/stead/turn"
)

func notFound(what string, id any) error { return fmt.Errorf("%w: %s %v", turn.ErrNotFound, what, id) }

func conflict(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{turn.ErrConflict}, args...)...)
}

const sqlLoadConversation = `
SELECT created_at, metadata FROM {schema}turn_conversations
WHERE account_id = $1 AND conversation_id = $2`

func (s *Store) loadConversation(ctx context.Context, q querier, account string, id turn.ID) (turn.Conversation, error) {
	c := turn.Conversation{ID: id, AccountID: account}
	var created time.Time
	var meta []byte
	if err := scanOne(q.QueryRow(ctx, s.sql(sqlLoadConversation), account, id), "conversation", id, &created, &meta); err != nil {
		return c, err
	}
	c.CreatedAt, c.Metadata = created.UTC(), readDoc(meta)
	return c, nil
}

const sqlCreateConversation = `
INSERT INTO {schema}turn_conversations (account_id, conversation_id, created_at, metadata)
VALUES ($1, $2, $3, $4)`

func (s *Store) createConversationStep(c turn.Conversation) step {
	return execStep("", s.sql(sqlCreateConversation), []any{c.AccountID, c.ID, turn.ClockTime(c.CreatedAt), doc(c.Metadata)}, nil)
}

// The turn and its phase marker go in together, in one statement: the marker's foreign key
// sees the turn inserted by the CTE, and the turn is inserted only if the conversation exists
// for the account (so a foreign conversation is NotFound, not a foreign-key error).
const sqlAppendUserTurn = `
WITH t AS (
    INSERT INTO {schema}turn_turns (account_id, turn_id, conversation_id, received_at, user_turn)
    SELECT $1, $2, $3, $4, $5
    WHERE EXISTS (SELECT 1 FROM {schema}turn_conversations WHERE account_id = $1 AND conversation_id = $3)
    RETURNING account_id, turn_id, conversation_id)
INSERT INTO {schema}turn_phases (account_id, turn_id, conversation_id, phase, updated_at)
SELECT account_id, turn_id, conversation_id, 'received', $6 FROM t`

func (s *Store) appendUserTurnStep(u turn.UserTurn, at time.Time) (step, error) {
	input, err := marshal(u.Input)
	if err != nil {
		return step{}, err
	}
	args := []any{u.AccountID(), u.Input.TurnID, u.Input.ConversationID, turn.ClockTime(u.ReceivedAt), input, at}
	return execStep("", s.sql(sqlAppendUserTurn), args, func(tag pgconn.CommandTag) error {
		if tag.RowsAffected() == 0 {
			return notFound("conversation", u.Input.ConversationID)
		}
		return nil
	}), nil
}

// The assistant turn is attached only to an unanswered turn of the same conversation; the
// statement also returns the stored turn's conversation (NULL for no turn), which tells the three
// refusals apart.
const sqlAppendAssistantTurn = `
WITH answered AS (
    UPDATE {schema}turn_turns SET assistant_turn = $4
    WHERE account_id = $1 AND turn_id = $2 AND conversation_id = $3 AND assistant_turn IS NULL
    RETURNING 1)
SELECT EXISTS (SELECT 1 FROM answered),
    (SELECT conversation_id FROM {schema}turn_turns WHERE account_id = $1 AND turn_id = $2)`

func (s *Store) appendAssistantTurnStep(account string, a turn.AssistantTurn) (step, error) {
	body, err := marshal(a)
	if err != nil {
		return step{}, err
	}
	return step{sql: s.sql(sqlAppendAssistantTurn), args: []any{account, a.TurnID, a.ConversationID, body},
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
				return notFound("turn", a.TurnID)
			case *conv != a.ConversationID:
				return turn.IdentityMismatch("assistant turn %s names conversation %s, the user turn %s", a.TurnID, a.ConversationID, *conv)
			}
			return conflict("turn %s already has its assistant turn", a.TurnID)
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
	if err := unmarshal(r.user, &t.User.Input, "user turn"); err != nil {
		return t, err
	}
	t.User.ReceivedAt = utc(r.received)
	if r.assistant != nil {
		t.Assistant = new(turn.AssistantTurn)
		if err := unmarshal(r.assistant, t.Assistant, "assistant turn"); err != nil {
			return t, err
		}
	}
	var err error
	t.Phase, err = phase(text(r.phase))
	return t, err
}

const sqlLoadTurn = `
SELECT t.user_turn, t.received_at, t.assistant_turn, p.phase
FROM {schema}turn_turns t JOIN {schema}turn_phases p USING (account_id, turn_id)
WHERE t.account_id = $1 AND t.turn_id = $2`

func (s *Store) loadTurn(ctx context.Context, q querier, account string, id turn.ID) (turn.Turn, error) {
	var r turnRow
	if err := scanOne(q.QueryRow(ctx, s.sql(sqlLoadTurn), account, id), "turn", id, r.dest()...); err != nil {
		return turn.Turn{}, err
	}
	return r.turn()
}

// The conversation drives the query, so a conversation that is not the account's gives no row at
// all (NotFound) while one without turns gives a single row of NULLs.
const sqlLoadRecentTurns = `
SELECT t.user_turn, t.received_at, t.assistant_turn, t.phase
FROM {schema}turn_conversations c
LEFT JOIN LATERAL (
    SELECT t.*, p.phase
    FROM {schema}turn_turns t JOIN {schema}turn_phases p USING (account_id, turn_id)
    WHERE t.account_id = c.account_id AND t.conversation_id = c.conversation_id
    ORDER BY t.received_at DESC, t.turn_id DESC
    LIMIT $3) t ON true
WHERE c.account_id = $1 AND c.conversation_id = $2
ORDER BY t.received_at, t.turn_id`

func (s *Store) loadRecentTurns(ctx context.Context, q querier, account string, conv turn.ID, limit int) ([]turn.Turn, error) {
	rows, err := q.Query(ctx, s.sql(sqlLoadRecentTurns), account, conv, clampLimit(limit))
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
		return nil, notFound("conversation", conv)
	}
	return out, nil
}

const sqlTurnPhase = `
SELECT conversation_id, phase, updated_at FROM {schema}turn_phases
WHERE account_id = $1 AND turn_id = $2`

func (s *Store) turnPhase(ctx context.Context, q querier, account string, id turn.ID) (turn.PhaseMarker, error) {
	m := turn.PhaseMarker{AccountID: account, TurnID: id}
	var ph string
	if err := scanOne(q.QueryRow(ctx, s.sql(sqlTurnPhase), account, id), "turn", id, &m.ConversationID, &ph, &m.UpdatedAt); err != nil {
		return m, err
	}
	m.UpdatedAt = m.UpdatedAt.UTC()
	var err error
	m.Phase, err = phase(ph)
	return m, err
}

// A terminal phase is never left, but setting it again is a retried write and is accepted (its
// updated_at refreshed): both rules are in the WHERE clause. The second branch answers whether
// the turn exists when the marker did not move.
const sqlSetTurnPhase = `
WITH moved AS (
    UPDATE {schema}turn_phases SET phase = $3, updated_at = $4
    WHERE account_id = $1 AND turn_id = $2 AND (phase = $3 OR phase NOT IN ('delivered', 'failed'))
    RETURNING conversation_id)
SELECT true, conversation_id FROM moved
UNION ALL
SELECT false, conversation_id FROM {schema}turn_phases
WHERE account_id = $1 AND turn_id = $2 AND NOT EXISTS (SELECT 1 FROM moved)`

// phaseStep moves the turn's marker to p, stamped at, into *out.
func (s *Store) phaseStep(what, account string, id turn.ID, p turn.Phase, at time.Time, out *turn.PhaseMarker) (step, error) {
	if !p.Valid() {
		return step{}, turn.InvalidRecord("unknown turn phase %q", p)
	}
	return step{what: what, sql: s.sql(sqlSetTurnPhase), args: []any{account, id, string(p), at},
		read: func(r results) error {
			var moved bool
			m := turn.PhaseMarker{AccountID: account, TurnID: id, Phase: p, UpdatedAt: at}
			if err := scanOne(r.QueryRow(), "turn", id, &moved, &m.ConversationID); err != nil {
				return err
			}
			if !moved {
				return conflict("turn %s is in a terminal phase", id)
			}
			if out != nil {
				*out = m
			}
			return nil
		}}, nil
}

// Unfinished turns across one account or all of them, oldest first. The partial index on
// unfinished phases keeps this to the turns in flight.
const sqlListUnfinishedTurns = `
SELECT p.account_id, p.conversation_id, p.turn_id, p.phase, p.updated_at
FROM {schema}turn_phases p JOIN {schema}turn_turns t USING (account_id, turn_id)
WHERE p.phase NOT IN ('delivered', 'failed') AND ($1 = '' OR p.account_id = $1)
ORDER BY t.received_at, p.turn_id, p.account_id
LIMIT $2`

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
	m.Phase, err = phase(r.phase)
	return m, err
}

func (s *Store) listUnfinishedTurns(ctx context.Context, q querier, scope turn.RecoveryScope, limit int) ([]turn.PhaseMarker, error) {
	rows, err := q.Query(ctx, s.sql(sqlListUnfinishedTurns), scope.AccountID, clampLimit(limit))
	return collect(rows, err, (*markerRow).dest, (*markerRow).marker)
}
