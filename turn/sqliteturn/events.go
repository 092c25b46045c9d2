package sqliteturn

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/internal/codec"
)

type eventRow struct {
	e          turn.Event
	rev        int64
	payload    string
	occurred   int64
	redactedAt sql.NullInt64
	authority  sql.NullString
}

func (r *eventRow) dest() []any {
	e := &r.e
	return []any{&e.Sequence, &e.EventID, &e.AccountID, &e.CaseKey.Workflow, &e.CaseKey.CaseID, &r.rev,
		&e.CommandID, &e.EventType, &r.payload, &r.occurred, &r.redactedAt, &r.authority}
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
	e.Payload, e.OccurredAt = readDoc(sql.NullString{String: r.payload, Valid: true}), time.UnixMicro(r.occurred).UTC()
	if e.Redaction, err = redaction(r.redactedAt, r.authority); err != nil {
		return e, err
	}
	return e, nil
}

// redaction reads the two audit columns, which a CHECK keeps both set or both NULL.
func redaction(at sql.NullInt64, authority sql.NullString) (*turn.Redaction, error) {
	switch {
	case !at.Valid && !authority.Valid:
		return nil, nil
	case !at.Valid || !authority.Valid:
		return nil, codec.Corrupt("half a redaction record")
	}
	return &turn.Redaction{RedactedAt: fromMicros(at), Authority: authority.String}, nil
}

func collectEvents(rows *sql.Rows, err error) ([]turn.Event, error) {
	return collect(rows, err, (*eventRow).dest, (*eventRow).event)
}

// AppendEvents implements turn.EventWriter.
func (s *Backend) AppendEvents(ctx context.Context, b turn.EventBatch) ([]turn.ID, error) {
	return writeOne(ctx, s, func(st *statements) ([]turn.ID, error) { return s.appendEvents(st, b) })
}

// appendEvents inserts the batch in order and returns its ids in that order. The file has one
// writer at a time, so the sequences this transaction draws become visible together, after every
// sequence drawn before them: a ReadFrom cursor never passes over an event that commits late, and
// no per-account lock is needed (PostgreSQL's backend takes one).
func (s *Backend) appendEvents(st *statements, b turn.EventBatch) ([]turn.ID, error) {
	ids := make([]turn.ID, len(b.Events))
	for i, e := range b.Events {
		if _, err := st.AppendEvents.ExecContext(bg, b.AccountID, e.EventID, b.CaseKey.Workflow, b.CaseKey.CaseID,
			int64(b.Revision), b.CommandID, e.EventType, codec.Doc(e.Payload), micros(e.OccurredAt)); err != nil {
			return nil, classify(err)
		}
		ids[i] = e.EventID
	}
	return ids, nil
}

// ListSince implements turn.EventReader.
func (s *Backend) ListSince(ctx context.Context, account string, key turn.CaseKey, since turn.Revision, limit int) ([]turn.Event, error) {
	return readOne(ctx, s, func(st *statements) ([]turn.Event, error) {
		return collectEvents(st.ListSince.QueryContext(ctx, account, key.Workflow, key.CaseID, int64(since), int64(limit)))
	})
}

// ReadFrom implements turn.EventReader.
func (s *Backend) ReadFrom(ctx context.Context, account string, after turn.Cursor, limit int) (turn.EventPage, error) {
	page := turn.EventPage{Events: []turn.Event{}, Next: after}
	if limit == 0 {
		return page, nil
	}
	events, err := readOne(ctx, s, func(st *statements) ([]turn.Event, error) {
		return collectEvents(st.ReadFrom.QueryContext(ctx, account, int64(after), int64(limit)))
	})
	if err != nil {
		return page, err
	}
	page.Events = events
	if n := len(events); n > 0 {
		page.Next = turn.After(events[n-1].Sequence)
	}
	return page, nil
}

// LoadEvents implements turn.EventReader: the account's events among ids, in the requested order
// (a repeated id repeated); the file returns them in no particular order.
func (s *Backend) LoadEvents(ctx context.Context, account string, ids []turn.ID) ([]turn.Event, error) {
	if len(ids) == 0 {
		return []turn.Event{}, nil
	}
	found, err := readOne(ctx, s, func(st *statements) ([]turn.Event, error) {
		return collectEvents(st.LoadEvents.QueryContext(ctx, account, idList(ids)))
	})
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

// CountEvents implements turn.EventReader.
func (s *Backend) CountEvents(ctx context.Context, account string, key turn.CaseKey) (int64, error) {
	return readOne(ctx, s, func(st *statements) (int64, error) {
		var n int64
		err := st.CountEvents.QueryRowContext(ctx, account, key.Workflow, key.CaseID).Scan(&n)
		return n, classify(err)
	})
}

// RedactPayload implements turn.EventWriter.
func (s *Backend) RedactPayload(ctx context.Context, account string, id turn.ID, authority string) (turn.Redaction, error) {
	at := s.now()
	return writeOne(ctx, s, func(st *statements) (turn.Redaction, error) {
		var redactedAt sql.NullInt64
		var by sql.NullString
		err := st.RedactPayload.QueryRowContext(bg, account, id, authority, micros(at)).Scan(&redactedAt, &by)
		if errors.Is(err, sql.ErrNoRows) {
			return turn.Redaction{}, codec.NotFound("event", id)
		}
		if err != nil {
			return turn.Redaction{}, classify(err)
		}
		red, err := redaction(redactedAt, by)
		if err != nil {
			return turn.Redaction{}, err
		}
		if red == nil {
			return turn.Redaction{}, codec.Corrupt("event %s was redacted without a record", id)
		}
		return *red, nil
	})
}
