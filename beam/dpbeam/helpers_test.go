package dpbeam

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/ledger"
	"github.com/dpkit/dpkit/ledger/sqlite"
)

func TestMain(m *testing.M) {
	// Prism logs every job at INFO; keep the test output to warnings.
	beamlog.LogLevel = "warn"
	os.Exit(ptest.MainRet(m))
}

// row is the test data: a visit by a user on a day, with an amount and an item.
type row struct {
	User   string
	Day    int
	Amount float64
	Item   int
}

// outputs collects the elements of a pipeline's output PCollections, by name. Prism
// runs the workers in this process, so a DoFn can write to it.
var outputs = struct {
	sync.Mutex
	m map[string][]kv
}{m: map[string][]kv{}}

type kv struct {
	K any
	V any
}

type collectFn struct{ Name string }

func (fn *collectFn) ProcessElement(k beam.X, v beam.Y) {
	outputs.Lock()
	outputs.m[fn.Name] = append(outputs.m[fn.Name], kv{k, v})
	outputs.Unlock()
}

func init() {
	register.DoFn2x0[beam.X, beam.Y](&collectFn{})
	beam.RegisterType(reflect.TypeOf(row{}))
}

// collect adds a sink for col named name (unique per test run) and returns a function
// that reads what it received once the pipeline has run.
func collect(s beam.Scope, t *testing.T, col beam.PCollection, name string) func() []kv {
	id := fmt.Sprintf("%s/%s", t.Name(), name)
	outputs.Lock()
	delete(outputs.m, id)
	outputs.Unlock()
	beam.ParDo0(s, &collectFn{Name: id}, col)
	return func() []kv {
		outputs.Lock()
		defer outputs.Unlock()
		return append([]kv(nil), outputs.m[id]...)
	}
}

// run executes p on Prism in this process.
func run(t *testing.T, p *beam.Pipeline) error {
	t.Helper()
	_, err := runBench(p)
	return err
}

func runBench(p *beam.Pipeline) (beam.PipelineResult, error) {
	return prism.Execute(context.Background(), p)
}

func newBenchLedger(b *testing.B) *ledger.Ledger {
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "ledger.db"), &sqlite.Options{Create: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	l := ledger.New(st)
	if _, err := l.Create(context.Background(), ledger.Spec{ID: "data", Total: dpkit.Budget{Epsilon: 1e6, Delta: 0.5}, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}}); err != nil {
		b.Fatal(err)
	}
	return l
}

// newLedger returns a ledger in a fresh SQLite file with an adaptive (basic filter)
// budget "data" of total b.
func newLedger(t *testing.T, b dpkit.Budget) *ledger.Ledger {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), &sqlite.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l := ledger.New(st)
	if _, err := l.Create(ctx, ledger.Spec{ID: "data", Total: b, Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}}); err != nil {
		t.Fatal(err)
	}
	return l
}
