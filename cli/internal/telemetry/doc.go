// Package telemetry wires the OpenTelemetry SDK for the stead command: a Prometheus endpoint
// and OTLP over HTTP for metrics, OTLP over HTTP for traces, and the gauges of a pgx pool. The
// library itself uses only the OpenTelemetry API (worker.Config's providers); the SDK and the
// exporters live here, under the command.
package telemetry
