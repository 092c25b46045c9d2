package memturn

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/steadhq/stead/turn"
)

// LoadConversation implements turn.ConversationReader.
func (s *Backend) LoadConversation(ctx context.Context, account string, id turn.ID) (turn.Conversation, error) {
	sh, err := s.lockShard(ctx, account)
	if err != nil {
		return turn.Conversation{}, err
	}
	defer s.mu.Unlock()
	if c, ok := sh.conversations[id]; ok {
		return copyConversation(c), nil
	}
	return turn.Conversation{}, notFound("conversation", id)
}

// ListConversations implements turn.ConversationReader.
func (s *Backend) ListConversations(ctx context.Context, account string, limit int) ([]turn.Conversation, error) {
	sh, err := s.lockShard(ctx, account)
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	all := make([]turn.Conversation, 0, len(sh.conversations))
	for _, c := range sh.conversations {
		all = append(all, c)
	}
	slices.SortFunc(all, func(a, b turn.Conversation) int { return byTimeThenID(a.CreatedAt, a.ID, b.CreatedAt, b.ID) })
	out := []turn.Conversation{}
	for _, c := range lastN(all, limit) {
		out = append(out, copyConversation(c))
	}
	return out, nil
}

func (s *Backend) turnOf(row turnRow) turn.Turn {
	return turn.Turn{User: copyUserTurn(row.user), Assistant: copyAssistantTurn(row.assistant), Phase: row.marker.Phase}
}

// LoadRecentTurns implements turn.ConversationReader.
func (s *Backend) LoadRecentTurns(ctx context.Context, account string, conversation turn.ID, limit int) ([]turn.Turn, error) {
	sh, err := s.lockShard(ctx, account)
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if _, ok := sh.conversations[conversation]; !ok {
		return nil, notFound("conversation", conversation)
	}
	var rows []turnRow
	for _, row := range sh.turns {
		if row.user.Input.ConversationID == conversation {
			rows = append(rows, row)
		}
	}
	slices.SortFunc(rows, func(a, b turnRow) int {
		return byTimeThenID(a.user.ReceivedAt, a.user.Input.TurnID, b.user.ReceivedAt, b.user.Input.TurnID)
	})
	out := []turn.Turn{}
	for _, row := range lastN(rows, limit) {
		out = append(out, s.turnOf(row))
	}
	return out, nil
}

// LoadTurn implements turn.ConversationReader.
func (s *Backend) LoadTurn(ctx context.Context, account string, id turn.ID) (turn.Turn, error) {
	sh, err := s.lockShard(ctx, account)
	if err != nil {
		return turn.Turn{}, err
	}
	defer s.mu.Unlock()
	if row, ok := sh.turns[id]; ok {
		return s.turnOf(row), nil
	}
	return turn.Turn{}, notFound("turn", id)
}

// TurnPhase implements turn.ConversationReader.
func (s *Backend) TurnPhase(ctx context.Context, account string, id turn.ID) (turn.PhaseMarker, error) {
	sh, err := s.lockShard(ctx, account)
	if err != nil {
		return turn.PhaseMarker{}, err
	}
	defer s.mu.Unlock()
	if row, ok := sh.turns[id]; ok {
		return row.marker, nil
	}
	return turn.PhaseMarker{}, notFound("turn", id)
}

// ListUnfinishedTurns implements turn.ConversationReader.
func (s *Backend) ListUnfinishedTurns(ctx context.Context, scope turn.RecoveryScope, limit int) ([]turn.PhaseMarker, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var rows []turnRow
	for account, sh := range s.shards {
		if scope.AccountID != "" && account != scope.AccountID {
			continue
		}
		for _, row := range sh.turns {
			if !row.marker.Phase.Terminal() {
				rows = append(rows, row)
			}
		}
	}
	slices.SortFunc(rows, func(a, b turnRow) int {
		if c := byTimeThenID(a.user.ReceivedAt, a.user.Input.TurnID, b.user.ReceivedAt, b.user.Input.TurnID); c != 0 {
			return c
		}
		return strings.Compare(a.marker.AccountID, b.marker.AccountID)
	})
	out := []turn.PhaseMarker{}
	for _, row := range firstN(rows, limit) {
		out = append(out, row.marker)
	}
	return out, nil
}

// CreateConversation implements turn.ConversationWriter.
func (s *Backend) CreateConversation(ctx context.Context, c turn.Conversation) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	sh := s.ensureShard(nil, c.AccountID)
	if _, ok := sh.conversations[c.ID]; ok {
		return conflict("conversation %s exists", c.ID)
	}
	sh.conversations[c.ID] = copyConversation(c)
	return nil
}

// AppendUserTurn implements turn.ConversationWriter.
func (s *Backend) AppendUserTurn(ctx context.Context, t turn.UserTurn) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	sh := s.shardOf(t.AccountID())
	if _, ok := sh.conversations[t.Input.ConversationID]; !ok {
		return notFound("conversation", t.Input.ConversationID)
	}
	if _, ok := sh.turns[t.Input.TurnID]; ok {
		return conflict("turn %s exists", t.Input.TurnID)
	}
	sh.turns[t.Input.TurnID] = turnRow{user: copyUserTurn(t), marker: turn.PhaseMarker{
		AccountID: t.AccountID(), ConversationID: t.Input.ConversationID, TurnID: t.Input.TurnID,
		Phase: turn.PhaseReceived, UpdatedAt: s.now(),
	}}
	return nil
}

// AppendAssistantTurn implements turn.ConversationWriter.
func (s *Backend) AppendAssistantTurn(ctx context.Context, account string, t turn.AssistantTurn) error {
	if err := s.faults.take(BeforeResponsePersistence); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	sh := s.shardOf(account)
	row, ok := sh.turns[t.TurnID]
	switch {
	case !ok:
		return notFound("turn", t.TurnID)
	case row.user.Input.ConversationID != t.ConversationID:
		return turn.IdentityMismatch("assistant turn %s names conversation %s, the turn belongs to %s",
			t.TurnID, t.ConversationID, row.user.Input.ConversationID)
	case row.assistant != nil:
		return conflict("turn %s is already answered", t.TurnID)
	}
	row.assistant = copyAssistantTurn(&t)
	sh.turns[t.TurnID] = row
	return nil
}

// SetTurnPhase implements turn.ConversationWriter.
func (s *Backend) SetTurnPhase(ctx context.Context, account string, id turn.ID, phase turn.Phase) (turn.PhaseMarker, error) {
	if err := s.lock(ctx); err != nil {
		return turn.PhaseMarker{}, err
	}
	defer s.mu.Unlock()
	return s.setPhase(nil, account, id, phase, s.now())
}

func (s *Backend) setPhase(u *undo, account string, id turn.ID, phase turn.Phase, now time.Time) (turn.PhaseMarker, error) {
	sh := s.shardOf(account)
	row, ok := sh.turns[id]
	if !ok {
		return turn.PhaseMarker{}, notFound("turn", id)
	}
	if row.marker.Phase.Terminal() && row.marker.Phase != phase {
		return turn.PhaseMarker{}, conflict("turn %s is %s and cannot become %s", id, row.marker.Phase, phase)
	}
	row.marker.Phase = phase
	row.marker.UpdatedAt = now
	put(u, sh.turns, id, row)
	return row.marker, nil
}
