package dpbeam

// Test-only switches (this file is compiled only into the package's tests).

// testSpec returns a job whose aggregations release exact values (noNoise) and keep
// every partition that has a unit, or whose rows are sampled by a seeded hash (seed ≠
// 0), with a fixed partition-priority key, so that tests can recompute the bounding.
func testSpec(p PrivacySpecParams, noNoise bool, seed uint64) (*PrivacySpec, error) {
	s, err := NewPrivacySpec(p)
	if err != nil {
		return nil, err
	}
	s.test = testOptions{noNoise: noNoise, seed: seed}
	for i := range s.key {
		s.key[i] = byte(i + 1)
	}
	return s, nil
}
