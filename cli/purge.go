package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/retention"
)

func newPurge() *cobra.Command {
	var (
		sf             storeFlags
		olderThan      string
		finishedBefore string
		statuses       []string
		definitionID   string
		limit          int
		dryRun         bool
		archiveDir     string
	)
	cmd := &cobra.Command{
		Use:   "purge --store <sqlite path | postgres URL> (<root-id>... | --older-than AGE | --finished-before TIME)",
		Short: "Delete finished executions with their whole trees",
		Long: `purge deletes executions together with every descendant (region children, invoked machines)
and everything they own: markers, timers, traces, queued outbox rows. A tree is purged only when
its root is done or cancelled and every other member is done, cancelled or failed (a failed root
waits for an operator's retry or cancel); otherwise it is refused and kept whole. Members go deepest first and the root last, so a purge cut short is finished by running
it again.

With root ids, purge deletes those trees. With --older-than or --finished-before, it sweeps the
roots that finished before then (done and cancelled, or --status), optionally of one
--definition-id, at most --limit of them; refused trees are listed and the sweep goes on.
--dry-run checks every tree and deletes nothing; --archive DIR first writes each tree, with its
traces, to DIR/<root id>.json (an archive that cannot be written keeps the tree).

Exit codes: 0 every tree was purged (or there was nothing to purge); 1 an error; 2 a usage
mistake; 3 some trees were refused (each is listed).`,
		RunE: func(cmd *cobra.Command, ids []string) error {
			sweeping := olderThan != "" || finishedBefore != ""
			switch {
			case len(ids) == 0 && !sweeping:
				return usageError{errors.New("purge: give root ids, or sweep with --older-than or --finished-before")}
			case len(ids) > 0 && sweeping:
				return usageError{errors.New("purge: give root ids or a sweep, not both")}
			case olderThan != "" && finishedBefore != "":
				return usageError{errors.New("purge: --older-than or --finished-before, not both")}
			case len(ids) > 0 && (len(statuses) > 0 || definitionID != "" || limit != 0):
				return usageError{errors.New("purge: --status, --definition-id and --limit select a sweep, not root ids")}
			case limit < 0:
				return usageError{fmt.Errorf("--limit %d: want 0 (no limit) or more", limit)}
			}
			sw := retention.Sweep{DefinitionID: definitionID, Limit: limit, DryRun: dryRun}
			var err error
			if sw.Statuses, err = parseStatuses(statuses); err != nil {
				return err
			}
			if olderThan != "" {
				age, err := parseAge(olderThan)
				if err != nil {
					return usageError{fmt.Errorf("--older-than: %w", err)}
				}
				sw.Before = time.Now().Add(-age) // an age of 0 sweeps everything finished by now
			}
			if finishedBefore != "" {
				if sw.Before, err = parseWhen(finishedBefore, time.Now()); err != nil {
					return usageError{fmt.Errorf("--finished-before %q: %w", finishedBefore, err)}
				}
			}
			var archive retention.Archiver
			if archiveDir != "" {
				if err := os.MkdirAll(archiveDir, 0o755); err != nil {
					return err
				}
				archive = archiveTo(archiveDir)
			}
			ctx := cmd.Context()
			b, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer b.Close()
			out := cmd.OutOrStdout()
			verb := "purged"
			if dryRun {
				verb = "would purge"
			}
			if len(ids) > 0 {
				refused := 0
				for _, id := range ids {
					res, err := retention.PurgeTree(ctx, b.Store, id, retention.Options{Archive: archive, DryRun: dryRun})
					switch {
					case err == nil:
						fmt.Fprintf(out, "%s  %s  %d executions\n", id, verb, len(res.Members))
					case refusedTree(err):
						refused++
						fmt.Fprintf(out, "%s  refused: %s\n", id, oneLine(err))
					default:
						return err
					}
				}
				if refused > 0 {
					return refusedf("purge: %d of %d trees refused", refused, len(ids))
				}
				return nil
			}
			sw.Archive = archive
			pages := 0
			sw.Progress = func(r retention.SweepReport) {
				if pages++; pages > 1 {
					fmt.Fprintf(cmd.ErrOrStderr(), "progress: %s\n", sweepLine(r, verb))
				}
			}
			rep, err := retention.PurgeFinished(ctx, b.Store, sw)
			if errors.Is(err, stead.ErrInvalid) && rep.Cutoff.IsZero() {
				return usageError{err}
			}
			fmt.Fprintf(out, "%s\n", sweepLine(rep, verb))
			for _, r := range rep.Refused {
				fmt.Fprintf(out, "  refused %s: %s\n", r.Root, oneLine(r.Err))
			}
			if err != nil {
				return err
			}
			if len(rep.Refused) > 0 {
				return refusedf("purge: %d trees refused", len(rep.Refused))
			}
			return nil
		},
	}
	sf.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&olderThan, "older-than", "", "sweep roots finished longer ago than this (90m, 36h, 30d)")
	fl.StringVar(&finishedBefore, "finished-before", "", "sweep roots finished before this time (RFC 3339, a date, or an age)")
	fl.StringArrayVar(&statuses, "status", nil, "statuses a sweep takes: done, cancelled (default both)")
	fl.StringVar(&definitionID, "definition-id", "", "sweep roots of this definition id only")
	fl.IntVar(&limit, "limit", 0, "sweep at most this many roots (0: no limit)")
	fl.BoolVar(&dryRun, "dry-run", false, "check every tree and delete nothing")
	fl.StringVar(&archiveDir, "archive", "", "write each tree with its traces to DIR/<root id>.json before deleting it")
	return cmd
}

// refusedTree reports whether err refused one tree (which is listed) rather than failing the
// command.
func refusedTree(err error) bool {
	return errors.Is(err, retention.ErrVeto) || errors.Is(err, stead.ErrInvalid) ||
		errors.Is(err, stead.ErrConflict) || errors.Is(err, stead.ErrNotFound)
}

func sweepLine(r retention.SweepReport, verb string) string {
	head := "purge"
	if r.DryRun {
		head += " (dry run)"
	}
	return fmt.Sprintf("%s: roots finished before %s: %d examined, %d %s (%d executions), %d skipped (failed or another status), %d refused",
		head, stamp(r.Cutoff), r.Examined, r.Purged, verb, r.Deleted, r.Skipped, len(r.Refused))
}

// archiveTo writes each tree to dir/<escaped root id>.json, replacing an earlier archive of the
// same root (a purge run again archives what is left). A tree whose archive cannot be written is
// kept.
func archiveTo(dir string) retention.Archiver {
	return func(_ context.Context, t retention.Tree) error {
		path := filepath.Join(dir, url.PathEscape(t.Root)+".json")
		tmp := path + ".tmp"
		f, err := os.Create(tmp)
		if err != nil {
			return err
		}
		werr := writeJSON(f, map[string]any{"root": t.Root, "executions": t.Executions, "traces": t.Traces})
		if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
			os.Remove(tmp)
			return err
		}
		return os.Rename(tmp, path)
	}
}
