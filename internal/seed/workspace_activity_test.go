package seed_test

import (
	"testing"

	"github.com/tributary/tributary/internal/seed"
)

func TestWorkspaceActivity(t *testing.T) {
	testGolden(t, &seed.WorkspaceActivity{}, "workspace_activity", []goldenCase{
		{name: "document"},
		{name: "comment"},
		{name: "comment_without_ttl"},
		{name: "error_document_with_comment_sk", wantErr: true},
		{name: "error_comment_with_document_sk", wantErr: true},
		{name: "error_unknown_entity_type", wantErr: true},
		{name: "error_pk_shape", wantErr: true},
		{name: "error_empty_doc_id", wantErr: true},
	})
}
