package spec

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tributary/tributary/internal/exportgen"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline"
	"github.com/tributary/tributary/projections"
)

func loadTransforms(t *testing.T, file string) (*Spec, map[string]*projections.Transform) {
	t.Helper()
	sp, err := LoadFile(filepath.Join("testdata", "transforms", file))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*projections.Transform{}
	for _, tr := range sp.Transforms() {
		byName[tr.Name] = tr
	}
	return sp, byName
}

func sv(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func nv(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func itemJSON(items []pipeline.Item) string {
	var b []byte
	for _, it := range items {
		b = pipeline.AppendItem(b, it)
		b = append(b, '\n')
	}
	return string(b)
}

// TestDeclaredCommentsTable: the comments-table transform declared in a
// spec makes of every item of the fixture export exactly what the Go one
// (internal/seed) makes.
func TestDeclaredCommentsTable(t *testing.T) {
	_, ts := loadTransforms(t, "comments-table.yaml")
	declared, goTransform := ts["comments-table"], seed.CommentsTable()
	comments := 0
	for _, it := range exportgen.FixtureItems(t).FullItems {
		typ, _ := it["EntityType"].(*types.AttributeValueMemberS)
		if typ == nil || typ.Value != "Comment" {
			continue
		}
		comments++
		want, werr := goTransform.ByType["Comment"](it)
		got, gerr := declared.ByType["Comment"](it)
		if (werr == nil) != (gerr == nil) || itemJSON(got) != itemJSON(want) {
			t.Fatalf("%s:\n got %s %v\nwant %s %v", pipeline.AppendItem(nil, it), itemJSON(got), gerr, itemJSON(want), werr)
		}
	}
	if comments < 10 {
		t.Fatalf("the fixture has %d comments: too few to tell", comments)
	}
	if declared.CopyOthers || len(declared.Keys) != 2 || declared.Keys[0] != "PK:S" || declared.Version == "" {
		t.Errorf("declared: %+v", declared)
	}
}

// TestRewrite: what a declared rewrite makes of an item: the key from
// templates, attributes dropped, renamed, built and copied, and no
// target item when the condition does not hold; one file holds a
// projection and a transform.
func TestRewrite(t *testing.T) {
	sp, ts := loadTransforms(t, "new-design.yaml")
	if len(sp.Projections()) != 1 || len(ts) != 1 {
		t.Fatalf("new-design.yaml: %d projections, %d transforms", len(sp.Projections()), len(ts))
	}
	tr := ts["new-design"]
	if !tr.CopyOthers {
		t.Error("copyOthers: true not read")
	}
	order := pipeline.Item{"PK": sv("USER#u1"), "SK": sv("ORDER#2026-11-30#o1"), "EntityType": sv("Order"), "orderId": sv("o1"),
		"status": sv("PAID"), "total": nv("12.50"), "currency": sv("EUR"), "paymentRef": sv("pay_1"), "version": nv("3")}
	player := pipeline.Item{"PK": sv("PLAYER#p1"), "SK": sv("PROFILE"), "EntityType": sv("Player"), "handle": sv("owl"), "rating": nv("1500"),
		"season": sv("2026-Q4"), "active": &types.AttributeValueMemberBOOL{Value: true}, "version": nv("1")}
	seasonless := pipeline.Item{"PK": sv("PLAYER#p2"), "SK": sv("PROFILE"), "EntityType": sv("Player"), "handle": sv("x"), "season": &types.AttributeValueMemberNULL{Value: true}}
	for _, tt := range []struct {
		name string
		typ  string
		item pipeline.Item
		want string
	}{
		{"order", "Order", order, `{"EntityType":{"S":"Order"},"PK":{"S":"STATUS#PAID"},"SK":{"S":"ORDER#o1"},"amount":{"N":"12.50"},"label":{"S":"o1 (PAID)"},"orderId":{"S":"o1"},"sourceSK":{"S":"ORDER#2026-11-30#o1"},"status":{"S":"PAID"},"total":{"N":"12.50"},"userPK":{"S":"USER#u1"},"version":{"N":"3"}}` + "\n"},
		{"player", "Player", player, `{"EntityType":{"S":"Player"},"PK":{"S":"SEASON#2026-Q4"},"SK":{"S":"PLAYER#p1"},"handle":{"S":"owl"},"rating":{"N":"1500"},"version":{"N":"1"}}` + "\n"},
		{"player without a season", "Player", seasonless, ""},
	} {
		got, err := tr.ByType[tt.typ](tt.item)
		if err != nil || itemJSON(got) != tt.want {
			t.Errorf("%s: got %s %v\nwant %s", tt.name, itemJSON(got), err, tt.want)
		}
	}
	// The source item is left as it was.
	if _, ok := order["paymentRef"]; !ok || len(order) != 9 {
		t.Errorf("the rewrite changed its source item: %v", order)
	}
	bad := pipeline.Item{"PK": sv("USER#u1"), "SK": sv("ORDER#x"), "EntityType": sv("Order"), "orderId": sv("o2"), "status": sv("LOST"), "total": nv("1")}
	_, err := tr.ByType["Order"](bad)
	var ie *projections.ItemError
	// The caller (a remodel, a repartition) names the transform: the error
	// names the item and the attribute.
	if !errors.As(err, &ie) || ie.Projection != "" || ie.Attr != "status" || !strings.HasPrefix(err.Error(), "item USER#u1/ORDER#x: status: ") {
		t.Errorf("an order its checks refuse: %v", err)
	}
}

// TestRewriteNumberKey: a target key of type N is built as a number.
func TestRewriteNumberKey(t *testing.T) {
	_, ts := loadTransforms(t, "keyed-by-id.yaml")
	tr := ts["users-by-id"]
	if len(tr.Keys) != 1 || tr.Keys[0] != "id:N" || tr.TTLAttribute != "expiresAt" {
		t.Fatalf("keys %v, ttl %q", tr.Keys, tr.TTLAttribute)
	}
	got, err := tr.ByType["User"](pipeline.Item{"PK": sv("USER#7"), "SK": sv("PROFILE"), "EntityType": sv("User"), "userNo": nv("7"), "name": sv("a")})
	if err != nil || itemJSON(got) != `{"EntityType":{"S":"User"},"id":{"N":"7"},"name":{"S":"a"},"userNo":{"N":"7"}}`+"\n" {
		t.Errorf("got %s %v", itemJSON(got), err)
	}
}

// TestTransformIdentity: a transform's Version is its canonical form:
// layout and the order of fields and lists change nothing; a changed
// template does.
func TestTransformIdentity(t *testing.T) {
	base := `version: 1
transforms:
  - name: t
    entityTypes:
      A:
        item: {x: S, y: S}
        key: {PK: "X#{x}", SK: "{y}"}
        drop: [a, b]
`
	reordered := `version: 1
transforms:
  - entityTypes:
      A:
        drop: [b, a]    # the same
        key: {SK: "{y}", PK: "X#{x}"}
        item: {y: S, x: S}
    name: t
`
	changed := strings.Replace(base, `"X#{x}"`, `"Y#{x}"`, 1)
	version := func(src string) string {
		t.Helper()
		sp, err := Parse("t.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return sp.Transforms()[0].Version
	}
	if version(base) != version(reordered) {
		t.Errorf("reordering changed the Version:\n%s\n%s", version(base), version(reordered))
	}
	if version(base) == version(changed) {
		t.Error("a changed key template kept the Version")
	}
}

// TestTransformProblems: what loading refuses in a transform, each named
// with its line and field.
func TestTransformProblems(t *testing.T) {
	for _, tt := range []struct {
		name, src, want string
	}{
		{"no name", "transforms:\n  - entityTypes: {A: {key: {PK: x, SK: y}}}\n", "t.yaml:3: transforms[0]: name: missing"},
		{"no key", "transforms:\n  - name: t\n    entityTypes:\n      A: {}\n", "transform t: entityTypes.A.key: missing: the target key, PK and SK"},
		{"a key attribute not the target's", "transforms:\n  - name: t\n    entityTypes:\n      A:\n        key: {PK: x, SK: y, id: z}\n", "entityTypes.A.key.id: id is not a key attribute of the target (PK:S,SK:S)"},
		{"a template of an undeclared attribute", "transforms:\n  - name: t\n    entityTypes:\n      A:\n        key: {PK: \"{x}\", SK: y}\n", "placeholder {x}: x is not declared in item"},
		{"bad keys", "transforms:\n  - name: t\n    keys: [\"a:Q\"]\n    entityTypes: {A: {key: {a: x}}}\n", `keys: the partition key attribute "a" has type "Q"`},
		{"a B key", "transforms:\n  - name: t\n    keys: [\"b:B\"]\n    entityTypes: {A: {key: {b: x}}}\n", "a B key attribute cannot be built from a template"},
		{"renamed and dropped", "transforms:\n  - name: t\n    entityTypes:\n      A:\n        key: {PK: x, SK: y}\n        drop: [a]\n        rename: {a: b}\n", "entityTypes.A.rename.a: a is also dropped"},
		{"renamed onto the key", "transforms:\n  - name: t\n    entityTypes:\n      A:\n        key: {PK: x, SK: y}\n        rename: {a: PK}\n", "PK is also the target key"},
		{"built twice", "transforms:\n  - name: t\n    entityTypes:\n      A:\n        key: {PK: x, SK: y}\n        rename: {a: b}\n        attributes: {b: {S: z}}\n", "b is also the rename of a"},
		{"copy neither all nor a list", "transforms:\n  - name: t\n    entityTypes:\n      A:\n        key: {PK: x, SK: y}\n        copy: some\n", `copy: want all, or a list of the attributes to copy, got the string "some"`},
		{"copyOthers not a bool", "transforms:\n  - name: t\n    copyOthers: yes please\n    entityTypes: {A: {key: {PK: x, SK: y}}}\n", "copyOthers: want true or false"},
		{"nothing to rewrite", "transforms:\n  - name: t\n    entityTypes: {}\n", "empty: the transform rewrites no entity type and copies none"},
		{"two of one name", "transforms:\n  - name: t\n    entityTypes: {A: {key: {PK: x, SK: y}}}\n  - name: t\n    entityTypes: {A: {key: {PK: x, SK: y}}}\n", "t is also the name of the transform on line 3"},
		{"unknown field", "transforms:\n  - name: t\n    entityType: {}\n", "entityType: unknown field: did you mean entityTypes?"},
		{"neither projections nor transforms", "typeAttribute: kind\n", "projections: missing: a spec declares at least one projection, or transforms"},
	} {
		_, err := Parse("t.yaml", []byte("version: 1\n"+tt.src))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v\nwant a problem saying %q", tt.name, err, tt.want)
		}
	}
}

// TestTransformOnlySpec: a spec of transforms only loads as an
// environment without projections.
func TestTransformOnlySpec(t *testing.T) {
	env, err := Load(filepath.Join("testdata", "transforms", "comments-table.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if env.Projections != nil || len(env.Transforms) != 1 || env.Validate() != nil {
		t.Fatalf("environment: projections %v, transforms %d, %v", env.Projections, len(env.Transforms), env.Validate())
	}
}
