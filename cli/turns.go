package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead/cli/backend"
	"github.com/steadhq/stead/turn"
)

// The turns commands read and erase what the turn store keeps (package turn). Every read goes
// through the read-only view of the stores, and every one is scoped by --account: another
// tenant's id is "not found", exactly as in the contract.

func newTurns() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "turns",
		Short: "Inspect assistant conversations and their turns, or erase an event's payload",
		Long: `turns reads the turn store of a database (conversations, turns and their phase, cards,
the command journal, the event journal, the outbox) for one account at a time, and erases an
event's payload on someone's authority. The commands open the turn store only: they create
no execution-store or transport tables.`,
		// Runnable, so that a mistyped subcommand is an error rather than the help text.
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(newTurnsConversations(), newTurnsShow(), newTurnsErase())
	return cmd
}

// turnFlags are the flags every turns command shares.
type turnFlags struct {
	sf      storeFlags
	account string
	asJSON  bool
}

func (f *turnFlags) register(cmd *cobra.Command, jsonHelp string) {
	f.sf.register(cmd)
	cmd.Flags().StringVar(&f.account, "account", "", "the account (tenant) whose rows to read (required)")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, jsonHelp)
}

// open opens the turn stores of --store alone, after the checks that need no database.
func (f *turnFlags) open(ctx context.Context) (turn.Stores, io.Closer, error) {
	if f.account == "" {
		return turn.Stores{}, nil, usageError{errors.New("--account is required")}
	}
	b, err := f.sf.openWith(ctx, backend.Options{TurnsOnly: true})
	if err != nil {
		return turn.Stores{}, nil, err
	}
	s, err := b.Turns(ctx)
	if err != nil {
		return turn.Stores{}, nil, errors.Join(err, b.Close())
	}
	return s, b, nil
}

// parseID parses an id given on the command line; a malformed one is a usage error.
func parseID(what, s string) (turn.ID, error) {
	id, err := turn.ParseID(s)
	if err != nil {
		return turn.ID{}, usageError{fmt.Errorf("%s: %w", what, err)}
	}
	return id, nil
}

// positiveLimit refuses a limit that would ask for nothing.
func positiveLimit(flag string, n int) error {
	if n < 1 {
		return usageError{fmt.Errorf("--%s must be at least 1, got %d", flag, n)}
	}
	return nil
}

// storeLimit refuses, as a usage mistake, a limit that asks for nothing or that the turn store
// would refuse (above turn.MaxLimit).
func storeLimit(flag string, n int) error {
	if n > turn.MaxLimit {
		return usageError{fmt.Errorf("--%s must be at most %d, got %d", flag, turn.MaxLimit, n)}
	}
	return positiveLimit(flag, n)
}

// defaultTurnsLimit is how many conversations, or turns of a conversation, a listing shows.
const defaultTurnsLimit = 20

func newTurnsConversations() *cobra.Command {
	var (
		f     turnFlags
		limit int
	)
	cmd := &cobra.Command{
		Use:   "conversations --store <sqlite path | postgres URL> --account <account> [conversation-id]",
		Short: "List an account's conversations, or show one with its turns",
		Long: `Without an id, conversations lists the account's newest --limit conversations, oldest first:
the newest is printed last, like tail. With an id, it shows that conversation: its metadata,
its open cards, and its newest --limit turns, oldest first, each with its phase. --json prints
the same for scripts.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{fmt.Errorf("%s: want at most one conversation id", cmd.CommandPath())}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := storeLimit("limit", limit); err != nil {
				return err
			}
			var conv turn.ID
			if len(args) == 1 {
				var err error
				if conv, err = parseID("conversation id", args[0]); err != nil {
					return err
				}
			}
			ctx := cmd.Context()
			s, closer, err := f.open(ctx)
			if err != nil {
				return err
			}
			defer closer.Close()
			r, out := s.ReadOnly(), cmd.OutOrStdout()
			if len(args) == 1 {
				return showConversation(ctx, out, r, f.account, conv, limit, f.asJSON)
			}
			convs, err := r.Conversations.ListConversations(ctx, f.account, limit)
			if err != nil {
				return err
			}
			if f.asJSON {
				return writeJSON(out, map[string]any{"conversations": convs})
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CONVERSATION\tCREATED\tMETADATA")
			for _, c := range convs {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", c.ID, stamp(c.CreatedAt), compactDoc(c.Metadata, 60))
			}
			return tw.Flush()
		},
	}
	f.register(cmd, "print JSON")
	cmd.Flags().IntVar(&limit, "limit", defaultTurnsLimit, "how many of the newest conversations (or turns of the conversation) to show")
	return cmd
}

// conversationDetail is everything conversations shows about one conversation.
type conversationDetail struct {
	Conversation turn.Conversation        `json:"conversation"`
	OpenCards    []turn.InteractionRecord `json:"open_cards"`
	Turns        []turn.Turn              `json:"turns"`
}

func showConversation(ctx context.Context, out io.Writer, r turn.ReadOnlyStores, account string, id turn.ID, limit int, asJSON bool) error {
	var d conversationDetail
	var err error
	if d.Conversation, err = r.Conversations.LoadConversation(ctx, account, id); err != nil {
		return err
	}
	if d.OpenCards, err = r.Interactions.ListOpenForConversation(ctx, account, id); err != nil {
		return err
	}
	if d.Turns, err = r.Conversations.LoadRecentTurns(ctx, account, id, limit); err != nil {
		return err
	}
	if asJSON {
		return writeJSON(out, d)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "conversation\t%s\n", d.Conversation.ID)
	fmt.Fprintf(tw, "account\t%s\n", d.Conversation.AccountID)
	fmt.Fprintf(tw, "created\t%s\n", stamp(d.Conversation.CreatedAt))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nmetadata\n%s\n", indent(d.Conversation.Metadata))
	fmt.Fprintf(out, "\nopen cards (%d)\n", len(d.OpenCards))
	for _, c := range d.OpenCards {
		fmt.Fprintln(out, "  "+cardLine(c))
	}
	fmt.Fprintf(out, "\nturns (%d, the newest %d at most, oldest first)\n", len(d.Turns), limit)
	if len(d.Turns) == 0 {
		return nil
	}
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TURN\tRECEIVED\tPHASE\tANSWERED\tUSER\tTEXT")
	for _, t := range d.Turns {
		answered := "no"
		if t.Assistant != nil {
			answered = "yes"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", t.User.Input.TurnID, stamp(t.User.ReceivedAt), t.Phase, answered,
			dash(t.User.Input.Actor.UserID), clip(singleLine(t.User.Input.Text), 50))
	}
	return tw.Flush()
}

// defaultEventsLimit is how many of a turn's events show prints unless --limit says otherwise.
const defaultEventsLimit = 50

// eventScanPage is how many events of the account's stream one read examines while looking for
// a turn's events.
const eventScanPage = 500

func newTurnsShow() *cobra.Command {
	var (
		f     turnFlags
		after int64
		limit int
	)
	cmd := &cobra.Command{
		Use:   "show --store <sqlite path | postgres URL> --account <account> <turn-id> [--after CURSOR] [--limit N]",
		Short: "Show one turn: its phase, cards, journal entries, events and outbox rows",
		Long: `show prints a turn: the user turn and the assistant's answer, its crash-recovery phase, the cards
it created or answered (whatever became of them), its entries in the command journal, the
outbox rows of those commands, and the events they appended.

Events are paged with the event cursor. An event names the command that appended it and a
command names its turn, so show reads the account's event stream from --after (default: the
start) and keeps the events of the turn's commands, at most --limit of them; when it stops
with a full page it prints the cursor to continue from. A turn with no command has no events,
and show reads no stream for it. --json prints the same for scripts; its "events.next" is the
cursor.`,
		Args: exactArgs(1, "a turn id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := positiveLimit("limit", limit); err != nil {
				return err
			}
			id, err := parseID("turn id", args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			s, closer, err := f.open(ctx)
			if err != nil {
				return err
			}
			defer closer.Close()
			d, err := loadTurnDetail(ctx, s.ReadOnly(), f.account, id, turn.Cursor(after), limit)
			if err != nil {
				return err
			}
			if f.asJSON {
				return writeJSON(cmd.OutOrStdout(), d)
			}
			return printTurnDetail(cmd.OutOrStdout(), d, turn.Cursor(after), limit)
		},
	}
	f.register(cmd, "print JSON")
	cmd.Flags().Int64Var(&after, "after", 0, "event cursor: show the turn's events after it (the cursor a full page printed)")
	cmd.Flags().IntVar(&limit, "limit", defaultEventsLimit, "how many of the turn's events to show")
	return cmd
}

// turnDetail is everything show prints about one turn.
type turnDetail struct {
	Turn    turn.Turn                `json:"turn"`
	Phase   turn.PhaseMarker         `json:"phase"`
	Cards   []turn.InteractionRecord `json:"cards"`
	Journal []turn.JournalEntry      `json:"journal"`
	Outbox  []turn.OutboxRecord      `json:"outbox"`
	Events  turn.EventPage           `json:"events"`
}

func loadTurnDetail(ctx context.Context, r turn.ReadOnlyStores, account string, id turn.ID, after turn.Cursor, limit int) (*turnDetail, error) {
	d := &turnDetail{Outbox: []turn.OutboxRecord{}}
	var err error
	if d.Turn, err = r.Conversations.LoadTurn(ctx, account, id); err != nil {
		return nil, err
	}
	if d.Phase, err = r.Conversations.TurnPhase(ctx, account, id); err != nil {
		return nil, err
	}
	if d.Cards, err = r.Interactions.InteractionsForTurn(ctx, account, id); err != nil {
		return nil, err
	}
	if d.Journal, err = r.Journal.CommandsForTurn(ctx, account, id); err != nil {
		return nil, err
	}
	// The outbox has no account; the commands do, so only this account's rows are reached.
	for _, e := range d.Journal {
		rows, err := r.Outbox.OutboxForCommand(ctx, e.CommandID)
		if err != nil {
			return nil, err
		}
		d.Outbox = append(d.Outbox, rows...)
	}
	if d.Events, err = turnEvents(ctx, r.Events, account, d.Journal, after, limit); err != nil {
		return nil, err
	}
	return d, nil
}

// turnEvents reads the account's event stream after the cursor and keeps the events the given
// commands appended, until it has limit of them or reaches the end of the stream. The contract
// has no read of a turn's events, and needs none: this is a filter over ReadFrom, and the page's
// Next, the last event examined, resumes it exactly where it stopped.
func turnEvents(ctx context.Context, events turn.EventReader, account string, commands []turn.JournalEntry, after turn.Cursor, limit int) (turn.EventPage, error) {
	page := turn.EventPage{Events: []turn.Event{}, Next: after}
	if len(commands) == 0 {
		return page, nil // nothing appends an event but a command
	}
	mine := make(map[turn.ID]bool, len(commands))
	for _, e := range commands {
		mine[e.CommandID] = true
	}
	for {
		p, err := events.ReadFrom(ctx, account, page.Next, eventScanPage)
		if err != nil {
			return turn.EventPage{}, err
		}
		for _, e := range p.Events {
			page.Next = turn.After(e.Sequence)
			if mine[e.CommandID] {
				page.Events = append(page.Events, e)
				if len(page.Events) == limit {
					return page, nil
				}
			}
		}
		if len(p.Events) < eventScanPage {
			return page, nil // the end of the stream, for now
		}
	}
}

func printTurnDetail(out io.Writer, d *turnDetail, after turn.Cursor, limit int) error {
	u := d.Turn.User
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("turn", u.Input.TurnID.String())
	row("conversation", u.Input.ConversationID.String())
	row("account", u.AccountID())
	row("user", dash(u.Input.Actor.UserID))
	row("received", stamp(u.ReceivedAt))
	row("phase", fmt.Sprintf("%s (since %s)", d.Phase.Phase, stamp(d.Phase.UpdatedAt)))
	row("text", clip(singleLine(u.Input.Text), 200))
	if a := d.Turn.Assistant; a != nil {
		row("answer", fmt.Sprintf("%d block(s), done: %t", len(a.Blocks), a.Done))
	} else {
		row("answer", "-")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\ncards (%d)\n", len(d.Cards))
	for _, c := range d.Cards {
		role := "created by this turn"
		if c.ResolvedByTurn == u.Input.TurnID {
			role = "answered by this turn"
		}
		fmt.Fprintf(out, "  %s  (%s)\n", cardLine(c), role)
	}
	fmt.Fprintf(out, "\njournal (%d)\n", len(d.Journal))
	for _, e := range d.Journal {
		outcome := ""
		if e.Result != nil {
			outcome = "  outcome " + string(e.Result.Kind)
		}
		fmt.Fprintf(out, "  %s  %s  %s  case %s/%s@%d  key %s%s\n", e.CommandID, e.Status, e.CommandType,
			e.CaseRef.Workflow, e.CaseRef.CaseID, e.CaseRef.ExpectedRevision, e.IdempotencyKey, outcome)
	}
	fmt.Fprintf(out, "\noutbox (%d)\n", len(d.Outbox))
	for _, o := range d.Outbox {
		failure := ""
		if o.LastFailure != "" {
			failure = "  last failure " + o.LastFailure
		}
		fmt.Fprintf(out, "  %s  -> %s  %s  attempts %d%s\n", o.Entry.OutboxID, o.Entry.Destination, o.Entry.Status,
			o.Entry.AttemptCount, failure)
	}
	fmt.Fprintf(out, "\nevents (%d after cursor %d)\n", len(d.Events.Events), after)
	for _, e := range d.Events.Events {
		payload := compactDoc(e.Payload, 80)
		if e.Redaction != nil {
			payload = fmt.Sprintf("(erased %s on the authority of %s)", stamp(e.Redaction.RedactedAt), e.Redaction.Authority)
		}
		fmt.Fprintf(out, "  #%d  %s  %s/%s@%d  %s  %s\n", e.Sequence, e.EventID, e.CaseKey.Workflow, e.CaseKey.CaseID,
			e.CaseRevision, e.EventType, payload)
	}
	if len(d.Events.Events) == limit {
		fmt.Fprintf(out, "more: --after %d\n", d.Events.Next)
	}
	return nil
}

func cardLine(c turn.InteractionRecord) string {
	it := c.Interaction
	blocking := ""
	if it.Blocking {
		blocking = "  blocking"
	}
	return fmt.Sprintf("%s  %s  %s%s  case %s/%s@%d  %q  created %s", it.ID, it.Kind, it.Status, blocking,
		it.CaseRef.Workflow, it.CaseRef.CaseID, it.CaseRef.ExpectedRevision, clip(singleLine(it.Payload.Title), 40), stamp(it.CreatedAt))
}

func newTurnsErase() *cobra.Command {
	var (
		f         turnFlags
		event     string
		authority string
	)
	cmd := &cobra.Command{
		Use:   "erase --store <sqlite path | postgres URL> --account <account> --event <event-id> --authority <who>",
		Short: "Erase an event's payload in place, recording on whose authority",
		Long: `erase replaces the payload of one of the account's events with JSON null and records when and on
whose authority (an erasure request's reference, say). The event keeps its id, type,
sequence, revision and command, and its place in every read. Erasing an erased event changes
nothing and prints the first record, whatever --authority says, so a retried erasure is safe.
It prints the redaction record; --json prints it as JSON.`,
		Args: exactArgs(0, "no arguments (the event is --event)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if event == "" || authority == "" {
				return usageError{errors.New("--event and --authority are both required")}
			}
			id, err := parseID("--event", event)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			s, closer, err := f.open(ctx)
			if err != nil {
				return err
			}
			defer closer.Close()
			r, err := s.Events.RedactPayload(ctx, f.account, id, authority)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if f.asJSON {
				return writeJSON(out, map[string]any{"event_id": id, "redaction": r})
			}
			fmt.Fprintf(out, "event %s: payload erased at %s on the authority of %s\n", id, stamp(r.RedactedAt), r.Authority)
			return nil
		},
	}
	f.register(cmd, "print the redaction record as JSON")
	cmd.Flags().StringVar(&event, "event", "", "id of the event whose payload to erase (required)")
	cmd.Flags().StringVar(&authority, "authority", "", "who or what asked for the erasure, recorded with it (required)")
	return cmd
}

// compactDoc prints a document on one line (compacted JSON has no raw line break), cut to at
// most n characters.
func compactDoc(raw json.RawMessage, n int) string {
	if len(raw) == 0 {
		return "null"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return clip(singleLine(string(raw)), n)
	}
	return clip(b.String(), n)
}

// clip cuts s to at most n characters, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// singleLine folds every run of white space, line breaks included, into one space.
func singleLine(s string) string { return strings.Join(strings.Fields(s), " ") }
