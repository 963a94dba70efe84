package verify

// Agree is (*Result).agree, for the external tests.
func (r *Result) Agree() bool { return r.agree() }
