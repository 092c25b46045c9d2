package sqliteturn

import (
	"context"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/internal/codec"
)

// PutReplay implements turn.ReplayWriter.
func (s *Backend) PutReplay(ctx context.Context, r turn.ReplayRecord) error {
	return s.write(ctx, func(st *statements) error { return s.putReplay(st, r) })
}

func (s *Backend) putReplay(st *statements, r turn.ReplayRecord) error {
	body, err := codec.Marshal(r)
	if err != nil {
		return err
	}
	_, err = st.PutReplay.ExecContext(bg, r.AccountID, r.TurnID, r.ConversationID, string(r.Phase), micros(r.RecordedAt), body)
	return classify(err)
}

func readReplay(body string) (turn.ReplayRecord, error) {
	var r turn.ReplayRecord
	if err := codec.Unmarshal(body, &r, "replay record"); err != nil {
		return r, err
	}
	if !r.Phase.Valid() {
		return r, codec.Corrupt("replay record of turn %s has unknown phase %q", r.TurnID, r.Phase)
	}
	r.RecordedAt = r.RecordedAt.UTC()
	return r, nil
}

// LoadReplay implements turn.ReplayReader.
func (s *Backend) LoadReplay(ctx context.Context, account string, id turn.ID) (turn.ReplayRecord, error) {
	return readOne(ctx, s, func(st *statements) (turn.ReplayRecord, error) {
		var body string
		if err := scanOne(st.LoadReplay.QueryRowContext(ctx, account, id), "replay record of turn", id, &body); err != nil {
			return turn.ReplayRecord{}, err
		}
		return readReplay(body)
	})
}

// ReplaysForConversation implements turn.ReplayReader.
func (s *Backend) ReplaysForConversation(ctx context.Context, account string, conv turn.ID, limit int) ([]turn.ReplayRecord, error) {
	return readOne(ctx, s, func(st *statements) ([]turn.ReplayRecord, error) {
		rows, err := st.ReplaysForConversation.QueryContext(ctx, account, conv, int64(limit))
		return collect(rows, err, func(b *string) []any { return []any{b} }, func(b *string) (turn.ReplayRecord, error) {
			return readReplay(*b)
		})
	})
}
