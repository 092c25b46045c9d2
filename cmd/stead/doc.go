// Command stead runs durable statecharts on SQLite or PostgreSQL: a demo that needs nothing
// installed, workers, the sender side (start, send), the operator's commands (suspend, resume,
// cancel, reset, set-state, retry, purge), schema migration, inspection, diagrams, the
// end-to-end benchmark, and a look into the turn store (turns).
//
// It is package cli's command tree (cli.Main) with the bundled sample flows and their actions,
// plus the demo, demo-operate and bench commands. For flows with actions of your own, build
// your own binary with cli.Main: this one reads, draws, lists and sends to them, and says so
// when a command needs their actions.
//
//	go run ./cmd/stead demo                  # 2,000 sample orders on ./stead-demo.db
//	stead migrate --store app.db             # creates app.db; other commands need --create for a new file
//	stead run --store app.db --definition flow.yaml --workers 8
//	stead start --store app.db flow --context '{"amount": 12}'
//	stead send --store app.db <execution-id> approved [--force]
//	stead inspect --store app.db [--status running] [--definition-id flow] [<execution-id>] [--json]
//	stead diagram --definition flow.yaml [--store app.db --execution <id>]
//	stead migrate --store postgres://... [--schema stead] [--wait-for-db 30s]
//	stead bench [--postgres postgres://...]
//	stead suspend|resume|cancel --store app.db <execution-id>... | --definition-id flow --status running ...
//	stead reset|set-state|retry --store app.db [--definition flow.yaml] <execution-id>... [--state s]
//	stead purge --store app.db <root-id>... | --older-than 30d [--dry-run] [--archive dir]
//	stead demo-operate                       # an operator suspends, resumes and cancels orders
//	stead turns conversations --store app.db --account acme [<conversation-id>] [--json]
//	stead turns show --store app.db --account acme <turn-id> [--after <cursor>] [--json]
//	stead turns erase --store app.db --account acme --event <event-id> --authority <who>
//
// --store takes a SQLite file path or a postgres:// URL. Errors print one line on stderr and
// exit non-zero: 1 for an error, 2 for a usage mistake. The control commands and purge also exit
// 3 when some executions (or trees) refused and 4 when a selection matched nothing.
package main
