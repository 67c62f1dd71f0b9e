package dpbeam

import (
	"fmt"
	"math"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/dpkit/dpkit"
)

// SumParams configures SumPerKey and MeanPerKey.
type SumParams struct {
	PartitionParams
	// Value names the field to sum (or average); required: an exported field of an
	// integer or floating-point type.
	Value string
	// Min and Max are the declared bounds of a value; required, finite, Min ≤ Max.
	// Values are clamped to [Min, Max]; a NaN value counts as the midpoint for
	// MeanPerKey and as 0 (clamped to [Min, Max]) for SumPerKey.
	Min, Max float64
	// Noise is the kind of noise (default LaplaceNoise).
	Noise NoiseKind
	// Budget is the (ε, δ) of the noisy releases over all the partitions; required
	// (δ = 0 for Laplace noise, δ in (0, 1) for Gaussian). MeanPerKey spends half of it
	// on the noisy count and half on the noisy sum. Partition selection, if any, spends
	// PartitionParams.Selection on top.
	Budget dpkit.Budget
}

func (p SumParams) check(pcol PrivatePCollection) (field, error) {
	if err := checkBudget(p.Noise, p.Budget); err != nil {
		return field{}, err
	}
	if err := checkBounds(p.Min, p.Max); err != nil {
		return field{}, err
	}
	if pcol.spec == nil {
		return field{}, &dpkit.ParamError{Pkg: pkg, Name: "pcol", Want: "a PrivatePCollection made by MakePrivate"}
	}
	return lookupField(pcol.row, "value", p.Value, numericKinds)
}

// SumPerKey returns the sum of the Value field per partition, as a
// PCollection<KV<K, float64>>, with noise. Each value is clamped to [Min, Max] and each
// privacy unit contributes at most MaxContributions rows to each of at most
// MaxPartitions partitions, so a sum's sensitivity is MaxContributions·max(|Min|, |Max|)
// per partition.
func SumPerKey(s beam.Scope, pcol PrivatePCollection, p SumParams) (beam.PCollection, error) {
	s = s.Scope("dpbeam.SumPerKey")
	val, err := p.check(pcol)
	if err != nil {
		return beam.PCollection{}, err
	}
	pl, err := newPlan(s, pcol, p.PartitionParams, sampleRows, field{})
	if err != nil {
		return beam.PCollection{}, err
	}
	sens := float64(p.MaxContributions) * math.Max(math.Abs(p.Min), math.Abs(p.Max))
	if sens == 0 {
		return beam.PCollection{}, &dpkit.ParamError{Pkg: pkg, Name: "max", Value: p.Max, Want: "bounds [min, max] other than [0, 0]"}
	}
	ns := noiseSpec{Kind: p.Noise, Budget: p.Budget, K: p.MaxPartitions, Sensitivity: sens}
	z, err := ns.build()
	if err != nil {
		return beam.PCollection{}, err
	}
	if err := pl.register(fmt.Sprintf("sum(%s by %s)", p.Value, p.Partition), p.PartitionParams, z); err != nil {
		return beam.PCollection{}, err
	}
	lo, hi := p.Min, p.Max
	partials := beam.ParDo(s, &valueFn{Col: pl.stage.column(val), Lo: lo, Hi: hi, Shift: 0, NaN: math.Max(lo, math.Min(0, hi))}, pl.stage.kept)
	return beam.ParDo(s, &sumOutFn{release: newRelease(pl), Noise: ns}, pl.combine(s, partials), pl.outputType()), nil
}

// MeanPerKey returns the mean of the Value field per partition, as a
// PCollection<KV<K, float64>>, with noise: the midpoint m of [Min, Max] plus the noisy
// sum of the values' offsets from m (sensitivity MaxContributions·(Max − Min)/2 per
// partition) divided by the noisy row count (sensitivity MaxContributions), the count
// taken as at least 1, and the result clamped to [Min, Max] (post-processing). The
// budget is split evenly between the two.
func MeanPerKey(s beam.Scope, pcol PrivatePCollection, p SumParams) (beam.PCollection, error) {
	s = s.Scope("dpbeam.MeanPerKey")
	val, err := p.check(pcol)
	if err != nil {
		return beam.PCollection{}, err
	}
	pl, err := newPlan(s, pcol, p.PartitionParams, sampleRows, field{})
	if err != nil {
		return beam.PCollection{}, err
	}
	if p.Min == p.Max {
		return beam.PCollection{}, &dpkit.ParamError{Pkg: pkg, Name: "max", Value: p.Max, Want: fmt.Sprintf("> min = %g (the mean of values in [%g, %g] is known)", p.Min, p.Min, p.Max)}
	}
	half := dpkit.Budget{Epsilon: p.Budget.Epsilon / 2, Delta: p.Budget.Delta / 2} // exact halving
	count := noiseSpec{Kind: p.Noise, Budget: half, K: p.MaxPartitions, Sensitivity: float64(p.MaxContributions), Integer: true}
	mid := p.Min + (p.Max-p.Min)/2
	sens := float64(p.MaxContributions) * (p.Max - p.Min) / 2
	sum := noiseSpec{Kind: p.Noise, Budget: half, K: p.MaxPartitions, Sensitivity: sens}
	zc, err := count.build()
	if err != nil {
		return beam.PCollection{}, err
	}
	zs, err := sum.build()
	if err != nil {
		return beam.PCollection{}, err
	}
	if err := pl.register(fmt.Sprintf("mean(%s by %s)", p.Value, p.Partition), p.PartitionParams, zc, zs); err != nil {
		return beam.PCollection{}, err
	}
	partials := beam.ParDo(s, &valueFn{Col: pl.stage.column(val), Lo: p.Min, Hi: p.Max, Shift: mid, NaN: mid}, pl.stage.kept)
	out := &meanOutFn{release: newRelease(pl), Count: count, Sum: sum, Lo: p.Min, Hi: p.Max, Mid: mid}
	return beam.ParDo(s, out, pl.combine(s, partials), pl.outputType()), nil
}

// sumOutFn releases the noisy sums of the selected partitions.
type sumOutFn struct {
	release
	Noise noiseSpec

	z *noiser
}

func (fn *sumOutFn) Setup() error {
	zs, err := fn.setup(fn.Noise)
	if err != nil {
		return err
	}
	fn.z = zs[0]
	return nil
}

func (fn *sumOutFn) ProcessElement(part string, pt partial, emit func(beam.X, float64)) error {
	k, src, ok, err := fn.open(part, pt.Units)
	if !ok {
		return err
	}
	v := pt.S
	if !fn.NoNoise {
		if v, err = fn.z.addFloat(v, src); err != nil {
			return err
		}
	}
	emit(k, v)
	return nil
}

// meanOutFn releases the noisy means of the selected partitions.
type meanOutFn struct {
	release
	Count, Sum  noiseSpec
	Lo, Hi, Mid float64

	zc, zs *noiser
}

func (fn *meanOutFn) Setup() error {
	zs, err := fn.setup(fn.Count, fn.Sum)
	if err != nil {
		return err
	}
	fn.zc, fn.zs = zs[0], zs[1]
	return nil
}

func (fn *meanOutFn) ProcessElement(part string, pt partial, emit func(beam.X, float64)) error {
	k, src, ok, err := fn.open(part, pt.Units)
	if !ok {
		return err
	}
	n, sum := pt.N, pt.S
	if !fn.NoNoise {
		if n, err = fn.zc.addInt(n, src); err != nil {
			return err
		}
		if sum, err = fn.zs.addFloat(sum, src); err != nil {
			return err
		}
	}
	emit(k, meanOf(fn.Mid, sum, n, fn.Lo, fn.Hi))
	return nil
}

// meanOf is the mean's post-processing: mid + sum/max(n, 1), clamped to [lo, hi].
func meanOf(mid, sum float64, n int64, lo, hi float64) float64 {
	m := mid + sum/float64(max(n, 1))
	return math.Min(math.Max(m, lo), hi)
}
