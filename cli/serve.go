package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead/console"
)

func (a *app) newServe() *cobra.Command {
	var (
		sf       storeFlags
		addr     string
		token    string
		readOnly bool
		defs     []string
		poll     time.Duration
		certFile string
		keyFile  string
		turns    bool
	)
	cmd := &cobra.Command{
		Use:   "serve --store <sqlite path | postgres URL> [--addr 127.0.0.1:8080] [--token T] [--read-only] --definition <file>",
		Short: "Serve a web console: the executions, their live statecharts, and the control buttons",
		Long: `serve starts a web console over the store: the executions with their filters, counts and
paging; one execution's statechart with its active states highlighted, following it live; its
context, trace, timers, pending outbox, children and dead letter; and suspend, resume, cancel
and retry buttons (hidden with --read-only). With --turns, it shows the turn store too: an
account's conversations, and a turn with its cards, journal, outbox rows and events.

It listens on loopback unless told otherwise, and refuses an address other than loopback
without --token (or STEAD_CONSOLE_TOKEN): with a token, every request needs it, as
"Authorization: Bearer <token>" or through the login form. Off loopback, serve HTTPS
(--tls-cert, --tls-key) or put it behind a proxy that does. After stead demo:

  stead serve --store stead-demo.db`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if token == "" {
				token = os.Getenv("STEAD_CONSOLE_TOKEN")
			}
			// Checked before the store is opened, so that a refused address creates no file.
			if err := console.CheckAddr(addr, token); err != nil {
				return usageError{err}
			}
			if (certFile == "") != (keyFile == "") {
				return usageError{errors.New("--tls-cert and --tls-key go together")}
			}
			if poll < 100*time.Millisecond {
				return usageError{fmt.Errorf("--poll %v: want at least 100ms", poll)}
			}
			cat, err := a.load(defs)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			b, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer b.Close()
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			// Every definition read is drawn; the buttons that run one (retry) need its machine.
			cfg := console.Config{Store: b.Store, Machines: cat.machines, Definitions: cat.defs, Token: token,
				ReadOnly: readOnly, Poll: poll, Logger: log}
			if !readOnly {
				cfg.Transport = b.Transport
			}
			if turns {
				// Opened (and migrated) only when asked for: a database that keeps no turns
				// gets no turn tables from a console.
				s, err := b.Turns(ctx)
				if err != nil {
					return err
				}
				ro := s.ReadOnly()
				cfg.Turns = &ro
			}
			c, err := console.New(cfg)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			srv := &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
				BaseContext: func(net.Listener) context.Context { return ctx }}
			srv.RegisterOnShutdown(c.Close) // the live streams never go idle: end them
			scheme := "http"
			if certFile != "" {
				scheme = "https"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "stead console on %s://%s (store %s %s)\n", scheme, ln.Addr(), b.Kind, b.Where)
			served := make(chan error, 1)
			go func() {
				if certFile != "" {
					served <- srv.ServeTLS(ln, certFile, keyFile)
				} else {
					served <- srv.Serve(ln)
				}
			}()
			select {
			case err := <-served:
				return err
			case <-ctx.Done():
			}
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err = srv.Shutdown(sctx)
			c.Close()
			if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
				err = errors.Join(err, serr)
			}
			return err
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on (other than loopback needs --token)")
	cmd.Flags().StringVar(&token, "token", "", "require this token of every request (default $STEAD_CONSOLE_TOKEN)")
	cmd.Flags().BoolVar(&readOnly, "read-only", false, "hide the control buttons and refuse their requests")
	cmd.Flags().StringArrayVar(&defs, "definition", nil, definitionHelp)
	cmd.Flags().StringVar(&certFile, "tls-cert", "", "serve HTTPS with this certificate (PEM; with --tls-key): a token sent over plain HTTP off this host can be read on the way")
	cmd.Flags().StringVar(&keyFile, "tls-key", "", "the private key of --tls-cert (PEM)")
	cmd.Flags().DurationVar(&poll, "poll", console.DefaultPoll, "how often a live view reads its execution")
	cmd.Flags().BoolVar(&turns, "turns", false, "also show the turn store, read-only: conversations, turns, cards, journal, outbox and events (creates its tables if missing)")
	return cmd
}
