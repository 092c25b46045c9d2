package chart

import (
	_ "embed"
	"errors"
)

//go:embed samples/order.yaml
var sampleOrderYAML []byte

//go:embed samples/delivery.yaml
var sampleDeliveryYAML []byte

//go:embed samples/carrier.yaml
var sampleCarrierYAML []byte

// SampleDelivery returns the sample delivery (samples/delivery.yaml), which invokes the sample
// carrier (SampleCarrier) to book a slot; run both with a registry prepared by
// RegisterSampleActions. Its start data is {"order_id": "..."}.
func SampleDelivery() (*Definition, error) { return Parse("delivery.yaml", sampleDeliveryYAML) }

// SampleCarrier returns the sample carrier (samples/carrier.yaml): a selector whose action fails
// its first attempt and is retried.
func SampleCarrier() (*Definition, error) { return Parse("carrier.yaml", sampleCarrierYAML) }

// SampleOrderFlowYAML returns the source of the sample order flow (samples/order.yaml).
func SampleOrderFlowYAML() []byte { return append([]byte(nil), sampleOrderYAML...) }

// SampleOrderFlow returns the sample order flow: a payment step with a timeout, fulfilment as
// two parallel regions (packing and invoicing), and failure paths. Run it with a registry
// prepared by RegisterSampleActions; the start data's "outcome" key picks the path (see
// samples/order.yaml).
func SampleOrderFlow() (*Definition, error) {
	return Parse("order.yaml", sampleOrderYAML)
}

// RegisterSampleActions registers the actions and guards of the sample order flow. They are
// deterministic: every decision comes from the context ("outcome", "amount", "order_id").
func RegisterSampleActions(reg *Registry) *Registry {
	reg.Action("request_payment", func(c ActionContext) (ActionResult, error) {
		switch c.String("outcome") {
		case "timeout":
			c.SetBool("payment_requested", true)
			return ActionResult{}, nil
		case "declined":
			return ActionResult{Send: []Message{{Kind: "payment_declined"}}}, nil
		}
		return ActionResult{Send: []Message{{Kind: "payment_received", Data: map[string]any{"amount": c.Float("amount")}}}}, nil
	})
	reg.Guard("amount_ok", func(c GuardContext) bool {
		a := c.Float("amount")
		return a > 0 && a <= 10000
	})
	reg.Action("capture_payment", func(c ActionContext) (ActionResult, error) {
		if c.String("outcome") == "error" {
			return ActionResult{}, errors.New("card processor refused the capture")
		}
		c.SetFloat("captured", c.Float("amount"))
		c.SetString("capture_key", c.Key())
		return ActionResult{}, nil
	})
	reg.Action("pick_items", func(c ActionContext) (ActionResult, error) {
		switch c.String("outcome") {
		case "out_of_stock":
			return ActionResult{Send: []Message{{Kind: "out_of_stock"}}}, nil
		case "crash":
			return ActionResult{}, errors.New("picking robot crashed")
		}
		c.SetBool("packed", true)
		return ActionResult{Send: []Message{{Kind: "picked"}}}, nil
	})
	reg.Action("issue_invoice", func(c ActionContext) (ActionResult, error) {
		c.SetString("invoice_no", "INV-"+c.String("order_id"))
		return ActionResult{Send: []Message{{Kind: "invoiced"}}}, nil
	})
	reg.Selector("book_carrier", []string{"booked", "full"}, func(c ActionContext) (ActionResult, error) {
		if c.Attempt < 2 {
			return ActionResult{}, errors.New("the carrier's booking API timed out")
		}
		c.SetString("tracking", "TRK-"+c.String("order_id"))
		c.SetInt("attempts", int64(c.Attempt))
		return ActionResult{Label: "booked"}, nil
	})
	reg.Action("refund_payment", func(c ActionContext) (ActionResult, error) {
		c.SetFloat("refunded", c.Float("captured"))
		return ActionResult{Send: []Message{{Kind: "refunded"}}}, nil
	})
	return reg
}
