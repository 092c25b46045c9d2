package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead"
	"github.com/steadhq/stead/bulk"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/cli/backend"
	"github.com/steadhq/stead/cli/internal/telemetry"
	"github.com/steadhq/stead/otelstead"
	"github.com/steadhq/stead/worker"
)

func (a *app) newRun() *cobra.Command {
	var (
		sf        storeFlags
		defs      []string
		workers   int
		batch     int
		batchWait time.Duration
		depth     int
		sharedTx  bool
		name      string
		logLevel  string
		logJSON   bool
		noNotify  bool
		trace     bool
		prioShare float64
		prioMin   int
		metrics   string
		otlp      string
		sample    float64
		noSched   bool
	)
	cmd := &cobra.Command{
		Use:   "run --store <sqlite path | postgres URL> --definition <file> [--workers N]",
		Short: "Run workers until interrupted",
		Long: `run starts a worker on the store: it claims events, steps the executions, commits, relays
spawned children, emitted events and due timers, and delivers what crashed workers left behind.
It fires the store's schedules too (stead schedule; --no-schedules turns that off), after
creating or updating those the definitions declare ("schedules:" in their YAML).
SIGINT or SIGTERM stops it gracefully: it stops claiming, finishes the steps in flight and exits.
Run as many workers on one database as you like (on SQLite: processes on one host).

--metrics-addr serves the worker's metrics for Prometheus at /metrics; --otlp-endpoint sends
traces and metrics over OTLP/HTTP (the OTEL_EXPORTER_OTLP_* variables tune it). Without either,
nothing is recorded. --trace-sample keeps that share of the traces (default 1, all of them): a
span whose parent is known follows its parent's decision, so an order's trace is kept or dropped
whole across hosts, and a root span (a worker's batch, a send without a trace) is kept for that
share of trace ids. Metrics count every step whatever the sample.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			level, err := parseLevel(logLevel)
			if err != nil {
				return err
			}
			// Checked before the store is opened, so that a bad flag creates no database file.
			if !(prioShare >= 0 && prioShare <= 1) {
				return usageError{fmt.Errorf("--priority-share %v: want a number from 0 to 1", prioShare)}
			}
			if prioMin < 1 || prioMin > stead.MaxPriority {
				return usageError{fmt.Errorf("--priority-threshold %d: want 1 to %d", prioMin, stead.MaxPriority)}
			}
			sampler, err := telemetry.Sampler(sample)
			if err != nil {
				return usageError{err}
			}
			var opts []chart.Option
			if trace {
				opts = append(opts, chart.WithTrace())
			}
			cat, err := a.load(defs, opts...)
			if err != nil {
				return err
			}
			// A worker that cannot run one of its definitions would fail its executions one
			// by one: refuse before opening the store.
			machines, err := cat.runnable()
			if err != nil {
				return err
			}
			if len(machines) == 0 {
				return usageError{fmt.Errorf("no definition to run: give --definition <file>, or compile some into this binary (cli.Config.Definitions)")}
			}
			ctx := cmd.Context()
			// The store and the transport share the pool: a claim loop may hold a connection on
			// each side, and the relay and the timer sweep need a few more.
			b, err := sf.openWith(ctx, backend.Options{NoNotify: noNotify, MaxConns: int32(2*max(workers, 1) + 4)})
			if err != nil {
				return err
			}
			defer b.Close()
			bulk.Register(machines, b.Store, b.Transport, bulk.Options{}) // every worker carries out bulk jobs
			// One transaction is the default: on PostgreSQL the shared transaction, from the claim
			// to the acks; on SQLite the finisher, each round's commit, publish and acks (a
			// transaction from the claim would hold the file's one write lock while actions run).
			// Either acks a message if and only if its step lands, and is the faster mode.
			shared, err := b.SharedTx(sharedTx && b.Kind == "postgres")
			if err != nil {
				return err
			}
			fin, err := b.Finisher(sharedTx)
			if err != nil {
				return err
			}
			hopts := &slog.HandlerOptions{Level: level}
			var h slog.Handler = slog.NewTextHandler(os.Stderr, hopts)
			if logJSON {
				h = slog.NewJSONHandler(os.Stderr, hopts)
			}
			log := slog.New(h)
			tel, err := telemetry.Setup(ctx, telemetry.Options{MetricsAddr: metrics, OTLPEndpoint: otlp, Sampler: sampler, Logger: log})
			if err != nil {
				return err
			}
			defer func() {
				// Flush what is buffered even though ctx (a signal) is done.
				sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				defer cancel()
				if err := tel.Shutdown(sctx); err != nil {
					log.Warn("telemetry shutdown", slog.Any("err", err))
				}
			}()
			if reg, err := telemetry.ObservePool(tel.MeterProvider, b.Pool, "stead"); err != nil {
				return err
			} else if reg != nil {
				defer func() { _ = reg.Unregister() }()
			}
			wcfg := worker.Config{
				Store: b.Store, Transport: b.Transport, Machines: machines, Name: name,
				Concurrency: workers, BatchSize: batch, BatchWait: batchWait, GroupDepth: depth, SharedTx: shared, Finisher: fin,
				PriorityShare: prioShare, PriorityThreshold: prioMin,
				Logger: log,
			}
			if tel.TracerProvider != nil || tel.MeterProvider != nil {
				// Without either flag the worker has no Observer at all: nothing on its step path.
				obs, err := otelstead.New(otelstead.Config{TracerProvider: tel.TracerProvider, MeterProvider: tel.MeterProvider})
				if err != nil {
					return err
				}
				wcfg.Observer = obs
			}
			w, err := worker.New(wcfg)
			if err != nil {
				return err
			}
			if !noSched { // a schedule's tick fires once however many processes run this
				if err := applyDeclared(ctx, b, machines, log); err != nil {
					return err
				}
				stop, err := startSchedules(ctx, b, log)
				if err != nil {
					return err
				}
				defer stop()
			}
			return w.Run(ctx)
		},
	}
	sf.register(cmd)
	cmd.Flags().StringArrayVar(&defs, "definition", nil, definitionHelp)
	cmd.Flags().IntVar(&workers, "workers", worker.DefaultConcurrency, "concurrent claim loops")
	cmd.Flags().IntVar(&batch, "batch", worker.DefaultBatchSize, "messages per claim/commit/ack batch (1 turns batching off)")
	cmd.Flags().DurationVar(&batchWait, "batch-wait", worker.DefaultBatchWait, "how long a partial batch may wait for more messages")
	cmd.Flags().IntVar(&depth, "group-depth", worker.DefaultGroupDepth, "PostgreSQL with --shared-tx: queued events of one execution a batch applies in one commit (1: one)")
	cmd.Flags().BoolVar(&sharedTx, "shared-tx", true, "one transaction per batch: on PostgreSQL claim, commit, publish and ack; on SQLite commit, publish and ack (--shared-tx=false: one each)")
	cmd.Flags().BoolVar(&noNotify, "no-notify", false, "PostgreSQL only: publish and ack without NOTIFY (idle workers then poll once a second)")
	cmd.Flags().Float64Var(&prioShare, "priority-share", 0, "share of claims (0 to 1) that first look for executions at --priority-threshold or above")
	cmd.Flags().IntVar(&prioMin, "priority-threshold", 1, "lowest priority --priority-share favours")
	cmd.Flags().BoolVar(&trace, "trace", false, "record a trace step for every step (stead inspect shows it)")
	cmd.Flags().StringVar(&name, "name", "", "worker name in leases and logs (default host-pid)")
	cmd.Flags().StringVar(&metrics, "metrics-addr", "", "serve Prometheus metrics at /metrics on this address (\":9464\")")
	cmd.Flags().StringVar(&otlp, "otlp-endpoint", "", "send traces and metrics over OTLP/HTTP to this URL (\"http://localhost:4318\")")
	cmd.Flags().Float64Var(&sample, "trace-sample", 1, "share of traces kept, 0 to 1 (parent-based: a span follows its parent's decision)")
	cmd.Flags().BoolVar(&noSched, "no-schedules", false, "do not fire the store's schedules (stead schedule) from this process")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	cmd.Flags().BoolVar(&logJSON, "log-json", false, "log JSON lines instead of text")
	return cmd
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return l, usageError{fmt.Errorf("--log-level %q: want debug, info, warn or error", s)}
	}
	return l, nil
}
