package memturn

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/steadhq/stead/turn"
)

// ListSince implements turn.EventReader.
func (s *Backend) ListSince(ctx context.Context, account string, key turn.CaseKey, since turn.Revision, limit int) ([]turn.Event, error) {
	sh, err := s.lockShard(ctx, account)
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []turn.Event{}
	for _, e := range sh.stream {
		if len(out) >= limit {
			break
		}
		if e.CaseKey == key && e.CaseRevision > since {
			out = append(out, copyEvent(e))
		}
	}
	return out, nil
}

// ReadFrom implements turn.EventReader.
func (s *Backend) ReadFrom(ctx context.Context, account string, after turn.Cursor, limit int) (turn.EventPage, error) {
	sh, err := s.lockShard(ctx, account)
	if err != nil {
		return turn.EventPage{}, err
	}
	defer s.mu.Unlock()
	page := turn.EventPage{Events: []turn.Event{}, Next: after}
	i := sort.Search(len(sh.stream), func(i int) bool { return sh.stream[i].Sequence > int64(after) })
	for ; i < len(sh.stream) && len(page.Events) < limit; i++ {
		page.Events = append(page.Events, copyEvent(sh.stream[i]))
	}
	if n := len(page.Events); n > 0 {
		page.Next = turn.After(page.Events[n-1].Sequence)
	}
	return page, nil
}

// LoadEvents implements turn.EventReader.
func (s *Backend) LoadEvents(ctx context.Context, account string, ids []turn.ID) ([]turn.Event, error) {
	sh, err := s.lockShard(ctx, account)
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []turn.Event{}
	for _, id := range ids {
		if i, ok := sh.eventIndex[id]; ok {
			out = append(out, copyEvent(sh.stream[i]))
		}
	}
	return out, nil
}

// CountEvents implements turn.EventReader.
func (s *Backend) CountEvents(ctx context.Context, account string, key turn.CaseKey) (int64, error) {
	sh, err := s.lockShard(ctx, account)
	if err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	var n int64
	for _, e := range sh.stream {
		if e.CaseKey == key {
			n++
		}
	}
	return n, nil
}

// AppendEvents implements turn.EventWriter.
func (s *Backend) AppendEvents(ctx context.Context, b turn.EventBatch) ([]turn.ID, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	ids, err := s.append(nil, b)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := s.faults.take(AfterCommitBeforeEventReadback); err != nil {
		return nil, err
	}
	return ids, nil
}

// append checks every id (against the stored events and within the batch) before writing any,
// then hands out sequences in batch order.
func (s *Backend) append(u *undo, b turn.EventBatch) ([]turn.ID, error) {
	sh := s.ensureShard(u, b.AccountID)
	seen := make(map[turn.ID]bool, len(b.Events))
	for _, e := range b.Events {
		if _, ok := sh.eventIndex[e.EventID]; ok || seen[e.EventID] {
			return nil, conflict("event %s exists", e.EventID)
		}
		seen[e.EventID] = true
	}
	ids := make([]turn.ID, 0, len(b.Events))
	for _, e := range b.Events {
		prevSeq := s.seq
		s.seq++
		sh.stream = append(sh.stream, copyEvent(turn.Event{
			Sequence: s.seq, EventID: e.EventID, AccountID: b.AccountID, CaseKey: b.CaseKey,
			CaseRevision: b.Revision, CommandID: b.CommandID, EventType: e.EventType,
			Payload: e.Payload, OccurredAt: e.OccurredAt,
		}))
		sh.eventIndex[e.EventID] = len(sh.stream) - 1
		id := e.EventID
		u.add(func() {
			sh.stream = sh.stream[:len(sh.stream)-1]
			delete(sh.eventIndex, id)
			s.seq = prevSeq
		})
		ids = append(ids, e.EventID)
	}
	return ids, nil
}

// RedactPayload implements turn.EventWriter. The first erasure is the one on record: a repeat
// returns it and changes nothing.
func (s *Backend) RedactPayload(ctx context.Context, account string, event turn.ID, authority string) (turn.Redaction, error) {
	sh, err := s.lockShard(ctx, account)
	if err != nil {
		return turn.Redaction{}, err
	}
	defer s.mu.Unlock()
	i, ok := sh.eventIndex[event]
	if !ok {
		return turn.Redaction{}, notFound("event", event)
	}
	e := sh.stream[i]
	if e.Redaction != nil {
		return *e.Redaction, nil
	}
	e.Payload = json.RawMessage("null")
	e.Redaction = &turn.Redaction{RedactedAt: s.now(), Authority: authority}
	sh.stream[i] = e
	return *e.Redaction, nil
}
