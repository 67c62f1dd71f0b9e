package query

import (
	"flag"
	"os"
	"testing"
)

// TestMain runs the property tests with 1000 cases each unless -rapid.checks says
// otherwise: the reference comparisons are cheap, and 100 cases miss off-by-one errors
// at condition boundaries.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set {
		_ = flag.Set("rapid.checks", "1000")
	}
	os.Exit(m.Run())
}
