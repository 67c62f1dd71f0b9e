package mechanism_test

import (
	"fmt"

	"github.com/dpkit/dpkit/mechanism"
)

func ExampleNewPartitionSelection() {
	// GROUP BY over keys nobody declared: each privacy unit holds at most 2 keys; the
	// selection spends (ε, δ) = (1, 1e-6) in all, (0.5, 5e-7) per key.
	m, err := mechanism.NewPartitionSelection(mechanism.PartitionSelectionOptions{
		Epsilon: 1, Delta: 1e-6, MaxPartitions: 2,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("per key:", m.PerPartition())
	// 10 units: δ'·(e^(10ε') − 1)/(e^ε' − 1) = 5e-7·147.41/0.64872 = 1.13618e-4.
	for _, n := range []int64{1, 2, 10, 30, 50} {
		fmt.Printf("a key held by %2d units is released with probability %.6g\n", n, m.ProbabilityKeep(n))
	}
	fmt.Println("always released from", m.CertainKeep(), "units on")

	_, err = mechanism.NewPartitionSelection(mechanism.PartitionSelectionOptions{Epsilon: 1, Delta: 0, MaxPartitions: 1})
	fmt.Println(err)
	// Output:
	// per key: (ε=0.5, δ=5e-07)
	// a key held by  1 units is released with probability 5e-07
	// a key held by  2 units is released with probability 1.32436e-06
	// a key held by 10 units is released with probability 0.000113618
	// a key held by 30 units is released with probability 0.902313
	// a key held by 50 units is released with probability 0.999996
	// always released from 54 units on
	// mechanism: invalid delta = 0: want in (0, 1): partition selection needs δ > 0 (a key held by a single unit is released with probability δ/max_partitions)
}
