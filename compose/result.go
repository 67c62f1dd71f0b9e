package compose

// Theorem names a composition theorem.
type Theorem string

// The composition theorems dpkit evaluates, from loosest to tightest.
const (
	Basic Theorem = "basic" // KOV Thm 3.1: (Σ ε_ℓ, Σ δ_ℓ)
	DRV   Theorem = "drv"   // Dwork–Rothblum–Vadhan advanced composition (KOV Thm 3.2)
	KOV   Theorem = "kov"   // KOV Thm 3.4 (homogeneous) / Thm 3.5 (heterogeneous) closed forms
	Exact Theorem = "exact" // KOV Thm 3.3, the optimum, evaluated at any ε
)

// Theorems lists the theorems in the order reports show them.
var Theorems = []Theorem{Basic, DRV, KOV, Exact}

// Result is an (Epsilon, Delta) guarantee for a composition. One of the two was the
// target given by the caller; the other was computed and is never below the optimum
// for the theorem. Lower is a certified lower bound on that computed value for the exact
// theorem (equal to it up to rounding when Exact is true); for the closed-form theorems,
// which are bounds rather than optima, Lower equals the computed value.
type Result struct {
	Theorem Theorem
	Epsilon float64
	Delta   float64
	Lower   float64
	Exact   bool
}
