// Package pgtransport is a transport backend on PostgreSQL (pgx v5), for workers on many hosts
// sharing one database. It runs on the application's pool, which it never closes:
//
//	pool, err := pgdb.Open(ctx, "postgres://app@db:5432/app", pgdb.Config{MaxConns: 16})
//	tr, err := pgtransport.New(ctx, pool, pgtransport.WithSchema("stead"))
//	defer tr.Close() // before pool.Close
//
// New returns the checked *transport.Transport in front of a *Backend.
//
// # How it works
//
// Messages live in transport_messages; every group with messages has a row in transport_groups
// that carries the lease (the token of the claim that holds it and when the lease ends) and the
// group's place in the round-robin (when it was last served). Each operation is one round-trip to
// a server-side function: transport_publish, transport_claim (FOR NO KEY UPDATE SKIP LOCKED, so
// claimers never wait), transport_ack and transport_nack. Time is the client's
// clock, passed in; the database's clock is never read.
//
// What keeps the hot path cheap, each measured (bench/results/transport.md):
//
//   - Only the round-robin place is indexed, and only an ack moves it: a claim or a park changes
//     unindexed columns, which PostgreSQL updates in place (HOT) without new index entries.
//   - Every ack still leaves a dead entry in front of the live ones in the round-robin index, so
//     a Backend remembers where its last claim was in the round-robin and the next claim starts
//     there instead of walking the dead entries from the head. One claim in 64, and any claim that
//     finds nothing after that place, starts from the head, where new groups and those handed
//     back by a nack, a lease or park that ran out or a rolled-back claim wait. Each such claim
//     serves at least one of them, oldest first, and moves the place back to it: a group behind
//     the place waits at most 64 claims of any one process, and k of them that join together
//     within 64·k (within 64+k with one claimer per process, whose next claims go on from the
//     place moved back; concurrent claimers of a process may move it forward again).
//   - The functions plan generically, once per connection, and may use only index scans and
//     nested loops: a plan made from the statistics of a young table stays for the life of the
//     connection, and a hash over a sequential scan there grew with the queue.
//   - A claim or an ack of one message takes scalar statements instead of the set-based form.
//
// An idle worker does not poll: Wait listens on a dedicated connection (LISTEN/NOTIFY) and wakes
// within milliseconds of a publish, from any process, that makes a group claimable (it creates
// the group) or a nack that hands a group back. An ack that frees a group with more messages
// wakes only the waiters of its own process: on a busy fleet nearly every ack does that, and a
// NOTIFY per ack would serialise every worker's commit on PostgreSQL's notification lock;
// elsewhere the group is found by the acking worker's next claim or at the next poll. Wait also
// re-checks every poll interval (default 500 ms), because lease and park ends send no
// notification and one can be missed while the listener reconnects (it reconnects with a growing,
// jittered pause of at most a second). Behind PgBouncer in transaction mode LISTEN receives
// nothing (the session that listened goes back to PgBouncer's pool): open the pool with
// pgdb.Config.PgBouncer and give the listener a direct connection to the server with
// WithListenURL; without one, a transport on a pool in PgBouncer mode logs a warning and Wait
// polls.
//
// # Claims whose answer was lost
//
// A claim through the pool that fails after it was sent (the connection died while the server
// ran it, or before its answer came back: a server restart, a network cut) may have committed,
// leasing groups to a token its claimer never learnt. The transport remembers that token and frees
// the groups still held by it as soon as the database answers again (transport_release, retried
// with a jittered pause of at most a second until it lands or the lease ends), so an outage does
// not hold those executions for a whole lease. A held claim (ClaimHeldGroupsTx) needs none of
// this: a transaction that did not commit took its claim with it.
//
// # Sharing a transaction with the execution store
//
// worker/pgtx runs a step's claim, load, commit, emits and acks in one transaction on the pool
// that the transport and pgstore share, with the Backend's methods that take the caller's
// transaction or pgx.Batch (ClaimHeldGroupsTx, HeldClaim, PublishBatchTx, QueuePublish,
// QueueAckHeld, QueueNackHeld, QueueAck, QueueNack; reached with
// tr.Backend().(*pgtransport.Backend)). They
// exist for it, and refuse what the Transport's methods refuse. The held claim writes no lease:
// inside the transaction the row lock already keeps every other claimer away (SKIP LOCKED) and the
// ack overwrites the lease anyway, so it saves a row version per message. A held group that was
// neither acked nor nacked is free the moment its transaction ends, commit or rollback; a
// rollback leaves the groups exactly as they were, the messages claimable again at once, and a
// nack with a delay writes the park as an ordinary lease. Notifications are sent when the
// transaction commits. The transaction must be READ COMMITTED (PostgreSQL's default): the claim
// reads each group's head in a statement of its own so that it sees the ack of the previous
// holder; under REPEATABLE READ a claim racing such an ack fails with stead.ErrConflict (a
// serialization failure) instead.
//
// Claims never wait: they lock the group rows they lease FOR NO KEY UPDATE SKIP LOCKED, and no
// other statement holds a group row in a way that makes PostgreSQL wait there despite SKIP LOCKED
// (publishers hold a separate anchor row per group, see the migration). Acks and nacks wait only
// for a claimer that took their group after the lease ran out. A publish waits only for another
// open transaction that is creating or deleting one of its groups, or that locked one it found
// created meanwhile: a publish creates a group, an ack of a group's last message deletes it, and
// ClaimBatch deletes an empty group it meets (a held claim frees it instead). A
// publish creates or locks the groups it did not find in one statement in id order (the lock
// protocol in migrations/001_init.sql), so two publishes do not deadlock, and steps that claim,
// publish to each other's groups and ack in shared transactions do not deadlock in the ordinary
// order (claim, publish once, ack last). A transaction that publishes twice, or acks before it publishes, can:
// then PostgreSQL aborts one transaction, which gets an error matching stead.ErrConflict; roll
// back and retry the step.
//
// # Flows
//
// The Backend is a transport.Limiter (Flows in migrations/001_init.sql): a keyed group (Outgoing.Flow, or the
// key its first keyed publish left in transport_flow_groups) is created waiting, its row's
// locked_by set to the empty string and lease_until to infinity, which no claim takes, and out of
// the round-robin indexes; admitting it clears both and keeps its place in the round-robin. A key's
// admission (transport_flow_admit) locks the key's row in transport_flow_keys FOR UPDATE SKIP
// LOCKED, then counts the key's admitted group rows and refills its rate bucket in later
// statements, and admits the oldest waiting groups the room allows: admissions of a key are
// serialised on its row, so a key never has more groups admitted than its Concurrency, however
// many processes claim. A publish that creates a keyed group or changes a key's limits, an ack of
// a keyed group (which ends its admission: with messages left it waits again at the back of its
// key's queue), a claim that settles an empty keyed group and Forget admit for their keys in
// their own statement; when the key's row is held by another transaction (an admission inside a
// caller's transaction holds it until that ends), they leave the key in transport_flow_due, as an
// admission does for the moment its next rate token is due. Every claim, leased or held, starts
// with one probe of that table's due_at index and admits for the keys that are due, so a group
// held back by a rate is admitted at the latest at the first claim after its token is due; Wait
// finds it at its next poll (or sooner, when a claim of its own process admitted it). An ack that
// admits wakes its own process's waiters only, as any ack; other processes find the group at
// their next claim or poll.
//
// Cost: unkeyed groups pay one probe of an empty index per claim, a primary-key probe of
// transport_flow_groups per group a publish creates, and nothing in acks but a predicate
// (flow_key IS NULL). Keyed groups pay the admission's statements on publish and ack. Lock order:
// group rows (id order), then transport_flow_groups rows, then key rows (key order, SKIP LOCKED:
// nothing waits for a key row but a publish that changes the key's limits, which takes them first,
// in key order). Forget waits for the transactions that hold its groups' rows.
//
// # Schema
//
// Migrations are embedded and run by New (unless WithoutMigrate) under an advisory lock, so many
// processes may start at once; transport_migrations records the version. Tables, indexes and
// functions are prefixed transport_ and live in the WithSchema schema, or else in the
// connection's search_path.
package pgtransport
