package memturn

import (
	"context"
	"slices"

	"github.com/steadhq/stead/turn"
)

// LoadReplay implements turn.ReplayReader.
func (s *Backend) LoadReplay(ctx context.Context, account string, turnID turn.ID) (turn.ReplayRecord, error) {
	sh, err := s.lockShard(ctx, account)
	if err != nil {
		return turn.ReplayRecord{}, err
	}
	defer s.mu.Unlock()
	if r, ok := sh.replay[turnID]; ok {
		return copyReplay(r), nil
	}
	return turn.ReplayRecord{}, notFound("replay record of turn", turnID)
}

// ReplaysForConversation implements turn.ReplayReader.
func (s *Backend) ReplaysForConversation(ctx context.Context, account string, conversation turn.ID, limit int) ([]turn.ReplayRecord, error) {
	sh, err := s.lockShard(ctx, account)
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var all []turn.ReplayRecord
	for _, r := range sh.replay {
		if r.ConversationID == conversation {
			all = append(all, r)
		}
	}
	slices.SortFunc(all, func(a, b turn.ReplayRecord) int {
		return byTimeThenID(a.RecordedAt, a.TurnID, b.RecordedAt, b.TurnID)
	})
	out := []turn.ReplayRecord{}
	for _, r := range lastN(all, limit) {
		out = append(out, copyReplay(r))
	}
	return out, nil
}

// PutReplay implements turn.ReplayWriter.
func (s *Backend) PutReplay(ctx context.Context, r turn.ReplayRecord) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.putReplay(nil, r)
	return nil
}

func (s *Backend) putReplay(u *undo, r turn.ReplayRecord) {
	sh := s.ensureShard(u, r.AccountID)
	put(u, sh.replay, r.TurnID, copyReplay(r))
}
