package sqlitetransport

import (
	"context"
	"database/sql"
	"fmt"
)

// stmts are prepared once on the transport's connection.
type stmts struct {
	createGroup, insertMessage *sql.Stmt
	pickAny, pickPrioritised   *sql.Stmt
	lease, ackMessage          *sql.Stmt
	freeIfMore, deleteGroup    *sql.Stmt
	park, release              *sql.Stmt

	prepared []*sql.Stmt // every statement above that prepare made, for close
}

// The claim order: a free group's key is when it was last served (never: lowest), an expired
// lease's key is when it ended; ties go to the lower id. A lease ending exactly now still holds.
const pickSQL = `
SELECT g.group_id, g.priority, m.seq, m.event
FROM (
    SELECT group_id, priority, coalesce(lock_until, -9223372036854775808) AS k
    FROM transport_groups
    WHERE (locked_by IS NULL OR lock_until < ?1) AND priority >= ?2 %s
    ORDER BY coalesce(lock_until, -9223372036854775808), group_id
    LIMIT ?3
) g
LEFT JOIN transport_messages m
    ON m.seq = (SELECT min(seq) FROM transport_messages WHERE group_id = g.group_id)
ORDER BY g.k, g.group_id`

func (s *stmts) prepare(ctx context.Context, c *sql.Conn) error {
	for _, p := range []struct {
		st  **sql.Stmt
		sql string
	}{
		{&s.createGroup, `INSERT INTO transport_groups (group_id, priority) VALUES (?1, ?2) ON CONFLICT (group_id) DO NOTHING`},
		{&s.insertMessage, `INSERT INTO transport_messages (group_id, event) VALUES (?1, ?2)`},
		{&s.pickAny, fmt.Sprintf(pickSQL, "")},
		// The literal priority > 0 lets SQLite use the partial index of prioritised groups.
		{&s.pickPrioritised, fmt.Sprintf(pickSQL, "AND priority > 0")},
		{&s.lease, `UPDATE transport_groups SET locked_by = ?1, lock_until = ?2 WHERE group_id = ?3`},
		{&s.ackMessage, `DELETE FROM transport_messages WHERE seq = ?1 AND group_id = ?2
			AND EXISTS (SELECT 1 FROM transport_groups WHERE group_id = ?2 AND locked_by = ?3)`},
		{&s.freeIfMore, `UPDATE transport_groups SET locked_by = NULL, lock_until = ?1
			WHERE group_id = ?2 AND EXISTS (SELECT 1 FROM transport_messages WHERE group_id = ?2)`},
		{&s.deleteGroup, `DELETE FROM transport_groups WHERE group_id = ?1`},
		{&s.park, `UPDATE transport_groups SET lock_until = ?1 WHERE group_id = ?2 AND locked_by = ?3`},
		{&s.release, `UPDATE transport_groups SET locked_by = NULL, lock_until = NULL WHERE group_id = ?1 AND locked_by = ?2`},
	} {
		st, err := c.PrepareContext(ctx, p.sql)
		if err != nil {
			return err
		}
		*p.st = st
		s.prepared = append(s.prepared, st)
	}
	return nil
}

func (s *stmts) close() {
	for _, st := range s.prepared {
		st.Close()
	}
}
