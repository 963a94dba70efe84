package seed

import (
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

// CommentsTable is the shipped example transform, "comments-table": it moves
// every Comment item of the documents domain from its place in the
// workspace's item collection (PK=WS#<ws>, SK=DOC#<doc>#CMT#<c>) to a key
// of its own for a comments table, PK=DOC#<doc>, SK=CMT#<c>. The document
// and comment IDs come from the docId and commentId attributes, or else from
// the old sort key. The old keys are kept as workspacePK and sourceSK, so
// nothing is lost; every other attribute is copied as it is.
func CommentsTable() *projections.Transform {
	return &projections.Transform{
		Name: "comments-table",
		Doc:  "move Comment items to PK=DOC#<doc>, SK=CMT#<comment> for a comments table of their own",
		Keys: []string{"PK", "SK"},
		ByType: map[string]projections.TransformFunc{
			"Comment": moveComment,
		},
	}
}

func moveComment(item pipeline.Item) ([]pipeline.Item, error) {
	doc, cmt := stringAttr(item, "docId"), stringAttr(item, "commentId")
	sk := stringAttr(item, "SK")
	if doc == "" || cmt == "" {
		// SK = DOC#<doc>#CMT#<c>
		d, c, ok := strings.Cut(strings.TrimPrefix(sk, "DOC#"), "#CMT#")
		if !ok || !strings.HasPrefix(sk, "DOC#") || d == "" || c == "" {
			return nil, errors.New("no docId/commentId, and the SK is not DOC#<doc>#CMT#<comment>")
		}
		if doc == "" {
			doc = d
		}
		if cmt == "" {
			cmt = c
		}
	}
	out := make(pipeline.Item, len(item)+2)
	for k, v := range item {
		out[k] = v
	}
	if pk, ok := item["PK"]; ok {
		out["workspacePK"] = pk
	}
	if v, ok := item["SK"]; ok {
		out["sourceSK"] = v
	}
	out["PK"] = &types.AttributeValueMemberS{Value: "DOC#" + doc}
	out["SK"] = &types.AttributeValueMemberS{Value: "CMT#" + cmt}
	return []pipeline.Item{out}, nil
}

func stringAttr(item pipeline.Item, name string) string {
	if s, ok := item[name].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}
