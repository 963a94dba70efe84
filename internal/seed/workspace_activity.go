package seed

import (
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
	"github.com/tributary/tributary/projections/decimal"
)

// WorkspaceActivity counts documents per workspace and comments per
// workspace and per document, from Document and Comment items. The zero
// value is ready to use.
type WorkspaceActivity struct{}

var _ projections.Projection = (*WorkspaceActivity)(nil)

var (
	workspacePK = shape("PK", "WS#<ws>")
	documentSK  = shape("SK", "DOC#<doc>")
	commentSK   = shape("SK", "DOC#<doc>#CMT#<comment>")
)

// Name returns "workspace-activity".
func (*WorkspaceActivity) Name() string { return "workspace-activity" }

// EntityTypes returns Document and Comment.
func (*WorkspaceActivity) EntityTypes() []string { return []string{"Document", "Comment"} }

// Definition describes what the projection computes (see
// projections.Definer): a change to it is a change of definition.
func (*WorkspaceActivity) Definition() string {
	return "v1: Document PK=WS#<ws> SK=DOC#<doc> -> WS#<ws> documents=1; Comment SK=DOC#<doc>#CMT#<comment> -> WS#<ws> comments=1, WS#<ws>#DOC#<doc> comments=1"
}

// Contribute returns, for a document of workspace <ws>, the counter WS#<ws>
// with documents=1; for a comment on document <doc>, the counters WS#<ws> and
// WS#<ws>#DOC#<doc>, each with comments=1. A comment's ttl is not read: its
// expiry reaches the projection as a removal.
func (p *WorkspaceActivity) Contribute(item pipeline.Item) (projections.Contribution, error) {
	c, err := p.contribute(item)
	if err != nil {
		return projections.Contribution{}, fail(p.Name(), item, err)
	}
	return c, nil
}

func (*WorkspaceActivity) contribute(item pipeline.Item) (projections.Contribution, error) {
	typ, err := entityType(item, "Document", "Comment")
	if err != nil {
		return projections.Contribution{}, err
	}
	pk, err := workspacePK.parse(item)
	if err != nil {
		return projections.Contribution{}, err
	}
	ws := "WS#" + pk[0]
	if typ == "Document" {
		if _, err := documentSK.parse(item); err != nil {
			return projections.Contribution{}, err
		}
		return projections.Contribution{Counters: []projections.Counter{
			{Key: ws, Values: map[string]decimal.Decimal{"documents": one}},
		}}, nil
	}
	sk, err := commentSK.parse(item)
	if err != nil {
		return projections.Contribution{}, err
	}
	return projections.Contribution{Counters: []projections.Counter{
		{Key: ws, Values: map[string]decimal.Decimal{"comments": one}},
		{Key: ws + "#DOC#" + sk[0], Values: map[string]decimal.Decimal{"comments": one}},
	}}, nil
}
