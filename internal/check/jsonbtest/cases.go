// Package jsonbtest is a table of JSON documents and whether PostgreSQL's jsonb stores them. It is
// shared by the unit test of check.JSON and by a test that casts every document on a live server,
// so that the rules and the server are proven to agree.
package jsonbtest

import "strings"

// Case is one document and whether PostgreSQL's jsonb stores it.
type Case struct {
	Name   string
	Doc    string
	Stored bool
}

// Cases returns the table: each rule of check.JSON beyond the grammar, on both sides of its limit.
func Cases() []Case {
	return []Case{
		{"surrogate pair", `"\ud800\udc00"`, true},
		{"last surrogate pair, upper case", `"\uDBFF\uDFFF"`, true},
		{"surrogate pair in a key", `{"\ud83d\ude00":1}`, true},
		{"escaped backslash before ud800", `"\\ud800"`, true},
		{"lone high surrogate", `"\ud800"`, false},
		{"lone high surrogate in a key", `{"\ud800":1}`, false},
		{"lone low surrogate", `"\udc00"`, false},
		{"low surrogate first", `"\udc00\ud800"`, false},
		{"high surrogate then a letter", `"\ud800x"`, false},
		{"high surrogate then a plain escape", `"\ud800\u0041"`, false},
		{"high surrogate then a one-letter escape", `"\ud800\n"`, false},
		{"two high surrogates", `"\ud800\ud800\udc00"`, false},
		{"nul escape", `"a\u0000b"`, false},
		{"escaped backslash before u0000", `"\\u0000"`, true},
		{"numbers inside a string are text", `"1e999999"`, true},
		{"plain number", `-12.5e3`, true},
		{"negative zero", `-0.0`, true},
		{"largest weight", `1e131071`, true},
		{"largest weight, upper case with sign", `9.9E+131071`, true},
		{"weight overflow", `1e131072`, false},
		{"far weight overflow", `1e999999`, false},
		{"weight overflow inside an array", `[1, 1e999999]`, false},
		{"digits count toward the weight", `100e131069`, true},
		{"digits overflow the weight", `100e131070`, false},
		{"leading fraction zeros lower the weight", `0.01e131073`, true},
		{"fraction weight overflow", `0.01e131074`, false},
		{"131072 digits before the point", strings.Repeat("7", 131072), true},
		{"131073 digits before the point", strings.Repeat("7", 131073), false},
		{"smallest scale", `1e-16383`, true},
		{"scale overflow", `1e-16384`, false},
		{"scale counts fraction digits", `1.5e-16382`, true},
		{"fraction digits overflow the scale", `1.5e-16383`, false},
		{"16383 fraction digits", "0." + strings.Repeat("0", 16383), true},
		{"16384 fraction digits", "0." + strings.Repeat("0", 16384), false},
		{"zero keeps its scale", `0e-16383`, true},
		{"zero scale overflow", `0e-16384`, false},
		{"zero takes any weight", `0e999999`, true},
		{"zero below the exponent bound", `0e1073741822`, true},
		{"zero at the exponent bound", `0e1073741823`, false},
		{"exponent with many digits", `0e00000000000000000000000000000000000000001`, true},
		{"exponent past int64", `0e99999999999999999999999`, false},
	}
}
