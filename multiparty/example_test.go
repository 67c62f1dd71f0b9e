package multiparty_test

import (
	"fmt"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/multiparty"
)

func ExampleXORAccuracy() {
	// Three parties at ε = (1, 1, 2): ½(1 + tanh(½)² tanh(1)).
	pr, _ := multiparty.NewProtocol([]dpkit.Budget{{Epsilon: 1}, {Epsilon: 1}, {Epsilon: 2}})
	avg, _ := multiparty.AverageAccuracy(pr, multiparty.XOR())
	fmt.Printf("closed form %.6f, Bayes rule %.6f\n", multiparty.XORAccuracy(pr), avg)
	// Output:
	// closed form 0.581320, Bayes rule 0.581320
}

func ExampleWorstCaseAccuracy() {
	pr, _ := multiparty.NewProtocol([]dpkit.Budget{{Epsilon: 1}, {Epsilon: 1}, {Epsilon: 1}})
	avg, _ := multiparty.AverageAccuracy(pr, multiparty.AND(3))
	wc, err := multiparty.WorstCaseAccuracy(pr, multiparty.AND(3))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("AND of 3: average %.4f, worst case %.4f\n", avg, wc.Accuracy)
	// Output:
	// AND of 3: average 0.8750, worst case 0.6071
}
