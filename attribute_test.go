package stead

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseAttributeFilter(t *testing.T) {
	t0 := time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want AttrFilter
	}{
		{"customer=42", Where("customer", AttrEq, AttrInt(42))},
		{" customer == -7 ", Where("customer", AttrEq, AttrInt(-7))},
		{"amount>100", Where("amount", AttrGt, AttrInt(100))},
		{"amount >= 100", Where("amount", AttrGe, AttrInt(100))},
		{"amount<9.5", Where("amount", AttrLt, AttrString("9.5"))},
		{"amount<=0", Where("amount", AttrLe, AttrInt(0))},
		{"paid=true", Where("paid", AttrEq, AttrBool(true))},
		{"paid=false", Where("paid", AttrEq, AttrBool(false))},
		{"due<2026-12-24T00:00:00Z", Where("due", AttrLt, AttrTime(t0))},
		{"due>=2026-12-24T01:00:00+01:00", Where("due", AttrGe, AttrTime(t0))},
		{"region=eu-west", Where("region", AttrEq, AttrString("eu-west"))},
		{"customer=\"42\"", Where("customer", AttrEq, AttrString("42"))},
		{"note=\"a \\\"b\\\" = c\"", Where("note", AttrEq, AttrString(`a "b" = c`))},
		{"name=Zoë Müller", Where("name", AttrEq, AttrString("Zoë Müller"))},
		{"tier in (gold, \"sil,ver\")", Where("tier", AttrIn, AttrString("gold"), AttrString("sil,ver"))},
		{"n IN(1,2 , 3)", Where("n", AttrIn, AttrInt(1), AttrInt(2), AttrInt(3))},
		{"order.kind-v2=x", Where("order.kind-v2", AttrEq, AttrString("x"))},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseAttributeFilter(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tt.want.String() || got.Values[0].Kind() != tt.want.Values[0].Kind() {
				t.Fatalf("got %s (%s), want %s (%s)", got, got.Values[0].Kind(), tt.want, tt.want.Values[0].Kind())
			}
			// What String writes parses back to the same condition.
			again, err := ParseAttributeFilter(got.String())
			if err != nil || again.String() != got.String() {
				t.Fatalf("round trip of %s: %s, %v", got, again, err)
			}
		})
	}
}

func TestParseAttributeFilterRefuses(t *testing.T) {
	for _, in := range []string{
		"", "=42", "9lives=1", "customer", "customer 42", "customer=", "customer!=4",
		"a\x00b=1", "customer=\"42", "customer=\"a\x00\"", "customer=\xff",
		"paid>true", "tier in gold", "tier in ()", "tier in (1, \"x\")", "tier in (1,,2)",
		"tier in (" + strings.Repeat("1,", MaxAttrIn) + "1)",
		"k=" + strings.Repeat("x", MaxAttrStringLen+1),
		strings.Repeat("k", MaxAttrKeyLen+1) + "=1",
	} {
		t.Run(in, func(t *testing.T) {
			if f, err := ParseAttributeFilter(in); !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseAttributeFilter(%q) = %s, %v; want ErrInvalid", in, f, err)
			}
		})
	}
}

func TestAttrFilterMatches(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	attrs := map[string]AttrValue{"n": AttrInt(42), "s": AttrString("m"), "t": AttrTime(t0), "b": AttrBool(true)}
	tests := []struct {
		f    AttrFilter
		want bool
	}{
		{Where("n", AttrEq, AttrInt(42)), true},
		{Where("n", AttrEq, AttrString("42")), false}, // another kind never matches
		{Where("n", AttrLt, AttrInt(42)), false},
		{Where("n", AttrLe, AttrInt(42)), true},
		{Where("n", AttrGt, AttrInt(41)), true},
		{Where("n", AttrGe, AttrInt(43)), false},
		{Where("n", AttrIn, AttrInt(1), AttrInt(42)), true},
		{Where("s", AttrGt, AttrString("M")), true}, // byte-wise: 'm' > 'M'
		{Where("s", AttrLt, AttrString("ma")), true},
		{Where("t", AttrGe, AttrTime(t0)), true},
		{Where("t", AttrLt, AttrTime(t0)), false},
		{Where("b", AttrEq, AttrBool(true)), true},
		{Where("b", AttrEq, AttrInt(1)), false},
		{Where("missing", AttrEq, AttrInt(42)), false},
	}
	for _, tt := range tests {
		if got := tt.f.Matches(attrs); got != tt.want {
			t.Errorf("%s: Matches = %v, want %v", tt.f, got, tt.want)
		}
	}
}

func TestAttributesInTheRecord(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	e := &Execution{ID: "e", DefinitionID: "d", Status: StatusRunning, Attributes: map[string]AttrValue{
		"s": AttrString("x<y"), "i": AttrInt(-3), "t": AttrTime(t0), "b": AttrBool(false)}}
	rec, err := EncodeExecution(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `"attributes":{"b":{"b":false},"i":{"i":-3},"s":{"s":"x\u003cy"},"t":{"t":"2026-01-02T03:04:05.000006Z"}}`
	if !bytes.Contains(rec, []byte(want)) {
		t.Fatalf("record %s lacks %s", rec, want)
	}
	back, err := DecodeExecution(rec)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range e.Attributes {
		if got := back.Attributes[k]; got != v {
			t.Fatalf("attribute %s: got %v (%s), want %v (%s)", k, got, got.Kind(), v, v.Kind())
		}
	}
	var v AttrValue
	for _, bad := range []string{`{}`, `{"s":"a","i":1}`, `{"x":1}`, `{"i":"1"}`, `[]`} {
		if err := json.Unmarshal([]byte(bad), &v); err == nil {
			t.Errorf("Unmarshal(%s) = %v, want an error", bad, v)
		}
	}
}

func TestPrepareWriteAttributes(t *testing.T) {
	base := func(v int64, attrs map[string]AttrValue) *Execution {
		return &Execution{ID: "e", DefinitionID: "d", Status: StatusRunning, Version: v, Attributes: attrs}
	}
	tests := []struct {
		name    string
		exe     *Execution
		changes map[string]AttrValue
		want    map[string]AttrValue
		replace bool
	}{
		{"insert without", base(0, nil), nil, nil, false},
		{"insert with", base(0, map[string]AttrValue{"a": AttrInt(1)}), nil, map[string]AttrValue{"a": AttrInt(1)}, true},
		{"update without changes", base(3, map[string]AttrValue{"a": AttrInt(1)}), nil, map[string]AttrValue{"a": AttrInt(1)}, false},
		{"set and delete", base(3, map[string]AttrValue{"a": AttrInt(1), "b": AttrBool(true)}),
			map[string]AttrValue{"a": AttrString("z"), "b": {}, "c": AttrInt(9)},
			map[string]AttrValue{"a": AttrString("z"), "c": AttrInt(9)}, true},
		{"delete the last", base(3, map[string]AttrValue{"a": AttrInt(1)}), map[string]AttrValue{"a": {}}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fmt.Sprint(tt.exe.Attributes)
			w, err := PrepareWrite(tt.exe, Bundle{Attributes: tt.changes})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(w.Execution.Attributes) != fmt.Sprint(tt.want) || w.ReplaceAttributes != tt.replace {
				t.Fatalf("attributes %v, replace %v; want %v, %v", w.Execution.Attributes, w.ReplaceAttributes, tt.want, tt.replace)
			}
			if fmt.Sprint(tt.exe.Attributes) != before {
				t.Fatalf("the caller's attributes changed: %v", tt.exe.Attributes)
			}
		})
	}
}

func TestPrepareWriteRefusesAttributes(t *testing.T) {
	many := map[string]AttrValue{}
	for i := range MaxAttributes + 1 {
		many[fmt.Sprintf("k%d", i)] = AttrInt(int64(i))
	}
	tests := []struct {
		name    string
		attrs   map[string]AttrValue
		changes map[string]AttrValue
	}{
		{"too many", many, nil},
		{"too many after the changes", nil, many},
		{"bad key", map[string]AttrValue{"a b": AttrInt(1)}, nil},
		{"empty key", map[string]AttrValue{"": AttrInt(1)}, nil},
		{"zero value stored", map[string]AttrValue{"a": {}}, nil},
		{"nul in a value", map[string]AttrValue{"a": AttrString("x\x00")}, nil},
		{"invalid UTF-8", nil, map[string]AttrValue{"a": AttrString("\xff")}},
		{"oversized value", map[string]AttrValue{"a": AttrString(strings.Repeat("x", MaxAttrStringLen+1))}, nil},
		{"zero time", map[string]AttrValue{"a": AttrTime(time.Time{})}, nil},
		{"year 10000", nil, map[string]AttrValue{"a": AttrTime(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))}},
		{"bad key in a change", nil, map[string]AttrValue{"-a": AttrInt(1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &Execution{ID: "e", DefinitionID: "d", Status: StatusRunning, Attributes: tt.attrs}
			if _, err := PrepareWrite(e, Bundle{Attributes: tt.changes}); !errors.Is(err, ErrInvalid) {
				t.Fatalf("PrepareWrite = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestPrepareListAttributes(t *testing.T) {
	refused := []AttrFilter{
		Where("a b", AttrEq, AttrInt(1)),
		Where("a", "!=", AttrInt(1)),
		Where("a", AttrEq),
		Where("a", AttrEq, AttrInt(1), AttrInt(2)),
		Where("a", AttrIn),
		Where("a", AttrIn, AttrInt(1), AttrString("1")),
		Where("a", AttrGt, AttrBool(true)),
		Where("a", AttrEq, AttrValue{}),
		Where("a", AttrEq, AttrString("\x00")),
		Where("a", AttrLt, AttrTime(time.Time{})),
	}
	for _, f := range refused {
		if _, err := prepareList(ListFilter{Attributes: []AttrFilter{f}}); !errors.Is(err, ErrInvalid) {
			t.Errorf("%#v: %v, want ErrInvalid", f, err)
		}
	}
	many := make([]AttrFilter, MaxAttributes+1)
	for i := range many {
		many[i] = Where("a", AttrGt, AttrInt(int64(i)))
	}
	if _, err := prepareList(ListFilter{Attributes: many}); !errors.Is(err, ErrInvalid) {
		t.Errorf("%d conditions: %v, want ErrInvalid", len(many), err)
	}
	// Order of conditions and of a set's values, and repeats in a set, do not change the filter:
	// a cursor of one opens under the other.
	a, err := prepareList(ListFilter{Attributes: []AttrFilter{
		Where("b", AttrIn, AttrInt(3), AttrInt(1), AttrInt(3)), Where("a", AttrEq, AttrString("x"))}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := prepareList(ListFilter{Attributes: []AttrFilter{
		Where("a", AttrEq, AttrString("x")), Where("b", AttrIn, AttrInt(1), AttrInt(3))}})
	if err != nil {
		t.Fatal(err)
	}
	if after, err := b.open(testKey, a.next(testKey, "e1")); err != nil || after != "e1" {
		t.Fatalf("open = %q, %v", after, err)
	}
	// Another value, kind or comparison is another filter.
	for _, f := range []AttrFilter{
		Where("a", AttrEq, AttrString("y")), Where("a", AttrEq, AttrInt(1)), Where("a", AttrGe, AttrString("x")),
	} {
		c, err := prepareList(ListFilter{Attributes: []AttrFilter{f, Where("b", AttrIn, AttrInt(1), AttrInt(3))}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.open(testKey, a.next(testKey, "e1")); !errors.Is(err, ErrInvalid) {
			t.Fatalf("%s: a cursor of another filter opened: %v", f, err)
		}
	}
}

// TestCanonicalFilterUnchangedWithoutAttributes holds the canonical bytes of filters without
// attributes to those before attributes existed, so that their cursors still open.
func TestCanonicalFilterUnchangedWithoutAttributes(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		f    ListFilter
		want string
	}{
		{ListFilter{}, "000000"},
		{ListFilter{DefinitionID: "d", Statuses: []Status{StatusDone}, RootsOnly: true}, "01640104646f6e6501"},
		{ListFilter{IDPrefix: "x", Created: TimeRange{From: t0}}, "000000770178018080b9c4d285dd060000000000"},
	} {
		l, err := prepareList(tt.f)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%x", l.filter); got != tt.want {
			t.Errorf("%+v: canonical bytes %s, want %s", tt.f, got, tt.want)
		}
	}
}

// TestCheckAttribute: one attribute is checked as at create, the zero value refused.
func TestCheckAttribute(t *testing.T) {
	for _, tc := range []struct {
		key string
		v   AttrValue
		ok  bool
	}{
		{"customer", AttrInt(42), true},
		{"due", AttrTime(time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC)), true},
		{"note", AttrString(strings.Repeat("x", MaxAttrStringLen)), true},
		{"note", AttrString(strings.Repeat("x", MaxAttrStringLen+1)), false},
		{"note", AttrString("a\x00b"), false},
		{"due", AttrTime(time.Time{}), false},
		{"9lives", AttrBool(true), false},
		{"", AttrBool(true), false},
		{"gone", AttrValue{}, false},
	} {
		err := CheckAttribute(tc.key, tc.v)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("CheckAttribute(%q, %v) = %v, want ok %v", tc.key, tc.v, err, tc.ok)
		}
	}
}

// TestAttrFromColumns reads back every kind from the columns the SQL backends store it in.
func TestAttrFromColumns(t *testing.T) {
	for _, v := range []AttrValue{AttrString("eu"), AttrInt(-7), AttrBool(true),
		AttrBool(false), AttrTime(time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC))} {
		got, err := AttrFromColumns(v.Kind(), v.Str(), v.Num())
		if err != nil || got != v {
			t.Errorf("AttrFromColumns(%s) = %v, %v", v.Kind(), got, err)
		}
	}
	if _, err := AttrFromColumns(9, "", 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown kind: %v, want ErrInvalid", err)
	}
}
