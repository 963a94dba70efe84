package repartitioner

import "github.com/tributary/tributary/internal/capabilities/export/repartition"

// Own returns the repartition's own form of j, for the external tests.
func (j JobConfig) Own() repartition.JobConfig { return j.job() }
