// Package retention is how you keep a store from growing forever: it deletes finished executions
// together with everything they own, a whole tree at a time — an execution and every descendant
// (region children, invoked machines, their own children), with their markers, timers, traces
// and the outbox rows addressed to them — on any *stead.Store. Run PurgeFinished on a schedule
// (the stead CLI's purge does) after the executions' results have been read (worker.Client.Wait,
// worker.Config.OnFinish).
//
//	res, err := retention.PurgeTree(ctx, store, "order-42", retention.Options{Archive: keep})
//	rep, err := retention.PurgeFinished(ctx, store, retention.Sweep{OlderThan: 30 * 24 * time.Hour})
//
// A tree is purged only when its root is done or cancelled and every descendant is done,
// cancelled or failed, so that nothing still running loses its parent or its children. A failed
// root must be ended first (worker.Client.Cancel), since an operator can still retry it; a failed
// descendant cannot be retried (retry takes roots only) and its failure was already reported to
// its parent, so once the root has finished it is purged with the tree rather than keeping the
// tree forever.
// An optional archiver sees the whole tree and its traces before anything is deleted, and can
// veto the purge. Members are deleted deepest first and the root last, each with the
// compare-and-swap of stead.Store.Purge at the version the purge examined: a member that moved
// on since (a late commit) stops the purge with ErrConflict and the root still stored, and a
// purge cut short by a crash is finished by running it again, since what is left is still a tree
// under the root.
//
// The descendants of an execution are found two ways, both kept: the ids the store lists under
// the prefix "<root id>:" (child ids extend their parent's), and the children each member's join
// state names. An execution whose id merely shares the prefix but whose parent chain does not
// reach the root is not a member and is left alone.
package retention
