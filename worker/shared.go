package worker

import (
	"context"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
)

// SharedDB is a database that holds both the store and the transport, so that a worker can run a
// batch — claim, load, commit, publish, acknowledge — in one transaction of it (Config.SharedTx).
// pgtx.New makes one for pgstore and pgtransport on one PostgreSQL pool.
type SharedDB interface {
	// Begin starts a transaction. The worker gives ctx a deadline, Visibility/3 away; the
	// database must end the transaction (rolling it back) when its client leaves it idle, or
	// runs one statement, for longer than the time left until that deadline, so that a worker
	// that hangs cannot hold the groups it claimed for longer than Visibility (pgtx sets the
	// server's idle_in_transaction_session_timeout and statement_timeout to it).
	Begin(ctx context.Context) (Tx, error)
}

// Tx is one transaction of a SharedDB. Every method runs inside it, and nothing is visible to
// others before Commit; a Rollback (or a COMMIT that fails) undoes all of it, and the messages
// claimed in it are claimable again at once. After a method fails the transaction is aborted:
// only Rollback remains. Arguments are checked as the Store and the Transport check them.
type Tx interface {
	// Claim is transport.Transport.ClaimBatch in the transaction, and stead.Store.LoadForEvents
	// of what it claimed: loaded[i] is the execution of leases[i] and whether its event was
	// processed, read after the claim took the group (pgtx sends both in one round trip). The
	// groups stay held by the transaction until it ends, whatever the lease says. It returns at
	// most max messages, and up to depth consecutive messages of each group it takes (from its
	// head, in order, adjacent in the result) where ClaimBatch returns one. The worker
	// acknowledges a prefix of a group's leases and nacks at most the one after it; the leases
	// behind are neither, and the group must be free for them once the transaction ends, in
	// order. When the claim took messages and their load failed, Claim returns the leases with
	// the error.
	Claim(ctx context.Context, worker string, visibility time.Duration, minPriority, max, depth int) (leases []transport.Lease, loaded []stead.Loaded, err error)
	// CommitBatch is stead.Store.CommitBatch in the transaction. The emits of the items must be
	// empty: in a shared transaction the transport's queue is the outbox, so the caller
	// publishes them with Publish.
	CommitBatch(ctx context.Context, items []stead.CommitItem) ([]stead.CommitResult, error)
	// Publish is transport.Transport.PublishBatch in the transaction.
	Publish(ctx context.Context, msgs []transport.Outgoing) error
	// Ack is transport.Transport.AckBatch in the transaction, for leases of its own claims (the
	// only ones the worker settles in it; pgtx refuses any other). It may only check the leases and
	// queue the ack for Commit (pgtx does, to send it with the COMMIT): an ack that fails there
	// fails the Commit, and nothing of the transaction commits.
	Ack(ctx context.Context, ls []transport.Lease) error
	// Nack is transport.Transport.Nack in the transaction, queued for Commit like Ack may be.
	Nack(ctx context.Context, l *transport.Lease, delay time.Duration) error
	// Step commits one step (its bundle without emits), publishes what it emitted and acks its
	// message, in one round trip where the database allows it, and may commit the transaction in
	// that same round trip when the step wins (pgtx does; Commit then does nothing). A step that
	// loses its compare-and-swap comes back as the result's Err, with nothing of the transaction
	// committed and the transaction usable only for Rollback; an invalid step is an error
	// wrapping stead.ErrInvalid before anything is sent.
	Step(ctx context.Context, item stead.CommitItem, emitted []transport.Outgoing, l *transport.Lease) (stead.CommitResult, error)
	// Commit commits the transaction.
	Commit(ctx context.Context) error
	// Rollback ends the transaction without committing it; after Commit it does nothing.
	Rollback(ctx context.Context) error
}
