// Package cli is the stead command line as a library: Main builds the whole command tree (run,
// start, send, inspect, diagram, serve, the operator's commands, purge, migrate, defs, turns,
// version) from a Config holding the binary's own definitions and the registry of their actions,
// so that a program of one's own is "stead with my actions":
//
//	func main() {
//		def, err := chart.LoadFile("approval.yaml")
//		if err != nil {
//			log.Fatal(err)
//		}
//		reg := chart.NewRegistry().Action("open_ticket", openTicket)
//		cli.Main(cli.Config{Definitions: []*chart.Definition{def}, Registry: reg})
//	}
//
// The stock stead binary (cmd/stead) is cli.Main with the bundled samples. It reads any
// definition file given with --definition: it inspects, lists, draws, sends to, serves
// read-only and purges its executions, and refuses what runs the definition's actions (run,
// start --definition, reset, set-state, retry) with a MissingActionsError that names them.
//
// Every command refuses what it cannot do rather than guessing: a --store path that does not
// exist is an error unless --create; a PostgreSQL server that refuses the connection, or a
// database that does not exist, is reported at once unless --wait-for-db; send refuses an event
// a worker would drop (a finished execution, a kind the definition never handles) unless
// --force. --definition always names a definition to load (a file, or the id of one compiled
// in); --definition-id always selects executions by the definition id they record.
//
// Run executes one command line in-process and returns its exit code, for tests; Command returns
// the root cobra command, to embed the tree in a larger one. Package cli/backend opens what a
// --store string names, for commands of one's own (Config.Commands), and package console is the
// web console `serve` runs.
package cli
