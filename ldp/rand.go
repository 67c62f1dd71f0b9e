package ldp

import (
	"math"

	"github.com/dpkit/dpkit/noise"
)

// one53 is 2^53: uniform draws are 53-bit integers u ∈ [0, 2^53).
const one53 = 1 << 53

// draw53 returns a uniform integer in [0, 2^53) from src.
func draw53(src noise.Source) uint64 { return src.Uint64() >> 11 }

// bernoulliThreshold returns the integer G = ⌈p·2^53⌉ (p first raised by 10⁻¹⁵
// relative, which exceeds the rounding error of p's computation): the event
// draw53 < G has probability G/2^53 ≥ p, exactly. p is clamped to [0, 1].
func bernoulliThreshold(p float64) uint64 {
	if p <= 0 {
		return 0
	}
	g := math.Ceil(p * (1 + 1e-15) * one53)
	if g >= one53 {
		return one53
	}
	return uint64(g)
}

// intn returns a uniform integer in [0, n) from src, exactly (rejection sampling).
func intn(src noise.Source, n uint64) uint64 {
	if n&(n-1) == 0 {
		return src.Uint64() & (n - 1)
	}
	// Reject the top 2^64 mod n values so that every residue is equally likely.
	limit := -(-n % n) // 2^64 − (2^64 mod n), as uint64 (wraps to 0 when n divides 2^64)
	for {
		v := src.Uint64()
		if limit == 0 || v < limit {
			return v % n
		}
	}
}
