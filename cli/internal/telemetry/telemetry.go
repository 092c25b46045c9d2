package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/dbconv"
	"go.opentelemetry.io/otel/trace"
)

// Options says what to export. With neither address set, Setup returns nil providers: the worker
// then records nothing.
type Options struct {
	// MetricsAddr, when set, serves the metrics in the Prometheus text format at /metrics on
	// this address (":9464").
	MetricsAddr string
	// OTLPEndpoint, when set, sends traces and metrics over OTLP/HTTP to this base URL
	// ("http://collector:4318"): to /v1/traces and /v1/metrics under it.
	OTLPEndpoint string
	// Sampler decides which traces are recorded (default: every one, parent-based: the SDK's
	// default). Sampler(ratio) makes the one of stead run's --trace-sample.
	Sampler sdktrace.Sampler
	// ServiceName is the service.name of the resource (default "stead").
	ServiceName string
	// Logger receives the endpoint's address and export failures.
	Logger *slog.Logger
}

// Telemetry is what Setup made: the providers to give the worker, and Shutdown.
type Telemetry struct {
	TracerProvider trace.TracerProvider // nil without an OTLP endpoint
	MeterProvider  metric.MeterProvider // nil without a metrics address or OTLP endpoint
	// Addr is the address the Prometheus endpoint listens on ("" without one), with the port
	// the system chose for ":0".
	Addr string

	shutdown []func(context.Context) error
}

// Setup builds the providers and starts the Prometheus endpoint. The address is bound before
// Setup returns, so a taken port is an error here rather than a log line later.
func Setup(ctx context.Context, o Options) (*Telemetry, error) {
	t := &Telemetry{}
	if o.MetricsAddr == "" && o.OTLPEndpoint == "" {
		return t, nil
	}
	if o.ServiceName == "" {
		o.ServiceName = "stead"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	res := resource.NewSchemaless(semconv.ServiceName(o.ServiceName))
	var readers []sdkmetric.Option
	if o.MetricsAddr != "" {
		reg := prometheus.NewRegistry()
		exp, err := otelprom.New(otelprom.WithRegisterer(reg))
		if err != nil {
			return nil, fmt.Errorf("prometheus exporter: %w", err)
		}
		readers = append(readers, sdkmetric.WithReader(exp))
		ln, err := net.Listen("tcp", o.MetricsAddr)
		if err != nil {
			return nil, fmt.Errorf("--metrics-addr %s: %w", o.MetricsAddr, err)
		}
		t.Addr = ln.Addr().String()
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		served := make(chan struct{})
		go func() {
			defer close(served)
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				o.Logger.Error("metrics endpoint stopped", slog.Any("err", err))
			}
		}()
		t.shutdown = append(t.shutdown, func(ctx context.Context) error {
			err := srv.Shutdown(ctx)
			<-served
			return err
		})
		o.Logger.Info("serving metrics", slog.String("addr", t.Addr), slog.String("path", "/metrics"))
	}
	if o.OTLPEndpoint != "" {
		base, err := url.Parse(o.OTLPEndpoint)
		if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
			return nil, errors.Join(fmt.Errorf("--otlp-endpoint %q: want an http or https URL", o.OTLPEndpoint), t.Shutdown(ctx))
		}
		// The endpoint is the collector's base URL, as OTEL_EXPORTER_OTLP_ENDPOINT is: each signal
		// goes to its own path under it.
		signal := func(path string) string {
			u := *base
			u.Path = strings.TrimSuffix(u.Path, "/") + path
			return u.String()
		}
		mexp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(signal("/v1/metrics")))
		if err != nil {
			return nil, errors.Join(fmt.Errorf("--otlp-endpoint %s: %w", o.OTLPEndpoint, err), t.Shutdown(ctx))
		}
		readers = append(readers, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp)))
		texp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(signal("/v1/traces")))
		if err != nil {
			return nil, errors.Join(fmt.Errorf("--otlp-endpoint %s: %w", o.OTLPEndpoint, err), t.Shutdown(ctx))
		}
		topts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(texp), sdktrace.WithResource(res)}
		if o.Sampler != nil {
			topts = append(topts, sdktrace.WithSampler(o.Sampler))
		}
		tp := sdktrace.NewTracerProvider(topts...)
		t.TracerProvider = tp
		t.shutdown = append(t.shutdown, tp.Shutdown)
	}
	mp := sdkmetric.NewMeterProvider(append(readers, sdkmetric.WithResource(res))...)
	t.MeterProvider = mp
	t.shutdown = append(t.shutdown, mp.Shutdown)
	return t, nil
}

// Sampler returns the head sampler of --trace-sample: a span whose parent is known follows its
// parent's decision (one order's trace is kept or dropped whole, across hosts, as its first span
// decided), and a root span — a client's send, a worker's batch — is kept for that share of trace
// ids (TraceIDRatioBased). ratio must be in [0, 1]: 1 keeps every trace, 0 none.
func Sampler(ratio float64) (sdktrace.Sampler, error) {
	if !(ratio >= 0 && ratio <= 1) { // NaN too
		return nil, fmt.Errorf("--trace-sample %v: want a ratio from 0 to 1 (1: every trace, 0: none)", ratio)
	}
	return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio)), nil
}

// Shutdown flushes the exporters and stops the endpoint, last made first.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	var errs []error
	for i := len(t.shutdown) - 1; i >= 0; i-- {
		errs = append(errs, t.shutdown[i](ctx))
	}
	t.shutdown = nil
	return errors.Join(errs...)
}

// ObservePool registers the semantic conventions' connection gauges of a pgx pool
// (db.client.connection.count by state, db.client.connection.max) and the count of acquires
// that had to wait for a connection (stead.db.client.connection.waits), read from Stat at each
// collection. A nil meter provider or pool registers nothing.
func ObservePool(mp metric.MeterProvider, pool *pgxpool.Pool, name string) (metric.Registration, error) {
	if mp == nil || pool == nil {
		return nil, nil
	}
	m := mp.Meter("github.com/steadhq/stead/cli")
	count, err := dbconv.NewClientConnectionCountObservable(m)
	if err != nil {
		return nil, err
	}
	maxConns, err := dbconv.NewClientConnectionMaxObservable(m)
	if err != nil {
		return nil, err
	}
	waits, err := m.Int64ObservableCounter("stead.db.client.connection.waits", metric.WithUnit("{acquire}"),
		metric.WithDescription("Acquires from the pool that found no idle connection and waited."))
	if err != nil {
		return nil, err
	}
	poolName := count.AttrClientConnectionPoolName(name)
	used := metric.WithAttributes(poolName, count.AttrClientConnectionState(dbconv.ClientConnectionStateUsed))
	idle := metric.WithAttributes(poolName, count.AttrClientConnectionState(dbconv.ClientConnectionStateIdle))
	named := metric.WithAttributes(poolName)
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := pool.Stat()
		o.ObserveInt64(count.Inst(), int64(s.AcquiredConns()), used)
		o.ObserveInt64(count.Inst(), int64(s.IdleConns()), idle)
		o.ObserveInt64(maxConns.Inst(), int64(s.MaxConns()), named)
		o.ObserveInt64(waits, s.EmptyAcquireCount(), named)
		return nil
	}, count.Inst(), maxConns.Inst(), waits)
}
