package dpbeam

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/typex"

	"github.com/dpkit/dpkit"
)

// PrivatePCollection is a PCollection of rows (structs) whose privacy unit is one of
// their fields. Nothing can be read from it but the differentially private
// aggregations of this package (Count, SumPerKey, MeanPerKey, QuantilesPerKey,
// DistinctPerKey, SelectPartitions), whose outputs are ordinary PCollections.
type PrivatePCollection struct {
	col  beam.PCollection // PCollection<Row>
	spec *PrivacySpec
	row  reflect.Type // the struct type of the rows
	unit field        // the privacy unit's field
	// bounded caches the contribution-bounding stages built for this collection, so
	// that aggregations with the same partition field and bounds share one grouping by
	// privacy unit.
	bounded map[boundKey]*boundStage
}

// MakePrivate returns col as a private collection whose privacy unit is the field
// named unit: every row of col is a struct, and all the rows with
// the same value of that field belong to one privacy unit, whose contributions the
// aggregations bound and whose presence or absence their outputs hide.
//
// The unit field must be exported and of a string, boolean or integer type.
func MakePrivate(s beam.Scope, col beam.PCollection, spec *PrivacySpec, unit string) (PrivatePCollection, error) {
	if spec == nil {
		return PrivatePCollection{}, &dpkit.ParamError{Pkg: pkg, Name: "spec", Want: "a *PrivacySpec (NewPrivacySpec)"}
	}
	if !col.IsValid() {
		return PrivatePCollection{}, &dpkit.ParamError{Pkg: pkg, Name: "col", Value: "invalid PCollection", Want: "a PCollection of structs"}
	}
	t := col.Type().Type()
	if typex.IsKV(col.Type()) || t.Kind() != reflect.Struct {
		return PrivatePCollection{}, &dpkit.ParamError{Pkg: pkg, Name: "col", Value: fmt.Sprint(col.Type()), Want: "a PCollection of structs (one row per element)"}
	}
	f, err := lookupField(t, "unit", unit, keyKinds)
	if err != nil {
		return PrivatePCollection{}, err
	}
	return PrivatePCollection{col: col, spec: spec, row: t, unit: f, bounded: map[boundKey]*boundStage{}}, nil
}

// field is a resolved struct field: its index path and type.
type field struct {
	Name  string
	Index []int
	Type  reflect.Type
}

// kind classes a field may have.
type kindSet int

const (
	keyKinds      kindSet = iota // string, bool, integers: privacy units and partition keys
	numericKinds                 // integers and floats: values to sum, average, rank
	distinctKinds                // keys and floats: values to count distinct
)

func (k kindSet) allows(kind reflect.Kind) bool {
	switch kind {
	case reflect.String, reflect.Bool:
		return k != numericKinds
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	case reflect.Float32, reflect.Float64:
		return k != keyKinds
	}
	return false
}

func (k kindSet) String() string {
	switch k {
	case keyKinds:
		return "an exported field of a string, bool or integer type"
	case numericKinds:
		return "an exported field of an integer or floating-point type"
	}
	return "an exported field of a string, bool, integer or floating-point type"
}

// lookupField resolves the exported field name of struct t (a dotted path reaches into
// nested structs) and checks that its kind is in kinds. param names the option that
// gave name, for the error.
func lookupField(t reflect.Type, param, name string, kinds kindSet) (field, error) {
	bad := func() error {
		return &dpkit.ParamError{Pkg: pkg, Name: param, Value: name, Want: fmt.Sprintf("%s of %s", kinds, t)}
	}
	if name == "" {
		return field{}, &dpkit.ParamError{Pkg: pkg, Name: param, Want: fmt.Sprintf("%s of %s", kinds, t)}
	}
	sf, ok := t.FieldByName(name)
	if !ok || !sf.IsExported() || !kinds.allows(sf.Type.Kind()) {
		return field{}, bad()
	}
	return field{Name: name, Index: sf.Index, Type: sf.Type}, nil
}

// encodeKey appends a canonical encoding of a key value (string, bool, integer) to b:
// two values are equal iff their encodings are.
func encodeKey(b []byte, v reflect.Value) []byte {
	switch v.Kind() {
	case reflect.String:
		return append(b, v.String()...)
	case reflect.Bool:
		if v.Bool() {
			return append(b, 1)
		}
		return append(b, 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return binary.BigEndian.AppendUint64(b, uint64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return binary.BigEndian.AppendUint64(b, v.Uint())
	case reflect.Float32, reflect.Float64:
		x := v.Float()
		if x == 0 {
			x = 0 // −0 and +0 are one value
		}
		if math.IsNaN(x) {
			x = math.NaN() // one NaN
		}
		return binary.BigEndian.AppendUint64(b, math.Float64bits(x))
	}
	panic("dpbeam: encodeKey on a " + v.Kind().String()) // excluded by lookupField
}

// decodeKey returns the value of type t whose encoding is s (the inverse of encodeKey).
func decodeKey(t reflect.Type, s string) (reflect.Value, error) {
	v := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.String:
		v.SetString(s)
		return v, nil
	case reflect.Bool:
		if len(s) == 1 {
			v.SetBool(s[0] == 1)
			return v, nil
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if len(s) == 8 {
			v.SetInt(int64(binary.BigEndian.Uint64([]byte(s))))
			return v, nil
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if len(s) == 8 {
			v.SetUint(binary.BigEndian.Uint64([]byte(s)))
			return v, nil
		}
	}
	return v, fmt.Errorf("dpbeam: cannot decode a %s key from %d bytes", t, len(s))
}

// number returns a numeric field's value as a float64.
func number(v reflect.Value) float64 {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		return v.Float()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(v.Uint())
	}
	return float64(v.Int())
}

// encodeKeys encodes a slice of keys (any slice whose elements have type t) for the
// public partitions option named param.
func encodeKeys(param string, list any, t reflect.Type) ([]string, error) {
	v := reflect.ValueOf(list)
	if v.Kind() != reflect.Slice || v.Type().Elem() != t {
		return nil, &dpkit.ParamError{Pkg: pkg, Name: param, Value: fmt.Sprintf("%T", list), Want: fmt.Sprintf("a []%s (the partition field's type)", t)}
	}
	if v.Len() == 0 {
		return nil, &dpkit.ParamError{Pkg: pkg, Name: param, Value: "[]", Want: "at least one partition key (or nil for partition selection)"}
	}
	seen := make(map[string]bool, v.Len())
	out := make([]string, 0, v.Len())
	for i := range v.Len() {
		k := string(encodeKey(nil, v.Index(i)))
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out, nil
}
