package reimport

import (
	"context"

	"github.com/tributary/tributary/internal/capabilities/export/repartition"
)

// Names the external tests read.
const CheckpointDir = checkpointDir

// VerifyPart is (*Output).verifyPart, for the external tests.
func (o *Output) VerifyPart(ctx context.Context, p repartition.PartInfo) error {
	return o.verifyPart(ctx, p)
}
