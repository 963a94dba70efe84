package apicheck

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

const module = "github.com/tributary/tributary/"

// The layers of the module's importable packages, bottom up (docs/api.md).
const (
	// layerCore: the change model and its decoders (pipeline), the
	// projection author's API (projections, decimal, spec), the store
	// contract and its conformance suite (driver, drivertest), and the
	// shard reader's contract (shardread).
	layerCore = iota
	// layerAdapter: the AWS services and the embedded store behind the
	// core's interfaces (infra/...).
	layerAdapter
	// layerCapability: what is built from both: archive, export,
	// reimport, repartition, replay, redrive, filters, backfill, verify.
	layerCapability
	// layerTop: the Lambda functions and the command line.
	layerTop
)

var core = []string{
	"pipeline", "pipeline/shardread", "pipeline/shardread/shardreadtest",
	"projections", "projections/decimal", "projections/spec",
	"projections/driver", "projections/driver/drivertest",
}

// layerOf returns the layer of a package of the module (its path without
// the module's), and false for internal packages, which belong to the
// layer of whoever imports them.
func layerOf(rel string) (int, bool) {
	switch {
	case isInternal("/" + rel + "/"):
		return 0, false
	case slices.Contains(core, rel):
		return layerCore, true
	case strings.HasPrefix(rel, "infra/"):
		return layerAdapter, true
	case strings.HasPrefix(rel, "pipeline/"), strings.HasPrefix(rel, "projections/"):
		return layerCapability, true
	}
	return layerTop, true
}

// TestLayers: no package reaches, through any chain of imports (internal
// packages included), a package of a layer above its own: the core
// imports no adapter and no capability, an adapter no capability, a
// capability no function or command.
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
			t.Errorf("%s imports a package of a layer above its own: %s", rel, a)
		}
	}
	if checked[layerCore] != len(core) || checked[layerAdapter] == 0 || checked[layerCapability] == 0 {
		t.Fatalf("packages checked by layer: %v, want all %d of the core and some of each other layer", checked, len(core))
	}
}

// coreThirdParty are the packages outside the module and the standard
// library the core may import (docs/api.md): the event and attribute
// types of the AWS libraries, never a service's client; the expression
// engine and the YAML reader of projections/spec.
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

// TestCoreImports: the core's own imports outside the module and the
// standard library are those coreThirdParty allows (a package of expr's
// among them): no AWS service client, so that the core runs anywhere.
func TestCoreImports(t *testing.T) {
	pkgs := load(t, packages.NeedName|packages.NeedImports, "./...")
	checked := 0
	for _, p := range pkgs {
		rel, ok := strings.CutPrefix(p.PkgPath, module)
		if !ok || !slices.Contains(core, rel) {
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
	if checked != len(core) {
		t.Fatalf("checked %d core packages, want %d", checked, len(core))
	}
}

// TestLayerOf pins the layer of a package of each kind.
func TestLayerOf(t *testing.T) {
	for rel, want := range map[string]int{
		"pipeline":                    layerCore,
		"projections/spec":            layerCore,
		"projections/driver":          layerCore,
		"infra/dynamostore":           layerAdapter,
		"infra/objstore/objstoretest": layerAdapter,
		"pipeline/archive":            layerCapability,
		"pipeline/archive/lake":       layerCapability,
		"pipeline/export/reimport":    layerCapability,
		"projections/backfill":        layerCapability,
		"functions/projector":         layerTop,
		"scripts/cli":                 layerTop,
	} {
		if got, ok := layerOf(rel); !ok || got != want {
			t.Errorf("layerOf(%s) = %d, %v; want %d", rel, got, ok, want)
		}
	}
	for _, rel := range []string{"internal/quote", "functions/internal/entry", "infra/internal/streamerr"} {
		if _, ok := layerOf(rel); ok {
			t.Errorf("layerOf(%s): an internal package has a layer", rel)
		}
	}
}
