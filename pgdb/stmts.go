package pgdb

import (
	"fmt"
	"reflect"
	"strings"
)

// ExpandByName fills the statements of a PostgreSQL component, and is how every one of them holds
// its statements. Each statement is a constant sqlX in the package's sql.go; the component holds
// them in a struct whose string field X is filled, once, with Expand(texts["sqlX"], schema), so a
// field is paired with its text by name and can never carry another's. pgx caches the prepared
// statements itself, so the expanded text is all a field holds. This mirrors sqlitedb's rule,
// where the same pairing prepares each statement on a connection.
//
// set is a pointer to the struct; every field of it must be an exported string. A field without a
// text is an error naming it: a programming error, for the component's constructor to return. A
// text without a field is fine: a fragment shared by statements, or a statement built at call time.
func ExpandByName(set any, texts map[string]string, schema string) error {
	v := reflect.ValueOf(set)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("pgdb: ExpandByName: want a pointer to a struct of statements, got %T", set)
	}
	s := v.Elem()
	var missing []string
	for i := range s.NumField() {
		f := s.Type().Field(i)
		if !f.IsExported() || f.Type.Kind() != reflect.String {
			return fmt.Errorf("pgdb: ExpandByName: field %s of %s is not an exported string", f.Name, s.Type())
		}
		text, ok := texts["sql"+f.Name]
		if !ok {
			missing = append(missing, f.Name)
			continue
		}
		s.Field(i).SetString(Expand(text, schema))
	}
	if len(missing) > 0 {
		return fmt.Errorf("pgdb: ExpandByName: no text sql<X> for field(s) %s of %s", strings.Join(missing, ", "), s.Type())
	}
	return nil
}
