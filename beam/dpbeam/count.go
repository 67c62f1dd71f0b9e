package dpbeam

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/dpkit/dpkit"
)

// CountParams configures Count.
type CountParams struct {
	PartitionParams
	// Noise is the kind of noise (default LaplaceNoise).
	Noise NoiseKind
	// Budget is the (ε, δ) of the noisy counts over all the partitions; required (δ = 0
	// for Laplace noise, δ in (0, 1) for Gaussian). Partition selection, if any, spends
	// PartitionParams.Selection on top.
	Budget dpkit.Budget
}

// Count returns the number of rows per partition, as a PCollection<KV<K, int64>> (K
// the Partition field's type), with noise: each privacy unit contributes at most
// MaxContributions rows to each of at most MaxPartitions partitions, so a count's
// sensitivity is MaxContributions per partition.
func Count(s beam.Scope, pcol PrivatePCollection, p CountParams) (beam.PCollection, error) {
	s = s.Scope("dpbeam.Count")
	if err := checkBudget(p.Noise, p.Budget); err != nil {
		return beam.PCollection{}, err
	}
	pl, err := newPlan(s, pcol, p.PartitionParams, sampleRows, field{})
	if err != nil {
		return beam.PCollection{}, err
	}
	ns := noiseSpec{Kind: p.Noise, Budget: p.Budget, K: p.MaxPartitions, Sensitivity: float64(p.MaxContributions), Integer: true}
	z, err := ns.build()
	if err != nil {
		return beam.PCollection{}, err
	}
	if err := pl.register(fmt.Sprintf("count(%s)", p.Partition), p.PartitionParams, z); err != nil {
		return beam.PCollection{}, err
	}
	partials := beam.ParDo(s, &valueFn{Count: true}, pl.stage.kept)
	return beam.ParDo(s, &countOutFn{release: newRelease(pl), Noise: ns}, pl.combine(s, partials), pl.outputType()), nil
}

// DistinctParams configures DistinctPerKey.
type DistinctParams struct {
	// PartitionParams.MaxContributions bounds the distinct values one unit contributes
	// to a partition.
	PartitionParams
	// Value names the field whose distinct values are counted; required: an exported
	// field of a string, bool, integer or floating-point type.
	Value string
	// Noise is the kind of noise (default LaplaceNoise).
	Noise NoiseKind
	// Budget is the (ε, δ) of the noisy counts; required, as for Count.
	Budget dpkit.Budget
}

// DistinctPerKey returns the number of distinct values of the Value field per
// partition, as a PCollection<KV<K, int64>>, with noise. Each unit contributes at most
// MaxContributions distinct values (a uniformly random subset of its values) to each of
// at most MaxPartitions partitions; a value held by several units counts once, so
// removing a unit changes a partition's count by at most MaxContributions.
func DistinctPerKey(s beam.Scope, pcol PrivatePCollection, p DistinctParams) (beam.PCollection, error) {
	s = s.Scope("dpbeam.DistinctPerKey")
	if err := checkBudget(p.Noise, p.Budget); err != nil {
		return beam.PCollection{}, err
	}
	if pcol.spec == nil {
		return beam.PCollection{}, &dpkit.ParamError{Pkg: pkg, Name: "pcol", Want: "a PrivatePCollection made by MakePrivate"}
	}
	val, err := lookupField(pcol.row, "value", p.Value, distinctKinds)
	if err != nil {
		return beam.PCollection{}, err
	}
	pl, err := newPlan(s, pcol, p.PartitionParams, sampleDistinct, val)
	if err != nil {
		return beam.PCollection{}, err
	}
	ns := noiseSpec{Kind: p.Noise, Budget: p.Budget, K: p.MaxPartitions, Sensitivity: float64(p.MaxContributions), Integer: true}
	z, err := ns.build()
	if err != nil {
		return beam.PCollection{}, err
	}
	if err := pl.register(fmt.Sprintf("distinct(%s by %s)", p.Value, p.Partition), p.PartitionParams, z); err != nil {
		return beam.PCollection{}, err
	}
	pairs := beam.ParDo(s, distinctKeyFn, pl.stage.values)
	distinct := beam.CombinePerKey(s, firstFn{}, pairs)
	partials := beam.ParDo(s, distinctPartialFn, distinct)
	return beam.ParDo(s, &countOutFn{release: newRelease(pl), Noise: ns}, pl.combine(s, partials, pl.stage.units), pl.outputType()), nil
}

// distinctKeyFn keys a kept distinct value by (partition, value): the partition's
// encoding, length-prefixed, then the value's.
func distinctKeyFn(part, val string) (string, string) {
	b := binary.AppendUvarint(nil, uint64(len(part)))
	b = append(b, part...)
	return string(append(b, val...)), part
}

// firstFn keeps one of equal values: distinct (partition, value) pairs.
type firstFn struct{}

func (firstFn) MergeAccumulators(a, _ string) string { return a }

func distinctPartialFn(_ string, part string, emit func(string, partial)) {
	emit(part, partial{N: 1})
}

// countOutFn releases the noisy counts of the selected partitions.
type countOutFn struct {
	release
	Noise noiseSpec

	z *noiser
}

func (fn *countOutFn) Setup() error {
	zs, err := fn.setup(fn.Noise)
	if err != nil {
		return err
	}
	fn.z = zs[0]
	return nil
}

func (fn *countOutFn) ProcessElement(part string, pt partial, emit func(beam.X, int64)) error {
	k, src, ok, err := fn.open(part, pt.Units)
	if !ok {
		return err
	}
	v := pt.N
	if !fn.NoNoise {
		if v, err = fn.z.addInt(v, src); err != nil {
			return err
		}
	}
	emit(k, v)
	return nil
}
