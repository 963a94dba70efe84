package apicheck

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

const module = "github.com/tributary/tributary/"

// The floors of the tree, bottom up (docs/api.md): a package's layer is
// the top-level folder it lives in.
const (
	// layerPipeline: the change model, the decoders of every source,
	// dispatch, the partial-batch semantics, the shard reader's contract.
	layerPipeline = iota
	// layerProjections: the projection author's API (sets, environments,
	// transforms, views, decimal, spec), the store contract, and the
	// engine that applies them (internal/engine, closed: above the
	// author's API it imports, under internal/ so that only the module's
	// own floors reach it).
	layerProjections
	// layerInfra: the AWS services and the embedded store behind the
	// interfaces of the two floors below.
	layerInfra
	// layerCapabilities: what is built from all three: archive, export,
	// reimport, repartition, replay, redrive, backfill, verify, remodel.
	layerCapabilities
	// layerTop: the Lambda functions and the command line.
	layerTop
)

// floors maps each top-level folder of importable code to its layer.
// The engine and the capabilities live under internal/: the functions and
// the command line reach them, a team's module does not (docs/api.md).
var floors = map[string]int{
	"pipeline":              layerPipeline,
	"projections":           layerProjections,
	"internal/engine":       layerProjections,
	"infra":                 layerInfra,
	"internal/capabilities": layerCapabilities,
	"functions":             layerTop,
	"scripts":               layerTop,
}

// unit returns the folder a package of the module (its path without the
// module's) counts in: its top-level folder, or for a package under the
// top-level internal/, the subfolder there (internal/quote,
// internal/sim), each a unit of its own.
func unit(rel string) string {
	first, rest, _ := strings.Cut(rel, "/")
	if first == "internal" {
		sub, _, _ := strings.Cut(rest, "/")
		return "internal/" + sub
	}
	return first
}

// layerOf returns the layer of a package of the module, read from its
// folder, and false for a package under the top-level internal/ other
// than internal/engine and internal/capabilities: a helper or a fixture has no floor, it
// serves whoever imports it, and TestFolders keeps it from reaching back.
func layerOf(rel string) (int, bool) {
	l, ok := floors[unit(rel)]
	return l, ok
}

// TestLayers: no package reaches, through any chain of imports (internal
// packages included), a package of a floor above its own.
func TestLayers(t *testing.T) {
	pkgs := load(t, packages.NeedName|packages.NeedImports|packages.NeedDeps, "./...")
	checked := map[int]int{}
	for _, p := range pkgs {
		rel, ok := strings.CutPrefix(p.PkgPath, module)
		if !ok {
			continue
		}
		own, ok := layerOf(rel)
		if !ok || p.Name == "main" {
			continue
		}
		checked[own]++
		var above []string
		seen := map[string]bool{}
		var walk func(q *packages.Package, via string)
		walk = func(q *packages.Package, via string) {
			for path, imp := range q.Imports {
				r, ok := strings.CutPrefix(path, module)
				if !ok || seen[path] {
					continue
				}
				seen[path] = true
				chain := via + " → " + r
				if l, ok := layerOf(r); ok && l > own {
					above = append(above, chain)
				}
				walk(imp, chain)
			}
		}
		walk(p, rel)
		sort.Strings(above)
		for _, a := range above {
			t.Errorf("%s imports a package of a floor above its own: %s", rel, a)
		}
	}
	for _, l := range floors {
		if checked[l] == 0 {
			t.Fatalf("packages checked by layer: %v, want some of every floor", checked)
		}
	}
}

// TestFolders: no folder reaches another that reaches it back. The
// units are the top-level folders and each subfolder of the top-level
// internal/; every package counts, mains and internal ones included.
func TestFolders(t *testing.T) {
	pkgs := load(t, packages.NeedName|packages.NeedImports, "./...")
	edges := map[string]map[string]string{} // from unit → to unit → one import that makes the edge
	units := map[string]bool{}
	for _, p := range pkgs {
		rel, ok := strings.CutPrefix(p.PkgPath, module)
		if !ok {
			continue
		}
		from := unit(rel)
		units[from] = true
		for path := range p.Imports {
			r, ok := strings.CutPrefix(path, module)
			if !ok || unit(r) == from {
				continue
			}
			if edges[from] == nil {
				edges[from] = map[string]string{}
			}
			if _, ok := edges[from][unit(r)]; !ok || rel+" → "+r < edges[from][unit(r)] {
				edges[from][unit(r)] = rel + " → " + r
			}
		}
	}
	// path returns a chain of imports from a to b, or "" when a does not reach b.
	path := func(a, b string) string {
		prev := map[string]string{a: ""}
		queue := []string{a}
		for len(queue) > 0 {
			u := queue[0]
			queue = queue[1:]
			for _, v := range sortedKeys(edges[u]) {
				if _, ok := prev[v]; ok {
					continue
				}
				prev[v] = u
				if v == b {
					var chain []string
					for w := b; w != a; w = prev[w] {
						chain = append([]string{edges[prev[w]][w]}, chain...)
					}
					return strings.Join(chain, ", ")
				}
				queue = append(queue, v)
			}
		}
		return ""
	}
	for _, a := range sortedKeys(units) {
		for _, b := range sortedKeys(units) {
			if a >= b {
				continue
			}
			if there, back := path(a, b), path(b, a); there != "" && back != "" {
				t.Errorf("folders %s and %s reach each other: %s; and back: %s", a, b, there, back)
			}
		}
	}
	if len(units) < len(floors) {
		t.Fatalf("found %d folders, want at least the %d floors", len(units), len(floors))
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// coreThirdParty are the packages outside the module and the standard
// library the two lowest floors may import (docs/api.md): the event and
// attribute types of the AWS libraries, never a service's client; the
// expression engine and the YAML reader of projections/spec.
var coreThirdParty = []string{
	"github.com/aws/aws-lambda-go/events",
	"github.com/aws/aws-lambda-go/lambdacontext",
	"github.com/aws/aws-sdk-go-v2/aws", // the SDK's base: its errors and transport types (shardreadtest)
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue",
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types",
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types",
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types",
	"github.com/expr-lang/expr",
	"go.yaml.in/yaml/v3",
}

// TestCoreImports: the imports of pipeline/, projections/ and the engine outside the
// module and the standard library are those coreThirdParty allows (a
// package of expr's among them): no AWS service client, so that the
// change model and the engine run anywhere.
func TestCoreImports(t *testing.T) {
	pkgs := load(t, packages.NeedName|packages.NeedImports, "./...")
	checked := 0
	for _, p := range pkgs {
		rel, ok := strings.CutPrefix(p.PkgPath, module)
		if l, has := layerOf(rel); !ok || !has || l > layerProjections {
			continue
		}
		checked++
		for path := range p.Imports {
			first, _, _ := strings.Cut(path, "/")
			if strings.HasPrefix(path, module) || !strings.Contains(first, ".") {
				continue // the module's, or the standard library's
			}
			if !slices.ContainsFunc(coreThirdParty, func(a string) bool { return path == a || strings.HasPrefix(path, a+"/") }) {
				t.Errorf("%s imports %s, which the core may not (coreThirdParty)", rel, path)
			}
		}
	}
	if checked < 2 {
		t.Fatalf("checked %d packages of pipeline/ and projections/, want them all", checked)
	}
}

// TestLayerOf pins the floor of a package of each kind, read from its
// folder.
func TestLayerOf(t *testing.T) {
	for rel, want := range map[string]int{
		"pipeline":                              layerPipeline,
		"pipeline/shardread/shardreadtest":      layerPipeline,
		"projections/spec":                      layerProjections,
		"projections/driver":                    layerProjections,
		"internal/engine":                       layerProjections,
		"infra/dynamostore":                     layerInfra,
		"infra/objstore/objstoretest":           layerInfra,
		"infra/internal/streamerr":              layerInfra,
		"internal/capabilities/archive":         layerCapabilities,
		"internal/capabilities/archive/lake":    layerCapabilities,
		"internal/capabilities/export/reimport": layerCapabilities,
		"internal/capabilities/backfill":        layerCapabilities,
		"functions/projector":                   layerTop,
		"functions/internal/entry":              layerTop,
		"scripts/cli":                           layerTop,
	} {
		if got, ok := layerOf(rel); !ok || got != want {
			t.Errorf("layerOf(%s) = %d, %v; want %d", rel, got, ok, want)
		}
	}
	for _, rel := range []string{"internal/quote", "internal/sim/x"} {
		if _, ok := layerOf(rel); ok {
			t.Errorf("layerOf(%s): a package of the top-level internal/ has a floor", rel)
		}
	}
	if u := unit("internal/sim/x"); u != "internal/sim" {
		t.Errorf("unit(internal/sim/x) = %s", u)
	}
}
