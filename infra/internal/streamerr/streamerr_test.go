package streamerr

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/tributary/tributary/pipeline/shardread"
)

func TestWrap(t *testing.T) {
	kinds := map[string]error{"SlowDown": shardread.ErrThrottled, "Old": shardread.ErrExpiredIterator}
	tests := []struct {
		name     string
		err      error
		shard    string
		want     error // the kind; nil: none
		wantText string
	}{
		{"a listed code", &smithy.GenericAPIError{Code: "SlowDown"}, "shardId-1", shardread.ErrThrottled, "src: GetRecords on stream s, shard shardId-1: throttled: api error SlowDown"},
		{"another", &smithy.GenericAPIError{Code: "Old"}, "shardId-1", shardread.ErrExpiredIterator, ""},
		{"a missing shard", &smithy.GenericAPIError{Code: "ResourceNotFoundException"}, "shardId-1", shardread.ErrShardNotFound, ""},
		{"a missing stream", &smithy.GenericAPIError{Code: "ResourceNotFoundException"}, "", nil, "src: GetRecords on stream s: api error ResourceNotFoundException"},
		{"an unlisted code", &smithy.GenericAPIError{Code: "AccessDeniedException"}, "shardId-1", nil, ""},
		{"a listed code deep in the chain", errors.Join(errors.New("retry quota exceeded"), &smithy.GenericAPIError{Code: "SlowDown"}), "", shardread.ErrThrottled, ""},
		{"not a service error", io.ErrUnexpectedEOF, "shardId-1", nil, "src: GetRecords on stream s, shard shardId-1: unexpected EOF"},
	}
	all := []error{shardread.ErrThrottled, shardread.ErrExpiredIterator, shardread.ErrShardNotFound, shardread.ErrTrimmed}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Wrap("src", kinds, tt.err, "GetRecords", "s", tt.shard)
			for _, k := range all {
				if errors.Is(err, k) != (k == tt.want) {
					t.Errorf("errors.Is(%v) = %v, want %v: %v", k, !(k == tt.want), k == tt.want, err)
				}
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("the service's error is not in the chain: %v", err)
			}
			if tt.wantText != "" && !strings.HasPrefix(err.Error(), tt.wantText) {
				t.Errorf("error %q, want it to start %q", err, tt.wantText)
			}
		})
	}
}
