package sim

import (
	"math"
	"math/rand/v2"
	"sort"
)

// zipf draws integers in [0, n) with weight 1/(k+1)^s; s = 0 is uniform.
// Unlike rand.Zipf it accepts any s >= 0.
type zipf struct {
	n   int
	cdf []float64 // nil when uniform
}

func newZipf(n int, s float64) zipf {
	z := zipf{n: n}
	if s <= 0 {
		return z
	}
	z.cdf = make([]float64, n)
	total := 0.0
	for k := range n {
		total += math.Pow(float64(k+1), -s)
		z.cdf[k] = total
	}
	for k := range z.cdf {
		z.cdf[k] /= total
	}
	return z
}

func (z zipf) pick(r *rand.Rand) int {
	if z.cdf == nil {
		return r.IntN(z.n)
	}
	return min(sort.SearchFloat64s(z.cdf, r.Float64()), z.n-1)
}
