// Command dpcount counts visits and averages their length per day with differential
// privacy, on Apache Beam: locally on the Prism runner by default, on Flink or Google
// Cloud Dataflow with Beam's usual flags (see README.md). The job is reserved in a
// dpkit ledger before it runs; a job the ledger already holds is refused.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/beam/dpbeam"
	"github.com/dpkit/dpkit/ledger"
	"github.com/dpkit/dpkit/ledger/postgres"
	"github.com/dpkit/dpkit/ledger/sqlite"
)

var (
	input      = flag.String("input", "", "CSV file(s) of visits: user,day,minutes per line (a glob; gs:// on Dataflow); empty: generate --rows synthetic visits")
	rows       = flag.Int("rows", 100000, "synthetic visits to generate when --input is empty")
	output     = flag.String("output", "", "output file prefix (gs:// on Dataflow); empty: print the results")
	job        = flag.String("job", "dpcount-example", "job name: the ledger's idempotency key")
	ledgerPath = flag.String("ledger", "dpcount-ledger.db", "SQLite ledger file (created when missing)")
	pgURL      = flag.String("postgres", "", "PostgreSQL ledger URL (instead of --ledger)")
	budgetID   = flag.String("budget", "visits", "ledger budget to spend on (created when missing, with --budget-epsilon and --budget-delta, adaptive basic filter)")
	budgetEps  = flag.Float64("budget-epsilon", 10, "total ε of a budget created by this command")
	budgetDel  = flag.Float64("budget-delta", 1e-5, "total δ of a budget created by this command")
	allowRerun = flag.Bool("allow-rerun", false, "run a job the ledger already holds (only if its earlier outputs were never published)")
	logLevel   = flag.String("log_level", "warn", "Beam's log level: debug, info, warn or error")
)

// Visit is one input row.
type Visit struct {
	User    string
	Day     int
	Minutes float64
}

func init() {
	beam.RegisterType(reflect.TypeOf(Visit{}))
	register.DoFn2x1[string, func(Visit), error](&parseFn{})
	register.DoFn2x0[int, func(Visit)](&generateFn{})
	register.Emitter1[Visit]()
	register.Function3x1(formatFn)
	register.Iter1[float64]()
	register.Iter1[int64]()
	register.Function1x0(printFn)
}

// parseFn reads "user,day,minutes" lines; a malformed line fails the job (it names the
// line number only, not its contents, which are private).
type parseFn struct{ n int }

func (fn *parseFn) ProcessElement(line string, emit func(Visit)) error {
	fn.n++
	f := strings.Split(strings.TrimSpace(line), ",")
	if len(f) == 1 && f[0] == "" {
		return nil
	}
	if len(f) != 3 {
		return fmt.Errorf("dpcount: input line %d of this shard: want user,day,minutes", fn.n)
	}
	day, err1 := strconv.Atoi(f[1])
	minutes, err2 := strconv.ParseFloat(f[2], 64)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("dpcount: input line %d of this shard: day must be an integer and minutes a number", fn.n)
	}
	emit(Visit{User: f[0], Day: day, Minutes: minutes})
	return nil
}

// generateFn makes shard i of N synthetic visits: users with about 10 visits over 14
// days, 5 to 60 minutes long.
type generateFn struct{ Rows, Shards int }

func (fn *generateFn) ProcessElement(shard int, emit func(Visit)) {
	n := fn.Rows / fn.Shards
	users := max(fn.Rows/10, 1)
	for j := range n {
		i := shard*n + j
		emit(Visit{User: fmt.Sprintf("user%06d", (i*7919)%users), Day: 1 + (i/3)%14, Minutes: float64(5 + (i*31)%56)})
	}
}

func formatFn(day int, counts func(*int64) bool, means func(*float64) bool) string {
	var c int64
	var m float64
	hasC, hasM := counts(&c), means(&m)
	s := fmt.Sprintf("day=%d", day)
	if hasC {
		s += fmt.Sprintf(" visits=%d", c)
	}
	if hasM {
		s += fmt.Sprintf(" mean_minutes=%.1f", m)
	}
	return s
}

func printFn(line string) { fmt.Println(line) }

func main() {
	flag.Parse()
	switch *logLevel {
	case "debug", "info", "warn", "error":
		beamlog.LogLevel = *logLevel // before beam.Init, which sets up Beam's logging
	default:
		fmt.Fprintf(os.Stderr, "dpcount: --log_level=%q: want debug, info, warn or error\n", *logLevel)
		os.Exit(2)
	}
	beam.Init()
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	p, s := beam.NewPipelineWithRoot()
	var visits beam.PCollection
	if *input != "" {
		visits = beam.ParDo(s, &parseFn{}, textio.Read(s, *input))
	} else {
		shards := make([]int, 16)
		for i := range shards {
			shards[i] = i
		}
		visits = beam.ParDo(s, &generateFn{Rows: *rows, Shards: len(shards)}, beam.CreateList(s, shards))
	}

	// The job: at most (ε, δ) = (2, 10^-6) in all. Days are not known in advance, so
	// they are chosen by DP partition selection; each user counts in at most 3 days,
	// with at most 2 visits a day.
	spec, err := dpbeam.NewPrivacySpec(dpbeam.PrivacySpecParams{Job: *job, Budget: dpkit.Budget{Epsilon: 2, Delta: 1e-6}})
	if err != nil {
		return err
	}
	pcol, err := dpbeam.MakePrivate(s, visits, spec, "User")
	if err != nil {
		return err
	}
	pp := dpbeam.PartitionParams{Partition: "Day", MaxPartitions: 3, MaxContributions: 2,
		Selection: dpkit.Budget{Epsilon: 0.5, Delta: 5e-7}}
	counts, err := dpbeam.Count(s, pcol, dpbeam.CountParams{PartitionParams: pp, Budget: dpkit.Budget{Epsilon: 0.5}})
	if err != nil {
		return err
	}
	means, err := dpbeam.MeanPerKey(s, pcol, dpbeam.SumParams{PartitionParams: pp, Value: "Minutes", Min: 0, Max: 120,
		Budget: dpkit.Budget{Epsilon: 0.5}})
	if err != nil {
		return err
	}
	lines := beam.ParDo(s, formatFn, beam.CoGroupByKey(s, counts, means))
	if *output != "" {
		textio.Write(s, *output, lines)
	} else {
		beam.ParDo0(s, printFn, lines)
	}

	// The ledger decides before any worker reads data.
	l, closeLedger, err := openLedger(ctx)
	if err != nil {
		return err
	}
	defer closeLedger()
	res, err := spec.Reserve(ctx, l, *budgetID, dpbeam.ReserveOptions{AllowRerun: *allowRerun})
	if errors.Is(err, dpbeam.ErrRerun) {
		return fmt.Errorf("%w\n(choose another --job for a new job, or delete %s to start over; --allow-rerun retries a run whose outputs were never published)", err, *ledgerPath)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "dpcount: job %q reserved on budget %q: %v (%s composition), ledger release %d\n",
		*job, *budgetID, res.Cost.Budget, res.Cost.Method, res.Release.Seq)
	return beamx.Run(ctx, p)
}

// openLedger opens the SQLite (or PostgreSQL) ledger and creates the budget when
// missing.
func openLedger(ctx context.Context) (*ledger.Ledger, func(), error) {
	var store ledger.Store
	var closeFn func()
	if *pgURL != "" {
		st, err := postgres.Open(ctx, *pgURL, &postgres.Options{Create: true})
		if err != nil {
			return nil, nil, err
		}
		store, closeFn = st, func() { st.Close() }
	} else {
		st, err := sqlite.Open(ctx, *ledgerPath, &sqlite.Options{Create: true})
		if err != nil {
			return nil, nil, err
		}
		store, closeFn = st, func() { st.Close() }
	}
	l := ledger.New(store)
	if _, err := l.Definition(ctx, *budgetID); errors.Is(err, ledger.ErrUnknownBudget) {
		_, err = l.Create(ctx, ledger.Spec{ID: *budgetID, Total: dpkit.Budget{Epsilon: *budgetEps, Delta: *budgetDel},
			Policy: ledger.Policy{Kind: ledger.Adaptive, Filter: ledger.BasicFilter}})
		if err != nil {
			closeFn()
			return nil, nil, err
		}
	} else if err != nil {
		closeFn()
		return nil, nil, err
	}
	return l, closeFn, nil
}
