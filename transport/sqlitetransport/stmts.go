package sqlitetransport

import "database/sql"

// stmts are the transport's statements, prepared once on the database's writer connection
// (sqlitedb.DB.PrepareWrites) and run in its write transactions only, which begin and commit
// themselves. Each field is the statement of the constant named sql followed by the field's
// name (PublishGroup runs sqlPublishGroup): sqlitedb.PrepareByName pairs them by that name, as
// it does the store's, so no field can run another's text.
type stmts struct {
	PublishGroup, PublishMessage    *sql.Stmt
	PublishLimit                    *sql.Stmt
	ClaimPick, ClaimPickPrioritised *sql.Stmt
	ClaimLease, ClaimDeleteEmpty    *sql.Stmt
	AckMessage, AckFree             *sql.Stmt
	AckDeleteGroup, AckKeyed        *sql.Stmt
	AckKeyedFree, AckKeyedDelete    *sql.Stmt
	NackPark, NackRelease           *sql.Stmt
	Extend                          *sql.Stmt
	QueueStats                      *sql.Stmt
	FlowKey, FlowPutKey             *sql.Stmt
	FlowRemember, FlowEnqueue       *sql.Stmt
	FlowWaiting, FlowAdmit          *sql.Stmt
	FlowCountWaiting, FlowDue       *sql.Stmt
	FlowForget, FlowGroup           *sql.Stmt
	FlowUnlimit, FlowAnyWaiting     *sql.Stmt
}

// statements is every statement of sql.go, by the name of its constant.
var statements = map[string]string{
	"sqlPublishGroup":         sqlPublishGroup,
	"sqlPublishMessage":       sqlPublishMessage,
	"sqlPublishLimit":         sqlPublishLimit,
	"sqlClaimPick":            sqlClaimPick,
	"sqlClaimPickPrioritised": sqlClaimPickPrioritised,
	"sqlClaimLease":           sqlClaimLease,
	"sqlClaimDeleteEmpty":     sqlClaimDeleteEmpty,
	"sqlAckMessage":           sqlAckMessage,
	"sqlAckFree":              sqlAckFree,
	"sqlAckDeleteGroup":       sqlAckDeleteGroup,
	"sqlAckKeyed":             sqlAckKeyed,
	"sqlAckKeyedFree":         sqlAckKeyedFree,
	"sqlAckKeyedDelete":       sqlAckKeyedDelete,
	"sqlNackPark":             sqlNackPark,
	"sqlNackRelease":          sqlNackRelease,
	"sqlExtend":               sqlExtend,
	"sqlQueueStats":           sqlQueueStats,
	"sqlFlowKey":              sqlFlowKey,
	"sqlFlowPutKey":           sqlFlowPutKey,
	"sqlFlowRemember":         sqlFlowRemember,
	"sqlFlowEnqueue":          sqlFlowEnqueue,
	"sqlFlowWaiting":          sqlFlowWaiting,
	"sqlFlowAdmit":            sqlFlowAdmit,
	"sqlFlowCountWaiting":     sqlFlowCountWaiting,
	"sqlFlowDue":              sqlFlowDue,
	"sqlFlowForget":           sqlFlowForget,
	"sqlFlowGroup":            sqlFlowGroup,
	"sqlFlowUnlimit":          sqlFlowUnlimit,
	"sqlFlowAnyWaiting":       sqlFlowAnyWaiting,
}
