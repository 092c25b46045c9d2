package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead/doctor"
)

func newDoctor() *cobra.Command {
	var (
		sf       storeFlags
		quietFor time.Duration
		limit    int
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "doctor --store <postgres URL>",
		Short: "List executions that nothing in the database will move",
		Long: `doctor lists pending, running and cancelling executions that have no queued message, no
timer, no outbox or spawn row and no unfinished child, and were not updated for --quiet-for.

After a failover to an asynchronous replica (or a restore) the rows written just before it can
be gone while their executions survive: those sit "running" for ever. A pending or cancelling
execution on the list is certainly stuck ("certain"); a running one may be waiting, as designed,
for an event your application sends. Compare the list with what the application expected, then
send, retry or cancel.

Exit codes: 0 nothing listed; 1 an error; 2 a usage mistake; 3 executions were listed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 || quietFor < 0 {
				return usageError{errors.New("doctor: --limit and --quiet-for must not be negative")}
			}
			b, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer b.Close()
			if b.Pool == nil {
				return usageError{errors.New("doctor: needs a PostgreSQL --store (a SQLite file is one host: nothing fails over)")}
			}
			found, err := doctor.Stranded(cmd.Context(), b.Pool, doctor.Options{
				StoreSchema: sf.schema, TransportSchema: sf.schema, QuietFor: quietFor, Limit: limit})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := json.NewEncoder(out).Encode(found); err != nil {
					return err
				}
			} else if len(found) > 0 {
				w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tDEFINITION\tSTATUS\tSTATE\tUPDATED\tCERTAIN")
				for _, f := range found {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%v\n", f.ID, f.DefinitionID, f.Status, f.ActivePath,
						f.UpdatedAt.Format(time.RFC3339), f.Certain)
				}
				if err := w.Flush(); err != nil {
					return err
				}
			}
			if len(found) > 0 {
				return refusedf("doctor: %d executions have nothing in the database to move them", len(found))
			}
			if !asJSON {
				fmt.Fprintln(out, "doctor: every pending and running execution has something to move it")
			}
			return nil
		},
	}
	sf.register(cmd)
	cmd.Flags().DurationVar(&quietFor, "quiet-for", doctor.DefaultQuietFor, "list only executions not updated for this long")
	cmd.Flags().IntVar(&limit, "limit", doctor.DefaultLimit, "list at most this many, oldest update first")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}
