package worker

import (
	"testing"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/transport"
)

// TestRoute: the one decision of where an emitted event goes, which every end takes.
func TestRoute(t *testing.T) {
	t.Parallel()
	exe := &stead.Execution{ID: "p", DefinitionID: "d", Priority: 3}
	ev := func(kind string) stead.Event { return stead.Event{ID: "e", Kind: kind} }
	tests := []struct {
		name string
		emit stead.Emit
		want emitRoute
		msg  transport.Outgoing
	}{
		{"no target", stead.Emit{Event: ev("x")}, routeNowhere, transport.Outgoing{}},
		{"an event to another execution, at the emitter's priority", stead.Emit{Target: "c", Event: ev("x")}, routePublish,
			transport.Outgoing{Group: "c", Event: ev("x"), Priority: 3}},
		{"its own start (no limit: no flow)", stead.Emit{Target: "p", Event: ev(chart.KindStart)}, routePublish,
			transport.Outgoing{Group: "p", Event: ev(chart.KindStart), Priority: 3}},
		{"a command cascading to a child", stead.Emit{Target: "c", Event: ev(chart.KindSuspend)}, routeRelay, transport.Outgoing{}},
	}
	for _, tt := range tests {
		msg, got := route(nil, exe, tt.emit)
		if got != tt.want || msg.Group != tt.msg.Group || msg.Event.Kind != tt.msg.Event.Kind || msg.Priority != tt.msg.Priority || msg.Flow.Limited() {
			t.Errorf("%s: route %v %+v, want %v %+v", tt.name, got, msg, tt.want, tt.msg)
		}
		if routeOf(tt.emit) != tt.want {
			t.Errorf("%s: routeOf %v, want %v", tt.name, routeOf(tt.emit), tt.want)
		}
	}
	out, keep := inCommit(nil, nil, exe, []stead.Emit{
		{Event: ev("dropped")}, {Target: "c", Event: ev("x")}, {Target: "c", Event: ev(chart.KindSuspend)},
	})
	if len(out) != 1 || out[0].Group != "c" || len(keep) != 1 || keep[0].Event.Kind != chart.KindSuspend {
		t.Errorf("inCommit: published %+v, kept %+v; want the event to c published and the command kept", out, keep)
	}
}
