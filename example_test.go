package dpkit_test

import (
	"fmt"

	"github.com/dpkit/dpkit"
)

func ExampleBudget_Validate() {
	fmt.Println(dpkit.Budget{Epsilon: 1, Delta: 1e-6}.Validate())
	fmt.Println(dpkit.Budget{Epsilon: 1, Delta: 2}.Validate())
	// Output:
	// <nil>
	// dpkit: invalid delta = 2: want in [0, 1]
}
