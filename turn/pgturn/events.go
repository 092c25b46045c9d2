package pgturn

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/internal/codec"
)

type eventRow struct {
	e          turn.Event
	rev        int64
	payload    []byte
	redactedAt *time.Time
	authority  *string
}

func (r *eventRow) dest() []any {
	e := &r.e
	return []any{&e.Sequence, &e.EventID, &e.AccountID, &e.CaseKey.Workflow, &e.CaseKey.CaseID, &r.rev,
		&e.CommandID, &e.EventType, &r.payload, &e.OccurredAt, &r.redactedAt, &r.authority}
}

func (r *eventRow) event() (turn.Event, error) {
	e := r.e
	var err error
	if e.CaseRevision, err = codec.Revision(r.rev, "case revision"); err != nil {
		return e, err
	}
	if e.Sequence <= 0 {
		return e, codec.Corrupt("event %s has sequence %d", e.EventID, e.Sequence)
	}
	e.Payload, e.OccurredAt = readDoc(r.payload), e.OccurredAt.UTC()
	if e.Redaction, err = redaction(r.redactedAt, r.authority); err != nil {
		return e, err
	}
	return e, nil
}

// redaction reads the two audit columns, which a CHECK keeps both set or both NULL.
func redaction(at *time.Time, authority *string) (*turn.Redaction, error) {
	switch {
	case at == nil && authority == nil:
		return nil, nil
	case at == nil || authority == nil:
		return nil, codec.Corrupt("half a redaction record")
	}
	return &turn.Redaction{RedactedAt: at.UTC(), Authority: *authority}, nil
}

func collectEvents(rows pgx.Rows, err error) ([]turn.Event, error) {
	return collect(rows, err, (*eventRow).dest, (*eventRow).event)
}

// appendLockStep serialises the appends of account in this store's schema.
func (s *Backend) appendLockStep(account string) step {
	return execStep("", s.st.AppendEventsLock, []any{s.schema + "/" + account}, nil)
}

// appendStep appends the batch; its ids, in batch order, go to *ids.
func (s *Backend) appendStep(what string, b turn.EventBatch, ids *[]turn.ID) step {
	batchIDs := make([]turn.ID, len(b.Events))
	texts := make([]string, len(b.Events))
	types := make([]string, len(b.Events))
	payloads := make([]string, len(b.Events))
	occurred := make([]time.Time, len(b.Events))
	for i, e := range b.Events {
		batchIDs[i], texts[i], types[i], payloads[i], occurred[i] = e.EventID, e.EventID.String(), e.EventType, codec.Doc(e.Payload), e.OccurredAt
	}
	args := []any{b.AccountID, b.CaseKey.Workflow, b.CaseKey.CaseID, int64(b.Revision), b.CommandID, texts, types, payloads, occurred}
	return execStep(what, s.st.AppendEvents, args, func(pgconn.CommandTag) error {
		if ids != nil {
			*ids = batchIDs
		}
		return nil
	})
}

func (s *Backend) listSince(ctx context.Context, q querier, account string, key turn.CaseKey, since turn.Revision, limit int) ([]turn.Event, error) {
	return collectEvents(q.Query(ctx, s.st.ListSince, account, key.Workflow, key.CaseID, int64(since), int64(limit)))
}

func (s *Backend) readFrom(ctx context.Context, q querier, account string, after turn.Cursor, limit int) (turn.EventPage, error) {
	page := turn.EventPage{Events: []turn.Event{}, Next: after}
	if limit == 0 {
		return page, nil
	}
	events, err := collectEvents(q.Query(ctx, s.st.ReadFrom, account, int64(after), int64(limit)))
	if err != nil {
		return page, err
	}
	page.Events = events
	if n := len(events); n > 0 {
		page.Next = turn.After(events[n-1].Sequence)
	}
	return page, nil
}

// loadEvents returns the account's events among ids, in the requested order (a repeated id
// repeated); the database returns them in no particular order.
func (s *Backend) loadEvents(ctx context.Context, q querier, account string, ids []turn.ID) ([]turn.Event, error) {
	if len(ids) == 0 {
		return []turn.Event{}, nil
	}
	found, err := collectEvents(q.Query(ctx, s.st.LoadEvents, account, idTexts(ids)))
	if err != nil {
		return nil, err
	}
	byID := make(map[turn.ID]int, len(found))
	for i, e := range found {
		byID[e.EventID] = i
	}
	out := make([]turn.Event, 0, len(found))
	for _, id := range ids {
		if i, ok := byID[id]; ok {
			out = append(out, found[i])
		}
	}
	return out, nil
}

func (s *Backend) countEvents(ctx context.Context, q querier, account string, key turn.CaseKey) (int64, error) {
	var n int64
	err := q.QueryRow(ctx, s.st.CountEvents, account, key.Workflow, key.CaseID).Scan(&n)
	return n, classify(err)
}

func (s *Backend) redactStep(account string, id turn.ID, authority string, at time.Time, out *turn.Redaction) step {
	return step{sql: s.st.RedactPayload, args: []any{account, id, authority, at}, read: func(r results) error {
		var redactedAt *time.Time
		var by *string
		if err := scanOne(r.QueryRow(), "event", id, &redactedAt, &by); err != nil {
			return err
		}
		red, err := redaction(redactedAt, by)
		if err != nil {
			return err
		}
		if red == nil {
			return codec.Corrupt("event %s was redacted without a record", id)
		}
		*out = *red
		return nil
	}}
}
