package sqlitetransport

import (
	"context"
	"database/sql"
	"fmt"
)

// stmts are prepared once on the transport's connection.
type stmts struct {
	txBegin, txCommit, txRollback   *sql.Stmt
	publishGroup, publishMessage    *sql.Stmt
	publishLimit                    *sql.Stmt
	claimPick, claimPickPrioritised *sql.Stmt
	claimLease, claimDeleteEmpty    *sql.Stmt
	ackMessage, ackFree             *sql.Stmt
	ackDeleteGroup, ackKeyed        *sql.Stmt
	ackKeyedFree, ackKeyedDelete    *sql.Stmt
	nackPark, nackRelease           *sql.Stmt
	extend                          *sql.Stmt
	queueStats                      *sql.Stmt
	flowKey, flowPutKey             *sql.Stmt
	flowRemember, flowEnqueue       *sql.Stmt
	flowWaiting, flowAdmit          *sql.Stmt
	flowCountWaiting, flowDue       *sql.Stmt
	flowForget, flowGroup           *sql.Stmt
	flowUnlimit, flowAnyWaiting     *sql.Stmt

	prepared []*sql.Stmt // every statement above that prepare made, for close
}

// statement is where one statement goes and its text.
type statement struct {
	dst  **sql.Stmt
	text string
}

// byName pairs every statement with its text under the name of the text's constant in sql.go.
func (s *stmts) byName() map[string]statement {
	return map[string]statement{
		"sqlTxBegin":              {&s.txBegin, sqlTxBegin},
		"sqlTxCommit":             {&s.txCommit, sqlTxCommit},
		"sqlTxRollback":           {&s.txRollback, sqlTxRollback},
		"sqlPublishGroup":         {&s.publishGroup, sqlPublishGroup},
		"sqlPublishMessage":       {&s.publishMessage, sqlPublishMessage},
		"sqlPublishLimit":         {&s.publishLimit, sqlPublishLimit},
		"sqlClaimPick":            {&s.claimPick, sqlClaimPick},
		"sqlClaimPickPrioritised": {&s.claimPickPrioritised, sqlClaimPickPrioritised},
		"sqlClaimLease":           {&s.claimLease, sqlClaimLease},
		"sqlClaimDeleteEmpty":     {&s.claimDeleteEmpty, sqlClaimDeleteEmpty},
		"sqlAckMessage":           {&s.ackMessage, sqlAckMessage},
		"sqlAckFree":              {&s.ackFree, sqlAckFree},
		"sqlAckDeleteGroup":       {&s.ackDeleteGroup, sqlAckDeleteGroup},
		"sqlAckKeyed":             {&s.ackKeyed, sqlAckKeyed},
		"sqlAckKeyedFree":         {&s.ackKeyedFree, sqlAckKeyedFree},
		"sqlAckKeyedDelete":       {&s.ackKeyedDelete, sqlAckKeyedDelete},
		"sqlNackPark":             {&s.nackPark, sqlNackPark},
		"sqlNackRelease":          {&s.nackRelease, sqlNackRelease},
		"sqlQueueStats":           {&s.queueStats, sqlQueueStats},
		"sqlExtend":               {&s.extend, sqlExtend},
		"sqlFlowKey":              {&s.flowKey, sqlFlowKey},
		"sqlFlowPutKey":           {&s.flowPutKey, sqlFlowPutKey},
		"sqlFlowRemember":         {&s.flowRemember, sqlFlowRemember},
		"sqlFlowEnqueue":          {&s.flowEnqueue, sqlFlowEnqueue},
		"sqlFlowWaiting":          {&s.flowWaiting, sqlFlowWaiting},
		"sqlFlowAdmit":            {&s.flowAdmit, sqlFlowAdmit},
		"sqlFlowCountWaiting":     {&s.flowCountWaiting, sqlFlowCountWaiting},
		"sqlFlowDue":              {&s.flowDue, sqlFlowDue},
		"sqlFlowForget":           {&s.flowForget, sqlFlowForget},
		"sqlFlowGroup":            {&s.flowGroup, sqlFlowGroup},
		"sqlFlowUnlimit":          {&s.flowUnlimit, sqlFlowUnlimit},
		"sqlFlowAnyWaiting":       {&s.flowAnyWaiting, sqlFlowAnyWaiting},
	}
}

func (s *stmts) prepare(ctx context.Context, c *sql.Conn) error {
	for name, st := range s.byName() {
		p, err := c.PrepareContext(ctx, st.text)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		*st.dst = p
		s.prepared = append(s.prepared, p)
	}
	return nil
}

func (s *stmts) close() {
	for _, st := range s.prepared {
		st.Close()
	}
}
