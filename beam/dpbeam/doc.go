// Package dpbeam runs differentially private aggregations on Apache Beam — on the
// Prism runner in-process, or on Flink, Spark or Google Cloud Dataflow — with noise
// from dpkit's mechanism package, the job's cost composed exactly by dpkit's privacy
// loss distributions (package pld), and a dpkit ledger deciding, before any worker
// reads data, whether the job may run.
//
// Its vocabulary follows Google's Privacy on Beam (privacy unit, partition,
// max_partitions, max_contributions, public partitions, partition selection); its
// code, accounting and ledger are dpkit's.
//
// # A job
//
//	spec, _ := dpbeam.NewPrivacySpec(dpbeam.PrivacySpecParams{
//		Job: "visits-2024-06", Budget: dpkit.Budget{Epsilon: 2, Delta: 1e-6}})
//	pcol, _ := dpbeam.MakePrivate(s, visits, spec, "UserID") // visits: PCollection<Visit>
//	pp := dpbeam.PartitionParams{Partition: "Day", MaxPartitions: 3, MaxContributions: 2,
//		Selection: dpkit.Budget{Epsilon: 0.5, Delta: 1e-6}}
//	counts, _ := dpbeam.Count(s, pcol, dpbeam.CountParams{PartitionParams: pp,
//		Budget: dpkit.Budget{Epsilon: 0.5}}) // PCollection<KV<Day, int64>>
//	sums, _ := dpbeam.SumPerKey(s, pcol, dpbeam.SumParams{PartitionParams: pp,
//		Value: "Minutes", Min: 0, Max: 120, Budget: dpkit.Budget{Epsilon: 0.5}})
//	res, err := spec.Reserve(ctx, ledger, "visits", dpbeam.ReserveOptions{})
//	if err != nil { … } // refused: nothing ran, nothing was charged
//	beamx.Run(ctx, p)
//
// MakePrivate names the field of the rows (structs) that identifies the privacy unit.
// The aggregations — Count, SumPerKey, MeanPerKey, QuantilesPerKey and DistinctPerKey
// — group by another field (PartitionParams.Partition) and return ordinary
// PCollections of KV<partition key, value>. Nothing else reads a PrivatePCollection.
// Each releases one value per partition over the whole input: rows in windows are
// aggregated together (in the global window), since the ledger charges one release per
// partition and per-window releases would each spend it.
//
// # Privacy
//
// Neighbouring inputs differ in all the rows of one privacy unit (add/remove). Every
// aggregation first bounds contributions (see the comment in bound.go): each unit keeps
// a uniformly random subset of at most MaxPartitions of its partitions and, in each, of
// at most MaxContributions rows (DistinctPerKey: distinct values). A per-partition
// statistic then changes by at most its sensitivity (MaxContributions for counts,
// MaxContributions·max(|Min|, |Max|) for sums) in at most MaxPartitions partitions, and
// each released value gets noise calibrated to that:
//
//   - Laplace noise: ε/MaxPartitions per partition (geometric noise for counts, secure
//     Laplace on a grid for sums), so the MaxPartitions partitions a unit changes cost
//     at most ε by basic composition;
//   - Gaussian noise: per partition, the discrete Gaussian whose PLD, composed
//     MaxPartitions times, has Gaussian-DP parameter at most μ(ε, δ), the μ whose curve
//     meets (ε, δ) — the ℓ2 calibration √MaxPartitions·Δ.
//
// Partitions are either public (PartitionParams.PublicPartitions: released all, with
// noise even when empty; rows of other partitions are dropped before bounding) or
// chosen by DP partition selection (mechanism.PartitionSelection: a partition of n
// units is released with the optimal probability of Desfontaines, Voss, Gipson and
// Mandayam at ε/MaxPartitions, δ/MaxPartitions per partition; PartitionParams.Selection
// is its budget). Each aggregation selects its partitions independently and pays for it.
//
// The noise and the partition selection draw from package noise's secure source
// (crypto/rand) with exact samplers, so the set of outputs does not depend on the data.
// The row sampling uses a generator seeded from crypto/rand and a hash keyed by 16
// bytes from crypto/rand; it only needs to be unbiased, since the bounds hold whatever
// it picks.
//
// # Accounting
//
// An aggregation registers with its PrivacySpec the mechanisms it runs per partition.
// PrivacySpec.Cost composes the whole job: the privacy loss distributions of all of
// them (each counted MaxPartitions times; partition selection as MaxPartitions
// canonical (ε', δ') pairs) by pld.Compose, and, independently, the sum of the
// aggregations' own guarantees; the job costs the smaller ε of the two certified
// bounds, at δ = Budget.Delta (Cost documents the rule). A job that does not fit its
// declared Budget is refused.
//
// # The ledger decides before the job runs
//
// PrivacySpec.Reserve records the job as one release of a dpkit ledger (package
// ledger, with the SQLite or PostgreSQL store the CLI and the service use), under the
// idempotency key "dpbeam:" + Job, with the job's aggregations and their mechanisms
// (JSON descriptors) as the release's description, in one ledger transaction that
// first checks the budget under its policy. A job that does not fit is refused with an
// error matching ledger.ErrBudgetExceeded, and nothing is recorded. Every DoFn of the
// job carries a ticket that Reserve stamps; Beam serializes the DoFns when the pipeline
// runs, and a worker whose ticket is not stamped fails in Setup (ErrNotReserved) before
// it processes a row.
//
// # Running a job again
//
// Reserving a job the ledger already holds charges nothing: the ledger recognises the
// key. But every run draws fresh noise, a fresh partition selection and a fresh row
// sample, so the outputs of r runs of the same job on the same data are r independent
// releases: together they reveal exactly what the r-fold composition of the job
// reveals, PrivacySpec.RerunCost(r), while the ledger records the job once. For a job
// of Laplace noise that is almost r times its ε (the example dpcount: (2, 10^−6) per
// run, (3.9996, 2·10^−6) for two); for Gaussian noise less (five Gaussian sums costing
// ε = 2.12 at δ = 10^−5: 3.02 at 2·10^−5 for two runs). Publishing one of several runs
// costs one run only if which one does not depend on the outputs (say, the first run
// that completed): choosing among runs by their values spends all of them.
//
// Reserve therefore refuses a second reservation of a job (ErrRerun, whose message
// states the two runs' cost) unless ReserveOptions.AllowRerun is set, which is for
// retrying a run whose outputs were never published (it failed, or was cancelled
// before writing). To avoid the question altogether, write a job's outputs durably and
// have readers use that first output; a changed job gets a new name (the same name
// with other aggregations or parameters is refused: ledger.ErrIdempotencyConflict).
//
// # Trust model
//
// As in Privacy on Beam, the pipeline's author is trusted with the raw data: nothing
// stops a DoFn upstream of MakePrivate from leaking it. The guarantee is about the
// outputs of the aggregations.
package dpbeam
