// Package testenv holds what dpkit's tests share about the environment they run in: which
// steps of scripts/test they belong to.
//
// scripts/test runs a race-enabled step with -short, then the full suite; scripts/test
// --long (which CI also runs) adds the long step, DPKIT_LONG=1, for the heaviest cases
// (minutes each on two cores). A test that belongs to the long step calls Long first.
package testenv

import (
	"os"
	"testing"
)

// Long skips t unless the long step is running (DPKIT_LONG=1, set by scripts/test
// --long), and under -short in any case.
func Long(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("long case: skipped under -short")
	}
	if os.Getenv("DPKIT_LONG") != "1" {
		t.Skip("long case: runs in scripts/test --long (DPKIT_LONG=1)")
	}
}

// IsLong reports whether the long step is running (DPKIT_LONG=1 and not -short), for
// tests that only scale their sizes up in the long step.
func IsLong() bool { return !testing.Short() && os.Getenv("DPKIT_LONG") == "1" }
