package dpbeam

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/noise"
)

// PartitionParams are the grouping and contribution bounds every per-partition
// aggregation takes.
type PartitionParams struct {
	// Partition names the rows' field to group by (GROUP BY); required: an exported
	// field of a string, bool or integer type.
	Partition string
	// MaxPartitions (max_partitions) is the most partitions one privacy unit
	// contributes to; required, ≥ 1. A unit with rows in more partitions contributes to
	// a uniformly random subset of this many.
	MaxPartitions int64
	// MaxContributions (max_contributions) is the most rows (for DistinctPerKey:
	// distinct values) one unit contributes to one partition; required, ≥ 1. A unit
	// with more has a uniformly random subset of this many kept.
	MaxContributions int64
	// PublicPartitions, when set, is a slice (of the Partition field's type) of the
	// partitions to release: exactly these are output, with noise even when empty, and
	// rows of other partitions are dropped before bounding. It must not depend on the
	// private data. When nil, the partitions are chosen by DP partition selection
	// (mechanism.PartitionSelection) with the budget Selection.
	PublicPartitions any
	// Selection is the (ε, δ) of partition selection, required (ε > 0, δ in (0, 1))
	// when PublicPartitions is nil; it must be zero otherwise.
	Selection dpkit.Budget
}

// MaxBound is the largest max_partitions or max_contributions accepted.
const MaxBound = 1 << 20

// partial is a partition's sufficient statistics after contribution bounding.
type partial struct {
	Units int64   // distinct privacy units that contribute to the partition
	N     int64   // rows (or distinct values) kept
	S     float64 // sum of the kept rows' clamped (Mean: centred) values
}

// mergePartialFn is the combiner of partials: every field adds.
type mergePartialFn struct{}

func (mergePartialFn) MergeAccumulators(a, b partial) partial {
	return partial{Units: a.Units + b.Units, N: a.N + b.N, S: a.S + b.S}
}

// zeroFn emits an empty partial for a public partition.
func zeroFn(part string, emit func(string, partial)) { emit(part, partial{}) }

// plan is an aggregation's checked parameters and the stage it reads.
type plan struct {
	name   string // the aggregation's name in the job, once registered
	p      PrivatePCollection
	part   field
	public []string
	sel    *mechanism.PartitionSelection
	stage  *boundStage
}

// checkPartitionParams validates pp for the private collection p.
func checkPartitionParams(p PrivatePCollection, pp PartitionParams) (field, []string, *mechanism.PartitionSelection, error) {
	if p.spec == nil {
		return field{}, nil, nil, &dpkit.ParamError{Pkg: pkg, Name: "pcol", Want: "a PrivatePCollection made by MakePrivate"}
	}
	part, err := lookupField(p.row, "partition", pp.Partition, keyKinds)
	if err != nil {
		return field{}, nil, nil, err
	}
	for _, b := range []struct {
		name string
		v    int64
	}{{"max_partitions", pp.MaxPartitions}, {"max_contributions", pp.MaxContributions}} {
		if b.v < 1 || b.v > MaxBound {
			return field{}, nil, nil, &dpkit.ParamError{Pkg: pkg, Name: b.name, Value: b.v, Want: fmt.Sprintf("an integer in [1, %d]", MaxBound)}
		}
	}
	if pp.PublicPartitions != nil {
		if pp.Selection != (dpkit.Budget{}) {
			return field{}, nil, nil, &dpkit.ParamError{Pkg: pkg, Name: "selection", Value: pp.Selection.String(), Want: "zero with public_partitions (public partitions need no selection)"}
		}
		public, err := encodeKeys("public_partitions", pp.PublicPartitions, part.Type)
		return part, public, nil, err
	}
	sel, err := mechanism.NewPartitionSelection(mechanism.PartitionSelectionOptions{
		Epsilon: pp.Selection.Epsilon, Delta: pp.Selection.Delta, MaxPartitions: pp.MaxPartitions})
	if err != nil {
		var pe *dpkit.ParamError
		if errors.As(err, &pe) {
			pe.Pkg, pe.Name = pkg, "selection."+pe.Name
		}
		return field{}, nil, nil, err
	}
	return part, nil, sel, nil
}

// checkBudget validates an aggregation's noise budget for kind.
func checkBudget(kind NoiseKind, b dpkit.Budget) error {
	if err := dpkit.CheckPositive("budget.epsilon", b.Epsilon); err != nil {
		return dpkit.InPackage(pkg, err)
	}
	switch kind {
	case LaplaceNoise:
		if b.Delta != 0 {
			return &dpkit.ParamError{Pkg: pkg, Name: "budget.delta", Value: b.Delta, Want: "0 with Laplace noise (it is ε-DP)"}
		}
	case GaussianNoise:
		if math.IsNaN(b.Delta) || b.Delta <= 0 || b.Delta >= 1 {
			return &dpkit.ParamError{Pkg: pkg, Name: "budget.delta", Value: b.Delta, Want: "in (0, 1) with Gaussian noise"}
		}
	default:
		return &dpkit.ParamError{Pkg: pkg, Name: "noise", Value: int(kind), Want: "LaplaceNoise or GaussianNoise"}
	}
	return nil
}

// checkBounds validates the declared value range [lo, hi].
func checkBounds(lo, hi float64) error {
	if math.IsNaN(lo) || math.IsInf(lo, 0) {
		return &dpkit.ParamError{Pkg: pkg, Name: "min", Value: lo, Want: "a finite number"}
	}
	if math.IsNaN(hi) || math.IsInf(hi, 0) || hi < lo {
		return &dpkit.ParamError{Pkg: pkg, Name: "max", Value: hi, Want: fmt.Sprintf("a finite number ≥ min = %g", lo)}
	}
	return nil
}

// newPlan checks the partition parameters and builds (or reuses) the bounding stage.
func newPlan(s beam.Scope, p PrivatePCollection, pp PartitionParams, mode boundMode, value field) (*plan, error) {
	part, public, sel, err := checkPartitionParams(p, pp)
	if err != nil {
		return nil, err
	}
	key := boundKey{part: part.Name, k: pp.MaxPartitions, c: pp.MaxContributions, mode: mode, value: value.Name, public: publicKey(public)}
	return &plan{p: p, part: part, public: public, sel: sel, stage: p.stage(s, key, part, value, public)}, nil
}

// register records the aggregation with the job: its noise (one noiser per release
// per partition) and partition selection.
func (pl *plan) register(name string, pp PartitionParams, noisers ...*noiser) error {
	a := &aggregation{Name: name, MaxPartitions: pp.MaxPartitions, MaxContributions: pp.MaxContributions, sel: pl.sel, PublicPartitions: len(pl.public)}
	for _, z := range noisers {
		a.plds = append(a.plds, z.pld)
		a.PerPartition = append(a.PerPartition, z.mech.Descriptor())
		a.guarantee = sumBudgets(a.guarantee, z.guarantee)
	}
	if err := pl.p.spec.register(a); err != nil {
		return err
	}
	pl.name = a.Name
	return nil
}

// sumBudgets returns a + b rounded up (δ at most 1).
func sumBudgets(a, b dpkit.Budget) dpkit.Budget {
	up := func(x, y float64) float64 {
		s := x + y
		if s-x < y || s-y < x { // rounded down
			s = math.Nextafter(s, math.Inf(1))
		}
		return s
	}
	return dpkit.Budget{Epsilon: up(a.Epsilon, b.Epsilon), Delta: math.Min(1, up(a.Delta, b.Delta))}
}

// combine sums the partials of cols per partition, with an empty one per public
// partition. Each collection is combined before any Flatten, so that only a partial per
// partition and bundle crosses it (see the comment at the top of bound.go).
func (pl *plan) combine(s beam.Scope, cols ...beam.PCollection) beam.PCollection {
	var sums []beam.PCollection
	for _, c := range cols {
		sums = append(sums, beam.CombinePerKey(s, mergePartialFn{}, c))
	}
	if pl.public != nil {
		sums = append(sums, beam.ParDo(s, zeroFn, beam.CreateList(s, pl.public)))
	}
	if len(sums) == 1 {
		return sums[0]
	}
	return beam.CombinePerKey(s, mergePartialFn{}, beam.Flatten(s, sums...))
}

// release is the part of every output DoFn that decides which partitions are released
// and decodes their keys.
type release struct {
	KeyType   beam.EncodedType
	Selection *mechanism.PartitionSelectionOptions // nil: public partitions
	NoNoise   bool                                 // tests only
	NoiseSeed uint64                               // tests only: seeded noise (testOptions.noiseSeed)
	Name      string                               // the aggregation's name (salts NoiseSeed)
	Ticket    *ticket

	sel *mechanism.PartitionSelection
}

func newRelease(pl *plan) release {
	t := pl.p.spec.test
	r := release{KeyType: beam.EncodedType{T: pl.part.Type}, NoNoise: t.noNoise, NoiseSeed: t.noiseSeed, Name: pl.name, Ticket: pl.p.spec.ticket}
	if pl.sel != nil {
		o := pl.sel.Descriptor().Params.(mechanism.PartitionSelectionOptions)
		r.Selection = &o
	}
	return r
}

// setup is every output DoFn's Setup: it checks the job's ticket, rebuilds the
// partition selection and builds the noise of specs, in order.
func (r *release) setup(specs ...noiseSpec) ([]*noiser, error) {
	if err := r.Ticket.check(); err != nil {
		return nil, err
	}
	if r.Selection != nil {
		sel, err := mechanism.NewPartitionSelection(*r.Selection)
		if err != nil {
			return nil, err
		}
		r.sel = sel
	}
	zs := make([]*noiser, len(specs))
	for i, n := range specs {
		z, err := n.build()
		if err != nil {
			return nil, err
		}
		zs[i] = z
	}
	return zs, nil
}

// open decides whether partition part, to which units privacy units contribute, is
// released; if so (ok), it returns its decoded key and the source of its noise.
func (r *release) open(part string, units int64) (key any, src noise.Source, ok bool, err error) {
	src = r.source(part)
	if !r.keep(units, src) {
		return nil, nil, false, nil
	}
	key, err = r.key(part)
	return key, src, err == nil, err
}

// source returns the randomness of partition part's selection and noise: nil (the
// secure source of package noise) except under a test's noise seed.
func (r *release) source(part string) noise.Source {
	if r.NoiseSeed == 0 {
		return nil
	}
	var k [16]byte
	binary.LittleEndian.PutUint64(k[:], r.NoiseSeed)
	return noise.Seeded(keyedHash(k, r.Name, part, ""))
}

// keep decides whether a partition with units contributing units is released: always
// for public partitions, by DP partition selection drawing from src otherwise (under
// NoNoise: when it has a unit).
func (r *release) keep(units int64, src noise.Source) bool {
	switch {
	case r.sel == nil:
		return true
	case r.NoNoise:
		return units > 0
	}
	return r.sel.Keep(units, src)
}

// key decodes a partition key for output.
func (r *release) key(part string) (any, error) {
	v, err := decodeKey(r.KeyType.T, part)
	if err != nil {
		return nil, err
	}
	return v.Interface(), nil
}

// outputType is the option binding the output's key type (beam.X) to the partition
// field's type.
func (pl *plan) outputType() beam.TypeDefinition {
	return beam.TypeDefinition{Var: beam.XType, T: pl.part.Type}
}

// valueFn maps a unit's kept rows in a partition to its partial: one unit, its rows, and
// the sum of their values (column Col of the rows' numeric fields), each clamped to
// [Lo, Hi] minus Shift (Sum: Shift 0; Mean: the midpoint). A NaN value counts as NaN (a
// value in [Lo, Hi] fixed in advance: it carries no number, and any fixed value keeps the
// bounds).
type valueFn struct {
	Col           int
	Lo, Hi, Shift float64
	NaN           float64
	Count         bool // count rows only
}

func (fn *valueFn) ProcessElement(part string, k keptRows, emit func(string, partial)) {
	pt := partial{Units: 1, N: k.N}
	if !fn.Count {
		for i := range k.N {
			pt.S += fn.clamp(k.row(i)[fn.Col]) - fn.Shift
		}
	}
	emit(part, pt)
}

func (fn *valueFn) clamp(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return fn.NaN
	case x < fn.Lo:
		return fn.Lo
	case x > fn.Hi:
		return fn.Hi
	}
	return x
}
