// Package turn keeps an assistant's conversation turns durable: you store each turn as it
// arrives, admit the commands it leads to under idempotency keys, and commit everything a step
// produced (events, cards, outbox messages, the turn's phase) in one bundle, so that a crash or a
// retried request never acts twice. docs/turns.md in the repository explains the model and walks
// one turn through it (Example_turnLifecycle in turn/memturn runs the same walk). Pick a backend
// — turn/memturn in tests, turn/sqliteturn on one host, turn/pgturn on PostgreSQL — and deliver
// the outbox with turn/dispatch.
//
// It is the persistence contract for assistant conversation turns: the vocabulary
// (conversations, turns and their crash-recovery phase, interactions or "cards", the command
// journal, the append-only event journal, the outbox, replay records) and seven store
// interfaces that any backend implements.
//
// Six interfaces come in a Reader and a Writer half with the aggregate beside them
// (ConversationStore, InteractionStore, JournalStore, EventStore, OutboxStore, ReplayStore);
// CommitStore applies a Bundle — everything one turn step produced — all-or-nothing in a fixed
// order. Stores holds one implementation per role; Stores.ReadOnly hands out the reader halves
// with no way back to a writer.
//
// The seam: a backend implements Backend, the seven roles on arguments already checked, and
// NewStores puts one checking front before it. The front refuses bad input with ErrInvalid before
// the backend sees it, hands the backend normalised values (UTC microsecond times, empty
// documents nil) and normalises results alike, so the rules cannot drift between backends and a
// backend written elsewhere gets them for free. Backend constructors return the front:
//
//	stores := memturn.New()                       // or pgturn.New(ctx, pool), sqliteturn.New(ctx, db)
//	if err := stores.Conversations.CreateConversation(ctx, conv); err != nil { ... }
//	receipt, err := stores.Commits.Commit(ctx, conv.AccountID, bundle)
//	page, err := stores.ReadOnly().Events.ReadFrom(ctx, conv.AccountID, turn.Start, 100)
//
// Stores.Backend is the escape hatch to a backend's own features (pgturn's CommitIn); such a
// feature runs the same exported checks (PrepareCommit).
//
// The rules every backend keeps, proven by the conformance suite in turn/turntest:
//   - every row is scoped by account, and another tenant's id is ErrNotFound, exactly like an id
//     that never existed (the outbox, a system queue addressed by its own ids, is the one
//     exception);
//   - at most one open blocking card per account and case;
//   - exactly one Fresh admission per (account, idempotency key), every repeat replays the
//     persisted outcome;
//   - event sequences are assigned by the store in append order; ReadFrom pages never skip or
//     repeat an event; a redaction erases a payload in place, keeps identity and order, and
//     records who erased it, once;
//   - event sequences are global across tenants, not per account. Isolation covers every row,
//     not the count of rows: from the sequences of two of its own events (or two cursors) a
//     tenant can tell how many events other tenants appended in between, never which tenants or
//     what. Keep sequences and cursors server-side where that volume is confidential (see
//     EventReader.ReadFrom);
//   - an outbox row is never claimed by two dispatchers at once, and a refused settlement writes
//     nothing;
//   - a bundle that fails leaves no trace, including on the records it would have modified.
//
// Errors match the stead sentinels (ErrNotFound, ErrConflict, ErrUnavailable, ErrTimeout,
// ErrInvalid) with errors.Is, plus ErrCorrupt for stored data that breaks an invariant. Refusals
// with a stable meaning are *Error values carrying a code (CodeIdentityMismatch,
// CodeInvalidRecord, CodeBundleAccountMismatch); test for one with HasCode.
//
// Backends: turn/memturn (in memory, the reference, with a manual clock and fault injection),
// turn/pgturn (PostgreSQL) and turn/sqliteturn (SQLite).
// turn/dispatch delivers the outbox on any of them.
package turn
