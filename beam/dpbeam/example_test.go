package dpbeam_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/beam/dpbeam"
	"github.com/dpkit/dpkit/ledger"
	"github.com/dpkit/dpkit/ledger/sqlite"
)

// Visit is a row: who visited, on which day, for how many minutes.
type Visit struct {
	UserID  string
	Day     int
	Minutes float64
}

func init() { beam.RegisterType(reflect.TypeOf(Visit{})) }

// A job counting visits and averaging their length per day, for the days 1–7 (public
// partitions), each user counted in at most 3 days and 2 visits a day. The ledger
// reserves the job's cost before it runs; a second reservation is refused.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "dpbeam-example")
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"), &sqlite.Options{Create: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	l := ledger.New(store)
	if _, err := l.Create(ctx, ledger.Spec{ID: "visits", Total: dpkit.Budget{Epsilon: 4},
		Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}}); err != nil {
		fmt.Println(err)
		return
	}

	var visits []Visit
	for u := range 300 {
		for d := range 10 {
			visits = append(visits, Visit{UserID: fmt.Sprint("user", u), Day: 1 + (u+d)%9, Minutes: float64(5 + d)})
		}
	}
	build := func() (*beam.Pipeline, *dpbeam.PrivacySpec, error) {
		p, s := beam.NewPipelineWithRoot()
		spec, err := dpbeam.NewPrivacySpec(dpbeam.PrivacySpecParams{Job: "visits-week-1", Budget: dpkit.Budget{Epsilon: 2}})
		if err != nil {
			return nil, nil, err
		}
		pcol, err := dpbeam.MakePrivate(s, beam.CreateList(s, visits), spec, "UserID")
		if err != nil {
			return nil, nil, err
		}
		pp := dpbeam.PartitionParams{Partition: "Day", MaxPartitions: 3, MaxContributions: 2, PublicPartitions: []int{1, 2, 3, 4, 5, 6, 7}}
		if _, err := dpbeam.Count(s, pcol, dpbeam.CountParams{PartitionParams: pp, Budget: dpkit.Budget{Epsilon: 1}}); err != nil {
			return nil, nil, err
		}
		_, err = dpbeam.MeanPerKey(s, pcol, dpbeam.SumParams{PartitionParams: pp, Value: "Minutes", Min: 0, Max: 60, Budget: dpkit.Budget{Epsilon: 1}})
		return p, spec, err
	}
	p, spec, err := build()
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := spec.Reserve(ctx, l, "visits", dpbeam.ReserveOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("job %s: cost %v by %s, ledger release %d\n", spec.Job(), res.Cost.Budget, res.Cost.Method, res.Release.Seq)
	if _, err := prism.Execute(ctx, p); err != nil { // the outputs would be written here
		fmt.Println(err)
		return
	}
	_, again, _ := build()
	_, err = again.Reserve(ctx, l, "visits", dpbeam.ReserveOptions{})
	fmt.Println(err != nil, errors.Is(err, dpbeam.ErrRerun))
	st, _ := l.Status(ctx, "visits")
	fmt.Printf("ledger: %d release(s), ε spent %g of 4\n", st.Releases, st.SpentEpsilon)
	// Output:
	// job visits-week-1: cost (ε=2, δ=0) by basic, ledger release 1
	// true true
	// ledger: 1 release(s), ε spent 2 of 4
}
