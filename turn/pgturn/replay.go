package pgturn

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/internal/codec"
)

func (s *Backend) replayStep(what string, r turn.ReplayRecord) (step, error) {
	body, err := codec.Marshal(r)
	if err != nil {
		return step{}, err
	}
	args := []any{r.AccountID, r.TurnID, r.ConversationID, string(r.Phase), r.RecordedAt, body}
	return execStep(what, s.st.PutReplay, args, nil), nil
}

func readReplay(body []byte) (turn.ReplayRecord, error) {
	var r turn.ReplayRecord
	if err := codec.Unmarshal(body, &r, "replay record"); err != nil {
		return r, err
	}
	if !r.Phase.Valid() {
		return r, codec.Corrupt("replay record of turn %s has unknown phase %q", r.TurnID, r.Phase)
	}
	r.RecordedAt = r.RecordedAt.UTC()
	if r.Details != nil {
		r.Details = readDoc(r.Details)
	}
	return r, nil
}

func (s *Backend) loadReplay(ctx context.Context, q querier, account string, id turn.ID) (turn.ReplayRecord, error) {
	var body []byte
	if err := scanOne(q.QueryRow(ctx, s.st.LoadReplay, account, id), "replay record of turn", id, &body); err != nil {
		return turn.ReplayRecord{}, err
	}
	return readReplay(body)
}

func (s *Backend) replaysForConversation(ctx context.Context, q querier, account string, conv turn.ID, limit int) ([]turn.ReplayRecord, error) {
	rows, err := q.Query(ctx, s.st.ReplaysForConversation, account, conv, int64(limit))
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
