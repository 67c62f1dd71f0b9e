package mechanism

import (
	"bytes"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/dpkit/dpkit"
)

// DescriptorVersion is the version of the descriptor format this package writes and
// reads. A later format gets a new version; FromDescriptor and UnmarshalJSON refuse a
// version they do not know rather than guess.
const DescriptorVersion = 1

// Descriptor is the typed, versioned description of a mechanism: its kind and the
// parameters its constructor takes (for a release mechanism, exactly its options, so
// that FromDescriptor rebuilds the same mechanism). Its JSON form is one flat object,
//
//	{"kind":"gaussian","version":1,"epsilon":1,"delta":1e-05,"sensitivity":1}
//
// with the parameters' snake_case names. The ledger records a release's mechanism in
// this form (docs/ledger.md).
//
// The kinds and their parameters (Params types):
//
//	laplace               LaplaceOptions             Laplace (secure, on a grid)
//	geometric             GeometricOptions           Geometric (discrete Laplace)
//	gaussian              GaussianOptions            Gaussian (secure discrete Gaussian)
//	exponential           ExponentialOptions         Exponential
//	quantile              QuantileOptions            Quantile (exponential mechanism on a grid)
//	randomized_response   RandomizedResponseOptions  RandomizedResponse
//	randomized_response4  RandomizedResponse4Options RandomizedResponse4
//	median                MedianOptions              Median (smooth sensitivity)
//	composition           CompositionOptions         Composition (several released together)
//	laplace_noise         LaplaceNoise               accounting only (Accounted)
//	gaussian_noise        GaussianNoise              accounting only
//	geometric_noise       GeometricNoise             accounting only
//	epsilon_delta         EpsilonDelta               accounting only
//	subsampled            Subsampled                 accounting only
//	text                  Text                       a free-text note; no mechanism
//
// The accounting-only kinds describe a mechanism run outside dpkit by its noise (the
// forms of the command line's KIND:key=value syntax): FromDescriptor gives its
// Guarantee and PLD but no release method.
//
// The zero Descriptor means "no mechanism described"; it marshals to JSON null.
type Descriptor struct {
	Kind    string // e.g. "laplace"
	Version int    // DescriptorVersion
	Params  Params // the kind's parameters, e.g. LaplaceOptions
}

// Params are the typed parameters of one kind of Descriptor. The implementations are
// the types listed at Descriptor.
type Params interface {
	kind() string
	build() (Mechanism, error)
}

// Describe returns the descriptor of p: its kind, DescriptorVersion and p.
func Describe(p Params) Descriptor {
	return Descriptor{Kind: p.kind(), Version: DescriptorVersion, Params: p}
}

// kindInfo says how to decode one kind's parameters.
type kindInfo struct {
	decode   func(data []byte) (Params, error)
	required []string // JSON keys that must be present
}

// kinds is the registry of descriptor kinds. Every file defining a kind registers it in
// an init function.
var kinds = map[string]kindInfo{}

// register adds kind, whose parameters are a P, with the JSON keys a descriptor must
// give (the privacy-relevant parameters are never defaulted).
func register[P Params](kind string, required ...string) {
	if _, dup := kinds[kind]; dup {
		panic("mechanism: descriptor kind " + kind + " registered twice") // a defect of the build
	}
	kinds[kind] = kindInfo{
		required: required,
		decode: func(data []byte) (Params, error) {
			var p P
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&p); err != nil {
				return nil, err
			}
			return p, nil
		},
	}
}

func init() {
	register[LaplaceOptions]("laplace", "epsilon", "sensitivity")
	register[GeometricOptions]("geometric", "epsilon", "sensitivity")
	register[GaussianOptions]("gaussian", "epsilon", "delta", "sensitivity")
	register[ExponentialOptions]("exponential", "epsilon", "sensitivity")
	register[RandomizedResponseOptions]("randomized_response", "epsilon", "categories")
	register[RandomizedResponse4Options]("randomized_response4", "epsilon", "delta")
	register[MedianOptions]("median", "epsilon", "delta", "lower", "upper")
	register[CompositionOptions]("composition", "parts")
	register[LaplaceNoise]("laplace_noise", "scale", "sensitivity")
	register[GaussianNoise]("gaussian_noise", "sigma", "sensitivity")
	register[GeometricNoise]("geometric_noise", "scale", "sensitivity")
	register[EpsilonDelta]("epsilon_delta", "epsilon", "delta")
	register[Subsampled]("subsampled", "rate", "base")
	register[Text]("text", "text")
}

// Kinds returns the registered descriptor kinds, sorted.
func Kinds() []string {
	out := make([]string, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// IsZero reports whether d describes no mechanism.
func (d Descriptor) IsZero() bool { return d.Kind == "" && d.Version == 0 && d.Params == nil }

// validate checks the descriptor's frame: a known kind, the supported version and
// parameters of that kind.
func (d Descriptor) validate() error {
	if d.IsZero() {
		return &dpkit.ParamError{Pkg: "mechanism", Name: "mechanism", Value: nil, Want: "a mechanism descriptor"}
	}
	if _, ok := kinds[d.Kind]; !ok {
		return &dpkit.ParamError{Pkg: "mechanism", Name: "kind", Value: d.Kind, Want: "one of " + strings.Join(Kinds(), ", ")}
	}
	if d.Version != DescriptorVersion {
		return &dpkit.ParamError{Pkg: "mechanism", Name: "version", Value: d.Version, Want: fmt.Sprintf("%d (the descriptor version this dpkit reads)", DescriptorVersion)}
	}
	if d.Params == nil || d.Params.kind() != d.Kind {
		got := "none"
		if d.Params != nil {
			got = d.Params.kind()
		}
		return &dpkit.ParamError{Pkg: "mechanism", Name: "params", Value: got, Want: "parameters of kind " + d.Kind}
	}
	return nil
}

// FromDescriptor rebuilds the mechanism d describes, validating its parameters as its
// constructor does (a *dpkit.ParamError names the offending parameter). For the
// accounting-only kinds it returns an *Accounted; for "text" it returns an error (a
// note names no mechanism).
func FromDescriptor(d Descriptor) (Mechanism, error) {
	if err := d.validate(); err != nil {
		return nil, err
	}
	return d.Params.build()
}

// MarshalJSON writes the flat object {"kind":…,"version":…,…parameters…}; the zero
// Descriptor is null.
func (d Descriptor) MarshalJSON() ([]byte, error) {
	if d.IsZero() {
		return []byte("null"), nil
	}
	if err := d.validate(); err != nil {
		return nil, err
	}
	body, err := json.Marshal(d.Params)
	if err != nil {
		return nil, err
	}
	if len(body) < 2 || body[0] != '{' {
		return nil, fmt.Errorf("mechanism: parameters of kind %q do not encode as a JSON object", d.Kind)
	}
	var b bytes.Buffer
	kind, _ := json.Marshal(d.Kind)
	fmt.Fprintf(&b, `{"kind":%s,"version":%d`, kind, d.Version)
	if inner := body[1 : len(body)-1]; len(inner) > 0 {
		b.WriteByte(',')
		b.Write(inner)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads the form MarshalJSON writes: a known kind, version
// DescriptorVersion, every required parameter of the kind present and no unknown one.
// null reads as the zero Descriptor. Parameter values are checked when the mechanism is
// built (FromDescriptor), not here.
func (d *Descriptor) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		*d = Descriptor{}
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return fmt.Errorf("mechanism: a descriptor is a JSON object {\"kind\":…,\"version\":…,…}: %w", err)
	}
	var kind string
	var version int
	if err := json.Unmarshal(fields["kind"], &kind); err != nil || kind == "" {
		return &dpkit.ParamError{Pkg: "mechanism", Name: "kind", Value: string(fields["kind"]), Want: "one of " + strings.Join(Kinds(), ", ")}
	}
	info, ok := kinds[kind]
	if !ok {
		return &dpkit.ParamError{Pkg: "mechanism", Name: "kind", Value: kind, Want: "one of " + strings.Join(Kinds(), ", ")}
	}
	if err := json.Unmarshal(fields["version"], &version); err != nil || version != DescriptorVersion {
		return &dpkit.ParamError{Pkg: "mechanism", Name: "version", Value: string(fields["version"]),
			Want: fmt.Sprintf("%d (the descriptor version this dpkit reads)", DescriptorVersion)}
	}
	delete(fields, "kind")
	delete(fields, "version")
	for _, k := range info.required {
		if _, ok := fields[k]; !ok {
			return &dpkit.ParamError{Pkg: "mechanism", Name: k, Value: nil, Want: "a value (required by kind " + kind + ")"}
		}
	}
	rest, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	p, err := info.decode(rest)
	if err != nil {
		return fmt.Errorf("mechanism: descriptor of kind %q: %w", kind, err)
	}
	*d = Descriptor{Kind: kind, Version: version, Params: p}
	return nil
}

// Equal reports whether d and e describe the same mechanism with the same parameters
// (their JSON forms are identical).
func (d Descriptor) Equal(e Descriptor) bool {
	if d.IsZero() || e.IsZero() {
		return d.IsZero() && e.IsZero()
	}
	a, errA := d.MarshalJSON()
	b, errB := e.MarshalJSON()
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// String returns the JSON form ("" for the zero Descriptor, "<invalid descriptor>" if
// it does not marshal).
func (d Descriptor) String() string {
	if d.IsZero() {
		return ""
	}
	b, err := d.MarshalJSON()
	if err != nil {
		return "<invalid descriptor>"
	}
	return string(b)
}

// Value implements driver.Valuer, so that SQL stores can keep a Descriptor in a text
// column: its JSON form, or "" for the zero Descriptor.
func (d Descriptor) Value() (driver.Value, error) {
	if d.IsZero() {
		return "", nil
	}
	b, err := d.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// Scan implements sql.Scanner for the column Value writes: "" (or NULL) is the zero
// Descriptor, anything else must be a descriptor's JSON form.
func (d *Descriptor) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*d = Descriptor{}
		return nil
	case string:
		return d.scanText(v)
	case []byte:
		return d.scanText(string(v))
	}
	return fmt.Errorf("mechanism: cannot scan %T into a Descriptor", src)
}

func (d *Descriptor) scanText(s string) error {
	if strings.TrimSpace(s) == "" {
		*d = Descriptor{}
		return nil
	}
	return d.UnmarshalJSON([]byte(s))
}
