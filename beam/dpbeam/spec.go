package dpbeam

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strings"
	"sync"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/pld"
)

// pkg names this package in parameter errors.
const pkg = "dpbeam"

// MaxJobLen bounds the job name (it becomes the ledger's idempotency key "dpbeam:JOB").
const MaxJobLen = 200

// PrivacySpecParams configures a PrivacySpec.
type PrivacySpecParams struct {
	// Job names the job; required: 1 to MaxJobLen characters from A–Z a–z 0–9 . _ : @ - /.
	// It is the idempotency key of the job's release in the ledger: a second Reserve of
	// the same job is recognised and not charged again (see Reserve).
	Job string
	// Budget is the most the job may spend: its aggregations' releases, composed, must
	// fit it, or Reserve refuses the job. Required: ε finite and > 0, δ in [0, 1).
	Budget dpkit.Budget
	// Buckets is the number of keys of the contribution-bounding shuffle (default
	// DefaultBuckets, at most 2^20): each holds the bounded rows of 1/Buckets of the
	// privacy units. More buckets spread the work over more workers.
	Buckets int
}

// PrivacySpec is one differentially private job: its name, the most it may spend, and
// the aggregations built on its private collections. Each aggregation registers its
// mechanisms here while the pipeline is built; Reserve then composes them (package
// pld), checks the total against Budget and records it in a dpkit ledger, before any
// worker reads data. Workers refuse to start a job that was not reserved.
type PrivacySpec struct {
	job     string
	budget  dpkit.Budget
	buckets int
	key     [16]byte // keys the hash that picks the partitions kept per privacy unit

	mu       sync.Mutex
	aggs     []*aggregation
	ticket   *ticket
	reserved *Reservation

	test testOptions
}

// testOptions are set only by this package's tests (export_test.go).
type testOptions struct {
	noNoise bool   // release exact aggregates and keep every non-empty partition
	seed    uint64 // nonzero: sample rows by a seeded hash instead of fresh randomness
	// noiseSeed, nonzero, draws each partition's noise and selection from
	// noise.Seeded(h), h a hash of noiseSeed, the aggregation and the partition (not
	// private: reproducible statistical tests).
	noiseSeed uint64
	flushRows int // nonzero: the bounding DoFn emits its accumulators every flushRows rows, not only when its bundle ends
}

// NewPrivacySpec validates p and returns an empty job.
func NewPrivacySpec(p PrivacySpecParams) (*PrivacySpec, error) {
	if err := checkJob(p.Job); err != nil {
		return nil, err
	}
	if err := dpkit.CheckPositive("budget.epsilon", p.Budget.Epsilon); err != nil {
		return nil, dpkit.InPackage(pkg, err)
	}
	if math.IsNaN(p.Budget.Delta) || p.Budget.Delta < 0 || p.Budget.Delta >= 1 {
		return nil, &dpkit.ParamError{Pkg: pkg, Name: "budget.delta", Value: p.Budget.Delta, Want: "in [0, 1)"}
	}
	if p.Buckets < 0 || p.Buckets > 1<<20 {
		return nil, &dpkit.ParamError{Pkg: pkg, Name: "buckets", Value: p.Buckets, Want: "an integer in [0, 2^20] (0: DefaultBuckets)"}
	}
	s := &PrivacySpec{job: p.Job, budget: p.Budget, buckets: p.Buckets, ticket: &ticket{Job: p.Job}}
	if s.buckets == 0 {
		s.buckets = DefaultBuckets
	}
	_, _ = rand.Read(s.key[:]) // crypto/rand.Read does not fail (Go ≥ 1.24)
	return s, nil
}

func checkJob(job string) error {
	want := fmt.Sprintf("1 to %d characters from A-Z a-z 0-9 . _ : @ - /", MaxJobLen)
	if len(job) < 1 || len(job) > MaxJobLen {
		return &dpkit.ParamError{Pkg: pkg, Name: "job", Value: job, Want: want}
	}
	for _, r := range job {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:@-/", r)) {
			return &dpkit.ParamError{Pkg: pkg, Name: "job", Value: job, Want: want}
		}
	}
	return nil
}

// Job returns the job's name.
func (s *PrivacySpec) Job() string { return s.job }

// Budget returns the most the job may spend.
func (s *PrivacySpec) Budget() dpkit.Budget { return s.budget }

// aggregation is one DP aggregation of the job, as the accounting and the ledger see
// it: the mechanisms it runs on each partition and on the partition set.
type aggregation struct {
	Name             string                 `json:"name"`
	MaxPartitions    int64                  `json:"max_partitions"`
	MaxContributions int64                  `json:"max_contributions"`
	PerPartition     []mechanism.Descriptor `json:"per_partition"`       // run on each released partition
	Selection        *mechanism.Descriptor  `json:"selection,omitempty"` // DP partition selection
	PublicPartitions int                    `json:"public_partitions,omitempty"`

	guarantee dpkit.Budget    // certified (ε, δ) of the noise, then of the whole aggregation
	plds      []pld.Mechanism // per partition, each run for max_partitions partitions
	sel       *mechanism.PartitionSelection
	items     []pld.Item
}

// register adds a to the job. It fails once the job is reserved: a reserved job's
// releases are fixed.
func (s *PrivacySpec) register(a *aggregation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reserved != nil {
		return fmt.Errorf("dpbeam: job %q is already reserved in the ledger: aggregation %s cannot be added to it (build every aggregation before Reserve)", s.job, a.Name)
	}
	base, n := a.Name, 1
	for s.hasName(a.Name) {
		n++
		a.Name = fmt.Sprintf("%s#%d", base, n)
	}
	for _, m := range a.plds {
		a.items = append(a.items, pld.Item{Mechanism: m, Count: a.MaxPartitions})
	}
	if a.sel != nil {
		a.items = append(a.items, a.sel.PLDItems()...)
		d := a.sel.Descriptor()
		a.Selection = &d
		a.guarantee = sumBudgets(a.guarantee, a.sel.Guarantee())
	}
	s.aggs = append(s.aggs, a)
	return nil
}

func (s *PrivacySpec) hasName(name string) bool {
	for _, a := range s.aggs {
		if a.Name == name {
			return true
		}
	}
	return false
}

// Cost is what a job spends: the (ε, δ) Reserve charges, and how it was obtained.
type Cost struct {
	dpkit.Budget
	// Method is "pld" when the privacy loss distributions of all the job's mechanisms
	// were composed (package pld; Epsilon is the upper end of its certified bracket at
	// Delta), or "basic" when the sum of the aggregations' guarantees was smaller (or
	// the job's δ is 0, where the sum is exact for pure-ε mechanisms).
	Method string `json:"method"`
	// Aggregations lists each aggregation's own certified (ε, δ).
	Aggregations map[string]dpkit.Budget `json:"aggregations"`
}

// Cost composes the job's aggregations and returns what the job spends: of two
// certified upper bounds, the one with the smaller ε (the sum of the aggregations'
// guarantees on a tie):
//
//   - the PLD composition of every mechanism the job runs (Laplace and Gaussian noise
//     per partition, k = max_partitions of them per privacy unit; partition selection
//     as k copies of its per-key (ε', δ') pair): ε at δ = Budget().Delta (when > 0);
//   - the sum of the aggregations' guarantees (basic composition, Dwork and Roth
//     Thm 3.16), (Σ ε_i, Σ δ_i), when Σ δ_i ≤ Budget().Delta.
//
// A job whose mechanisms are all pure-ε (Laplace noise, public partitions) and whose
// Budget has δ = 0 is thus charged (Σ ε_i, 0). It is an *dpkit.InfeasibleError when the
// job does not fit its Budget, or has no aggregation.
func (s *PrivacySpec) Cost() (Cost, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cost()
}

func (s *PrivacySpec) cost() (Cost, error) {
	best, basic, err := s.composed(1)
	if err != nil {
		return Cost{}, err
	}
	if best.Method == "" || best.Epsilon > s.budget.Epsilon {
		return best, &dpkit.InfeasibleError{Msg: fmt.Sprintf(
			"dpbeam: job %q does not fit its budget %v: its %d aggregation(s) compose to ε = %.6g at δ = %g (by PLD), and their guarantees sum to %v (basic composition)",
			s.job, s.budget, len(s.aggs), best.Epsilon, best.Delta, basic.Budget)}
	}
	return best, nil
}

// MaxRuns is the largest number of runs RerunCost accepts.
const MaxRuns = 1000

// RerunCost returns what publishing the outputs of runs independent runs of the job
// costs: every run draws fresh noise (and a fresh partition selection and row sample),
// so the outputs of runs runs are the runs-fold composition of the job's releases. It
// is composed as Cost composes one run, with each mechanism counted runs times: by PLD
// at δ = runs·Budget().Delta, or runs times the sum of the aggregations' guarantees,
// whichever gives the smaller ε (Method says which). RerunCost(1) is Cost. The result
// is not checked against Budget, which is for one run.
func (s *PrivacySpec) RerunCost(runs int) (Cost, error) {
	if runs < 1 || runs > MaxRuns {
		return Cost{}, &dpkit.ParamError{Pkg: pkg, Name: "runs", Value: runs, Want: fmt.Sprintf("an integer in [1, %d]", MaxRuns)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if runs == 1 {
		return s.cost()
	}
	best, _, err := s.composed(int64(runs))
	if err == nil && best.Method == "" {
		err = &dpkit.InfeasibleError{Msg: fmt.Sprintf("dpbeam: job %q: no finite ε for %d runs at δ = %g", s.job, runs, best.Delta)}
	}
	return best, err
}

// composed composes runs copies of the job's aggregations: the smaller-ε of the PLD
// composition at δ = runs·Budget.Delta and the basic sum (which it also returns). Method
// is empty when neither applies (the basic sum's δ is over the target and the target
// is 0).
func (s *PrivacySpec) composed(runs int64) (best, basic Cost, err error) {
	if len(s.aggs) == 0 {
		return Cost{}, Cost{}, &dpkit.InfeasibleError{Msg: fmt.Sprintf("dpbeam: job %q has no aggregation to release", s.job)}
	}
	aggs := map[string]dpkit.Budget{}
	var eps, delta big.Rat
	var items []pld.Item
	for _, a := range s.aggs {
		aggs[a.Name] = a.guarantee
		eps.Add(&eps, new(big.Rat).SetFloat64(a.guarantee.Epsilon))
		delta.Add(&delta, new(big.Rat).SetFloat64(a.guarantee.Delta))
		for _, it := range a.items {
			it.Count *= runs
			items = append(items, it)
		}
	}
	r := new(big.Rat).SetInt64(runs)
	eps.Mul(&eps, r)
	delta.Mul(&delta, r)
	basic = Cost{Budget: dpkit.Budget{Epsilon: ratUp(&eps), Delta: ratUp(&delta)}, Method: "basic", Aggregations: aggs}
	target := s.budget.Delta * float64(runs) // a δ to report at: rounding only moves where ε is read
	best = Cost{Budget: dpkit.Budget{Epsilon: math.Inf(1), Delta: target}, Aggregations: aggs}
	if basic.Delta <= target {
		best = basic
	}
	if target > 0 && target < 1 {
		comp, err := pld.Compose(items, &pld.Options{Delta: target})
		if err != nil {
			return Cost{}, Cost{}, err
		}
		up, _, err := comp.Epsilon(target)
		if err == nil && up < best.Epsilon {
			best = Cost{Budget: dpkit.Budget{Epsilon: up, Delta: target}, Method: "pld", Aggregations: aggs}
		}
	}
	return best, basic, nil
}

// describe returns the job's description for the ledger: its name and aggregations.
func (s *PrivacySpec) describe() (string, error) {
	b, err := json.Marshal(struct {
		Job          string         `json:"job"`
		Aggregations []*aggregation `json:"aggregations"`
	}{s.job, s.aggs})
	return string(b), err
}

// ratUp returns the smallest float64 ≥ r.
func ratUp(r *big.Rat) float64 {
	f, _ := r.Float64()
	if new(big.Rat).SetFloat64(f).Cmp(r) < 0 {
		f = math.Nextafter(f, math.Inf(1))
	}
	return f
}

// divDown returns x/k rounded down: the largest float64 y with k·y ≤ x (k ≥ 1, x ≥ 0).
func divDown(x float64, k int64) float64 {
	y := x / float64(k)
	prod := new(big.Rat).Mul(new(big.Rat).SetFloat64(y), new(big.Rat).SetInt64(k))
	for y > 0 && prod.Cmp(new(big.Rat).SetFloat64(x)) > 0 {
		y = math.Nextafter(y, 0)
		prod.Mul(new(big.Rat).SetFloat64(y), new(big.Rat).SetInt64(k))
	}
	return y
}
