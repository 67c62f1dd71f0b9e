package dpbeam

import (
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

// Every DoFn, combiner, emitter and iterator of the package is registered, so that
// runners outside this process (Flink, Dataflow) find them and Beam calls them without
// reflection.
func init() {
	beam.RegisterType(reflect.TypeOf(partial{}))
	beam.RegisterType(reflect.TypeOf(qelem{}))
	beam.RegisterType(reflect.TypeOf(keptRows{}))

	beam.RegisterCoder(reflect.TypeOf((*bucketAcc)(nil)), encodeBucket, decodeBucket)

	register.DoFn2x0[beam.T, func(int, *bucketAcc)](&extractFn{})
	register.DoFn3x0[int, func(**bucketAcc) bool, func(string, keptRows)](&emitRowsFn{})
	register.DoFn4x0[int, func(**bucketAcc) bool, func(string, string), func(string, partial)](&emitDistinctFn{})
	register.Iter1[*bucketAcc]()
	register.DoFn3x0[string, keptRows, func(string, partial)](&valueFn{})
	register.Combiner1[partial](&mergePartialFn{})
	register.Function2x0[string, func(string, partial)](zeroFn)

	register.DoFn3x1[string, partial, func(beam.X, int64), error](&countOutFn{})
	register.Function2x2[string, string, string, string](distinctKeyFn)
	register.Combiner1[string](&firstFn{})
	register.Function3x0[string, string, func(string, partial)](distinctPartialFn)

	register.DoFn3x1[string, partial, func(beam.X, float64), error](&sumOutFn{})
	register.DoFn3x1[string, partial, func(beam.X, float64), error](&meanOutFn{})

	register.DoFn3x0[string, keptRows, func(string, qelem)](&quantileValueFn{})
	register.Function2x0[string, func(string, qelem)](quantileZeroFn)
	register.DoFn3x1[string, func(*qelem) bool, func(beam.X, []float64), error](&quantilesOutFn{})

	register.Emitter2[int, *bucketAcc]()
	register.Emitter2[string, keptRows]()
	register.Emitter2[string, partial]()
	register.Emitter2[string, string]()
	register.Emitter2[string, qelem]()
	register.Emitter2[beam.X, int64]()
	register.Emitter2[beam.X, float64]()
	register.Emitter2[beam.X, []float64]()
	register.Iter1[qelem]()
}
