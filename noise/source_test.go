package noise

import (
	"math/bits"
	"sync"
	"testing"
)

// TestSecureBits checks that the secure source's words look uniform: over n = 4096 words
// the number of set bits is Binomial(64n, ½), mean 131072 and standard deviation 256; the
// test fails only beyond 6 standard deviations (probability < 2e-9 for a correct source).
func TestSecureBits(t *testing.T) {
	s := Secure()
	const n = 4096
	ones := 0
	for range n {
		ones += bits.OnesCount64(s.Uint64())
	}
	if d := ones - 64*n/2; d < -6*256 || d > 6*256 {
		t.Fatalf("set bits = %d, want 131072 ± 1536", ones)
	}
}

func TestSecureConcurrent(t *testing.T) {
	s := Secure()
	var wg sync.WaitGroup
	seen := make([][]uint64, 8)
	for g := range seen {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				seen[g] = append(seen[g], s.Uint64())
			}
		}()
	}
	wg.Wait()
	all := map[uint64]bool{}
	for _, ws := range seen {
		for _, w := range ws {
			if all[w] {
				t.Fatalf("word %#x handed out twice", w)
			}
			all[w] = true
		}
	}
}

func TestSeededReproducible(t *testing.T) {
	a, b, c := Seeded(1), Seeded(1), Seeded(2)
	same := true
	for range 10 {
		x, y, z := a.Uint64(), b.Uint64(), c.Uint64()
		if x != y {
			t.Fatal("two sources with the same seed differ")
		}
		same = same && x == z
	}
	if same {
		t.Fatal("sources with different seeds agree")
	}
}
