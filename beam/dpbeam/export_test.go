package dpbeam

import (
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// Test-only switches (this file is compiled only into the package's tests).

// testSpec returns a job with the test options o (see testOptions: exact aggregates,
// rows sampled by a seeded hash, seeded noise) and a fixed partition-priority key, so
// that tests can recompute the bounding and reproduce the noise.
func testSpec(p PrivacySpecParams, o testOptions) (*PrivacySpec, error) {
	s, err := NewPrivacySpec(p)
	if err != nil {
		return nil, err
	}
	s.test = o
	for i := range s.key {
		s.key[i] = byte(i + 1)
	}
	return s, nil
}

// privateRows is the set-up the pipeline tests share: a job with the test options o,
// and a new pipeline whose rows are made private by their User field under it.
func privateRows(t *testing.T, rows []row, p PrivacySpecParams, o testOptions) (*PrivacySpec, *beam.Pipeline, beam.Scope, PrivatePCollection) {
	t.Helper()
	spec, err := testSpec(p, o)
	if err != nil {
		t.Fatal(err)
	}
	pl, s := beam.NewPipelineWithRoot()
	pcol, err := MakePrivate(s, beam.CreateList(s, rows), spec, "User")
	if err != nil {
		t.Fatal(err)
	}
	return spec, pl, s, pcol
}
