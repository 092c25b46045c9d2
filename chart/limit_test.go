package chart_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
)

const limitBase = `
initial: a
states:
  a: {on: {go: b}}
  b: {final: success}
`

func TestLimitParses(t *testing.T) {
	def, err := chart.Parse("orders", []byte(limitBase+`
limit: {key: context.customer, concurrency: 2, rate: 100, per: 1m}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := chart.Limit{Key: "context.customer", Concurrency: 2, Rate: 100, Per: time.Minute}
	got := *def.Limit
	got.Pos = chart.Pos{}
	if got != want {
		t.Fatalf("Limit = %+v, want %+v", got, want)
	}
	if s := def.Limit.String(); s != "per context.customer, concurrency 2, rate 100 per 1m0s" {
		t.Errorf("String() = %q", s)
	}
}

func TestLimitRefused(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"nothing_set", `limit: {key: context.c}`, "neither concurrency nor rate"},
		{"bad_source", `limit: {key: label.c, concurrency: 1}`, "must be context.<name> or attribute.<name>"},
		{"no_name", `limit: {key: "context.", concurrency: 1}`, "must be context.<name>"},
		{"negative", `limit: {concurrency: -1}`, "concurrency -1 outside"},
		{"too_many", `limit: {concurrency: 2000000}`, "outside 0..1048576"},
		{"rate_without_per", `limit: {rate: 5}`, "needs per"},
		{"per_without_rate", `limit: {concurrency: 1, per: 1s}`, "without a rate"},
		{"per_too_long", `limit: {rate: 1, per: 1000h}`, "needs per"},
		{"nanoseconds", `limit: {rate: 1, per: 1ns}`, "finer than a microsecond"},
		{"not_a_number", `limit: {concurrency: many}`, "expected a whole number"},
		{"bad_duration", `limit: {rate: 1, per: soon}`, "not a duration"},
		{"unknown_key", `limit: {concurrency: 1, burst: 3}`, "unknown key \"burst\""},
		{"undeclared_context_key", "context: {customer: string}\nlimit: {key: context.tenant, concurrency: 1}", "does not declare"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := chart.Parse("orders", []byte(limitBase+tc.yaml+"\n"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestLimitBuilder(t *testing.T) {
	b := chart.New("orders").Initial("a").Limit(chart.Limit{Concurrency: 3})
	b.State("a").On("go", "b")
	b.State("b").Final("success")
	def, err := b.Definition()
	if err != nil {
		t.Fatal(err)
	}
	if def.Limit == nil || def.Limit.Concurrency != 3 {
		t.Fatalf("Limit = %+v", def.Limit)
	}
}

func TestFlowKey(t *testing.T) {
	attrs := map[string]stead.AttrValue{"tenant": stead.AttrString("acme"), "n": stead.AttrInt(7)}
	long := strings.Repeat("x", 600)
	for _, tc := range []struct {
		name, key, def, ctx, want string
	}{
		{"definition", "", "orders@3", `{}`, "orders"},
		{"context_string", "context.customer", "orders", `{"customer":"c-1"}`, "orders/customer=c-1"},
		{"context_number", "context.customer", "orders@2", `{"customer":42}`, "orders/customer=42"},
		{"context_missing", "context.customer", "orders", `{}`, "orders/customer="},
		{"context_null", "context.customer", "orders", `{"customer":null}`, "orders/customer="},
		{"context_not_object", "context.customer", "orders", ``, "orders/customer="},
		{"attribute", "attribute.tenant", "orders", `{}`, "orders/tenant=acme"},
		{"attribute_int", "attribute.n", "orders", `{}`, "orders/n=7"},
		{"attribute_missing", "attribute.region", "orders", `{}`, "orders/region="},
		{"long_value_hashed", "context.customer", "orders", `{"customer":"` + long + `"}`, "orders/customer#"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &chart.Limit{Key: tc.key, Concurrency: 1}
			got := l.FlowKey(tc.def, json.RawMessage(tc.ctx), attrs)
			if !strings.HasPrefix(got, tc.want) || (!strings.Contains(tc.want, "#") && got != tc.want) {
				t.Fatalf("FlowKey = %q, want %q", got, tc.want)
			}
			if len(got) > 512 {
				t.Fatalf("FlowKey is %d bytes", len(got))
			}
		})
	}
}
