// Package streamerr marks the errors of the stream services' APIs (Kinesis
// Data Streams, DynamoDB Streams) for the shard reader: each source gives
// its own service's error codes and the shardread errors they stand for
// (throttling, an expired iterator, trimmed records), and Wrap names the
// call and keeps the service's error, so that pipeline/shardread matches
// kinds with errors.Is and never sees an AWS error code.
package streamerr

import (
	"errors"
	"fmt"

	"github.com/aws/smithy-go"

	"github.com/tributary/tributary/pipeline/shardread"
)

// notFound is the code of a missing resource: on a shard's call, the shard
// (shardread.ErrShardNotFound); on a stream-level call, the stream, which no
// retry finds.
const notFound = "ResourceNotFoundException"

// Wrap returns err, from call op of source pkg on stream (and shard, ""
// for stream-level calls), wrapped with where it happened and, when its
// code is in kinds (or is a missing shard), with the shardread error it
// stands for. err stays in the chain: errors.As still finds the service's
// error.
func Wrap(pkg string, kinds map[string]error, err error, op, stream, shard string) error {
	where := "stream " + stream
	if shard != "" {
		where += ", shard " + shard
	}
	var kind error
	if apiErr, ok := errors.AsType[smithy.APIError](err); ok {
		kind = kinds[apiErr.ErrorCode()]
		if apiErr.ErrorCode() == notFound && shard != "" {
			kind = shardread.ErrShardNotFound
		}
	}
	if kind != nil {
		return fmt.Errorf("%s: %s on %s: %w: %w", pkg, op, where, kind, err)
	}
	return fmt.Errorf("%s: %s on %s: %w", pkg, op, where, err)
}
