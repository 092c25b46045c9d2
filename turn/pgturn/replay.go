package pgturn

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/turn"
)

// The record is stored whole as a document; the columns beside it are what the store reads.
const sqlPutReplay = `
INSERT INTO {schema}turn_replays (account_id, turn_id, conversation_id, phase, recorded_at, record)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (account_id, turn_id) DO UPDATE
SET conversation_id = EXCLUDED.conversation_id, phase = EXCLUDED.phase,
    recorded_at = EXCLUDED.recorded_at, record = EXCLUDED.record`

func (s *Store) replayStep(what string, r turn.ReplayRecord) (step, error) {
	r.RecordedAt = turn.ClockTime(r.RecordedAt)
	body, err := marshal(r)
	if err != nil {
		return step{}, err
	}
	args := []any{r.AccountID, r.TurnID, r.ConversationID, string(r.Phase), r.RecordedAt, body}
	return execStep(what, s.sql(sqlPutReplay), args, nil), nil
}

func readReplay(body []byte) (turn.ReplayRecord, error) {
	var r turn.ReplayRecord
	if err := unmarshal(body, &r, "replay record"); err != nil {
		return r, err
	}
	if !r.Phase.Valid() {
		return r, corrupt("replay record of turn %s has unknown phase %q", r.TurnID, r.Phase)
	}
	r.RecordedAt = r.RecordedAt.UTC()
	if r.Details != nil {
		r.Details = readDoc(r.Details)
	}
	return r, nil
}

const sqlLoadReplay = `SELECT record FROM {schema}turn_replays WHERE account_id = $1 AND turn_id = $2`

func (s *Store) loadReplay(ctx context.Context, q querier, account string, id turn.ID) (turn.ReplayRecord, error) {
	var body []byte
	if err := scanOne(q.QueryRow(ctx, s.sql(sqlLoadReplay), account, id), "replay record of turn", id, &body); err != nil {
		return turn.ReplayRecord{}, err
	}
	return readReplay(body)
}

// The newest limit records, returned oldest first.
const sqlReplaysForConversation = `
SELECT record FROM (
    SELECT record, recorded_at, turn_id FROM {schema}turn_replays
    WHERE account_id = $1 AND conversation_id = $2
    ORDER BY recorded_at DESC, turn_id DESC
    LIMIT $3) newest
ORDER BY recorded_at, turn_id`

func (s *Store) replaysForConversation(ctx context.Context, q querier, account string, conv turn.ID, limit int) ([]turn.ReplayRecord, error) {
	rows, err := q.Query(ctx, s.sql(sqlReplaysForConversation), account, conv, clampLimit(limit))
	if err != nil {
		return nil, classify(err)
	}
	bodies, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, classify(err)
	}
	out := make([]turn.ReplayRecord, 0, len(bodies))
	for _, b := range bodies {
		r, err := readReplay(b)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
