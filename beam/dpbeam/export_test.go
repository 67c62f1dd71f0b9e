package dpbeam

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
