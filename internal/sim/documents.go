package sim

import (
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/pipeline"
)

var plans = []string{"FREE", "TEAM", "ENTERPRISE"}

func (g *generator) workspace() Op {
	i := g.workspaces.pick(g.r)
	pk := "WS#w" + strconv.Itoa(i)
	cur := g.t.Get(pk, "META")
	if cur == nil {
		return g.put(pipeline.Item{
			attrPK: str(pk), attrSK: str("META"), attrType: str("Workspace"),
			"name": str("Workspace " + strconv.Itoa(i)),
			"plan": str(g.pickString(plans)),
		}, "workspace-create")
	}
	if g.r.Float64() < 0.9 {
		item := content(cur)
		item["plan"] = str(g.pickString(plans))
		item["updatedAt"] = str(g.stamp())
		return g.put(item, "workspace-update")
	}
	return g.del(cur, "workspace-delete")
}

var titles = []string{"Roadmap", "Launch plan", "Q1 \"OKRs\"", "Notes — café", "Runbook\nv2"}

func (g *generator) newDocument(pk, sk, id string) pipeline.Item {
	return pipeline.Item{
		attrPK: str(pk), attrSK: str(sk), attrType: str("Document"),
		"docId": str(id),
		"title": str(g.pickString(titles)),
		"tags":  &types.AttributeValueMemberSS{Value: []string{"draft", g.pickString([]string{"eng", "ops", "sales"})}},
		"meta": &types.AttributeValueMemberM{Value: pipeline.Item{
			"words": num(int64(g.r.IntN(5000))),
			"lang":  str(g.pickString([]string{"en", "fr", "ja"})),
		}},
	}
}

// doc is a document the workload created, and the comments made on it.
type doc struct {
	id, sk   string
	comments []string // SKs
}

func (g *generator) document() Op {
	i := g.workspaces.pick(g.r)
	pk := "WS#w" + strconv.Itoa(i)
	if len(g.docs[i]) == 0 || g.r.Float64() < 0.3 {
		id := g.id("d")
		d := &doc{id: id, sk: "DOC#" + id}
		g.docs[i] = append(g.docs[i], d)
		return g.put(g.newDocument(pk, d.sk, id), "doc-create")
	}
	d := g.docs[i][g.r.IntN(len(g.docs[i]))]
	cur := g.t.Get(pk, d.sk)
	if cur == nil {
		return g.put(g.newDocument(pk, d.sk, d.id), "doc-recreate")
	}
	item := content(cur)
	switch u := g.r.Float64(); {
	case u < 0.45:
		item["title"] = str(g.pickString(titles) + " " + strconv.Itoa(g.r.IntN(100)))
		return g.put(item, "doc-edit")
	case u < 0.6:
		item["tags"] = &types.AttributeValueMemberSS{Value: []string{"final", g.pickString([]string{"eng", "ops", "sales"})}}
		return g.put(item, "doc-tags")
	case u < 0.8:
		switch entityType(cur) {
		case "Template":
			item[attrType] = str("Document")
			return g.put(item, "template-to-doc")
		case "Document":
			if g.commentless(pk, d) {
				item[attrType] = str("Template")
				return g.put(item, "doc-to-template")
			}
		}
		item["title"] = str(g.pickString(titles))
		return g.put(item, "doc-edit")
	}
	return g.del(cur, "doc-delete")
}

// commentless reports whether a document has no live comments.
func (g *generator) commentless(pk string, d *doc) bool {
	for _, sk := range d.comments {
		if g.t.Get(pk, sk) != nil {
			return false
		}
	}
	return true
}

var commentBodies = []string{"LGTM", "Can we move the launch to Q1?", "Typo in section 2.", "line 1\nline 2", `He said "ship it"`, "🎉 done", "ctl\x01char", "a/b\\c"}

func (g *generator) newComment(pk, sk, docID, id string) pipeline.Item {
	item := pipeline.Item{
		attrPK: str(pk), attrSK: str(sk), attrType: str("Comment"),
		"commentId": str(id),
		"docId":     str(docID),
		"authorId":  str("u" + strconv.Itoa(g.users.pick(g.r))),
		"body":      str(g.pickString(commentBodies)),
		"createdAt": str(g.stamp()),
	}
	if g.r.Float64() < 0.7 {
		// Already past: DynamoDB deletes expired items in the background,
		// typically within days, so the simulation may expire them any time.
		item[attrTTL] = num(g.w.Start.Unix() - int64(g.r.IntN(14*24*3600)))
	}
	return item
}

func (g *generator) comment() Op {
	i := g.workspaces.pick(g.r)
	pk := "WS#w" + strconv.Itoa(i)
	// Comments go on Documents only, never on Templates.
	var d *doc
	for try := 0; try < 3 && len(g.docs[i]) > 0; try++ {
		c := g.docs[i][g.r.IntN(len(g.docs[i]))]
		if item := g.t.Get(pk, c.sk); item != nil && entityType(item) == "Document" {
			d = c
			break
		}
	}
	if d == nil {
		return g.document()
	}
	if len(d.comments) == 0 || g.r.Float64() < 0.45 {
		id := g.id("c")
		sk := d.sk + "#CMT#" + id
		d.comments = append(d.comments, sk)
		return g.put(g.newComment(pk, sk, d.id, id), "comment-create")
	}
	sk := d.comments[g.r.IntN(len(d.comments))]
	cur := g.t.Get(pk, sk)
	if cur == nil {
		_, id, _ := strings.Cut(sk, "#CMT#")
		return g.put(g.newComment(pk, sk, d.id, id), "comment-recreate")
	}
	item := content(cur)
	_, hasTTL := cur[attrTTL]
	switch u := g.r.Float64(); {
	case u < 0.35:
		item["body"] = str(g.pickString(commentBodies) + " (edited)")
		return g.put(item, "comment-edit")
	case u < 0.42 && hasTTL:
		delete(item, attrTTL)
		return g.put(item, "comment-pin")
	case u < 0.8 && hasTTL:
		return Op{Kind: Expire, Item: keysOf(cur), Action: "comment-expire"}
	}
	return g.del(cur, "comment-delete")
}
