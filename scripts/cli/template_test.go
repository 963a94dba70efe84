package cli

// The SAM template's wiring, checked on the template as CloudFormation's own
// linter reads it: cfn-lint's decoder (from the pinned tools in
// .tools/sam-venv, .ci/requirements-sam.txt) turns template.yaml into JSON,
// short-form intrinsics (!Ref, !If, …) into their long form. The module has
// no YAML library of its own to parse it with.
//
// Without the tools these tests skip, unless TRIBUTARY_REQUIRE_TEMPLATE_TOOLS=1
// (set by .ci/template-check.sh, which `make test` runs), when they fail.

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tributary/tributary/functions/backfiller"
	"github.com/tributary/tributary/functions/verifier"
	"github.com/tributary/tributary/internal/capabilities/archive"
	"github.com/tributary/tributary/internal/capabilities/archive/lake"
	"github.com/tributary/tributary/internal/capabilities/verify"
	"github.com/tributary/tributary/internal/seed"
	"github.com/tributary/tributary/pipeline/filter"
	"github.com/tributary/tributary/projections"
)

const (
	envSAMPython    = "TRIBUTARY_SAM_PYTHON"
	envRequireTools = "TRIBUTARY_REQUIRE_TEMPLATE_TOOLS"
	repoRoot        = "../.."
)

// requireTools skips the test for a missing tool, or fails it when the
// harness promised the tools.
func requireTools(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(envRequireTools) == "1" {
		t.Fatalf("%s=1 but %s", envRequireTools, msg)
	}
	t.Skipf("%s (run `make template-check`)", msg)
}

// decodeScript prints a CloudFormation template as JSON, the way cfn-lint
// decodes it.
const decodeScript = `
import json, sys
from cfnlint.decode import decode
tpl, matches = decode(sys.argv[1])
if matches:
    sys.exit("\n".join(str(m) for m in matches))
json.dump(tpl, sys.stdout)
`

var (
	templateOnce sync.Once
	templateJSON []byte
	templateErr  error
)

// tmpl is a decoded template; obj is a JSON object.
type (
	obj  = map[string]any
	tmpl struct{ obj }
)

func loadTemplate(t *testing.T) tmpl {
	t.Helper()
	python := os.Getenv(envSAMPython)
	if python == "" {
		python = filepath.Join(repoRoot, ".tools", "sam-venv", "bin", "python")
	}
	if _, err := os.Stat(python); err != nil {
		requireTools(t, "no Python with cfn-lint at %s (%s)", python, envSAMPython)
	}
	templateOnce.Do(func() {
		cmd := exec.Command(python, "-c", decodeScript, filepath.Join(repoRoot, "template.yaml"))
		cmd.Stderr = new(strings.Builder)
		templateJSON, templateErr = cmd.Output()
		if templateErr != nil {
			templateErr = fmt.Errorf("decoding template.yaml: %v: %s", templateErr, cmd.Stderr)
		}
	})
	if templateErr != nil {
		t.Fatal(templateErr)
	}
	var m obj
	if err := json.Unmarshal(templateJSON, &m); err != nil {
		t.Fatal(err)
	}
	return tmpl{m}
}

func (tp tmpl) resources() map[string]obj {
	out := map[string]obj{}
	for name, r := range tp.obj["Resources"].(obj) {
		out[name] = r.(obj)
	}
	return out
}

func (tp tmpl) ofType(typ string) map[string]obj {
	out := map[string]obj{}
	for name, r := range tp.resources() {
		if r["Type"] == typ {
			out[name] = r
		}
	}
	return out
}

func props(r obj) obj {
	p, _ := r["Properties"].(obj)
	if p == nil {
		p = obj{}
	}
	return p
}

// fnProp is a function property, or its Globals value.
func (tp tmpl) fnProp(fn obj, name string) any {
	if v, ok := props(fn)[name]; ok {
		return v
	}
	g, _ := tp.obj["Globals"].(obj)
	gf, _ := g["Function"].(obj)
	return gf[name]
}

// refName returns the logical ID a {"Ref": X} or {"Fn::GetAtt": [X, …]} names.
func refName(v any) string {
	m, ok := v.(obj)
	if !ok {
		return ""
	}
	if r, ok := m["Ref"].(string); ok {
		return r
	}
	if ga, ok := m["Fn::GetAtt"].([]any); ok && len(ga) > 0 {
		s, _ := ga[0].(string)
		return s
	}
	return ""
}

// branches expands Fn::If into both of its values (dropping AWS::NoValue),
// so that a check covers every configuration.
func branches(v any) []any {
	if m, ok := v.(obj); ok {
		if f, ok := m["Fn::If"].([]any); ok && len(f) == 3 {
			return append(branches(f[1]), branches(f[2])...)
		}
		if refName(m) == "AWS::NoValue" {
			return nil
		}
	}
	return []any{v}
}

// streamEvents returns a function's DynamoDB and Kinesis events.
func streamEvents(fn obj) map[string]obj {
	out := map[string]obj{}
	events, _ := props(fn)["Events"].(obj)
	for name, e := range events {
		e := e.(obj)
		if e["Type"] == "DynamoDB" || e["Type"] == "Kinesis" {
			out[name] = props(e)
		}
	}
	return out
}

// TestTemplateFunctions: every function is a provided.al2023 arm64
// `bootstrap` built from Go by sam build, from a main package that exists;
// and every function under functions/ is deployed.
func TestTemplateFunctions(t *testing.T) {
	tp := loadTemplate(t)
	fns := tp.ofType("AWS::Serverless::Function")
	if len(fns) == 0 {
		t.Fatal("no AWS::Serverless::Function")
	}
	deployed := map[string]string{}
	for name, fn := range fns {
		if got := tp.fnProp(fn, "Runtime"); got != "provided.al2023" {
			t.Errorf("%s: Runtime %v, want provided.al2023", name, got)
		}
		if got := tp.fnProp(fn, "Architectures"); !reflect.DeepEqual(got, []any{"arm64"}) {
			t.Errorf("%s: Architectures %v, want [arm64]", name, got)
		}
		if got := tp.fnProp(fn, "Handler"); got != "bootstrap" {
			t.Errorf("%s: Handler %v, want bootstrap", name, got)
		}
		meta, _ := fn["Metadata"].(obj)
		if meta["BuildMethod"] != "go1.x" {
			t.Errorf("%s: Metadata.BuildMethod %v, want go1.x", name, meta["BuildMethod"])
		}
		codeURI, _ := props(fn)["CodeUri"].(string)
		dir := filepath.Join(repoRoot, filepath.FromSlash(codeURI))
		if !isMainPackage(dir) {
			t.Errorf("%s: CodeUri %q is not a Go main package", name, codeURI)
		}
		deployed[filepath.Clean(codeURI)] = name
	}
	dirs, err := filepath.Glob(filepath.Join(repoRoot, "functions", "cmd", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		rel := filepath.ToSlash(filepath.Join("functions", "cmd", filepath.Base(d)))
		if isMainPackage(d) && deployed[rel] == "" {
			t.Errorf("%s is a Lambda main that template.yaml does not deploy: add its function "+
				"(docs/deploy.md, \"Wiring a new function\")", rel)
		}
	}
}

func isMainPackage(dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err == nil && regexp.MustCompile(`(?m)^package main$`).Match(b) {
			return true
		}
	}
	return false
}

// numberIn reports whether v — a literal, or a Ref to a Number parameter —
// can only take values in [lo, hi].
func (tp tmpl) numberIn(v any, lo, hi float64) (bool, string) {
	switch x := v.(type) {
	case float64:
		return x >= lo && x <= hi, fmt.Sprint(x)
	case string:
		var f float64
		if _, err := fmt.Sscan(x, &f); err != nil {
			return false, x
		}
		return f >= lo && f <= hi, x
	}
	name := refName(v)
	params, _ := tp.obj["Parameters"].(obj)
	p, ok := params[name].(obj)
	if !ok {
		return false, fmt.Sprint(v)
	}
	min, okMin := p["MinValue"].(float64)
	max, okMax := p["MaxValue"].(float64)
	desc := fmt.Sprintf("parameter %s [%v, %v]", name, p["MinValue"], p["MaxValue"])
	return okMin && okMax && min >= lo && max <= hi, desc
}

// TestTemplateEventSourceMappings: every stream mapping reports partial
// batch failures, bisects, retries a bounded number of times for a bounded
// record age, and sends what it gives up on to an S3 bucket (which keeps the
// whole invocation record); no table stream has more than two readers.
func TestTemplateEventSourceMappings(t *testing.T) {
	tp := loadTemplate(t)
	if raw := tp.ofType("AWS::Lambda::EventSourceMapping"); len(raw) > 0 {
		t.Errorf("mappings declared outside a function's Events are not checked here: %v", slices.Sorted(maps.Keys(raw)))
	}
	buckets := tp.ofType("AWS::S3::Bucket")
	readers := map[string][]string{}
	n := 0
	for fnName, fn := range tp.ofType("AWS::Serverless::Function") {
		for evName, ev := range streamEvents(fn) {
			n++
			where := fnName + "." + evName
			if got := ev["FunctionResponseTypes"]; !reflect.DeepEqual(got, []any{"ReportBatchItemFailures"}) {
				t.Errorf("%s: FunctionResponseTypes %v, want [ReportBatchItemFailures]", where, got)
			}
			if ev["BisectBatchOnFunctionError"] != true {
				t.Errorf("%s: BisectBatchOnFunctionError is not true", where)
			}
			if ok, desc := tp.numberIn(ev["MaximumRetryAttempts"], 0, 10000); !ok {
				t.Errorf("%s: MaximumRetryAttempts %s is not bounded (0–10,000; -1 is infinite)", where, desc)
			}
			if ok, desc := tp.numberIn(ev["MaximumRecordAgeInSeconds"], 60, 604800); !ok {
				t.Errorf("%s: MaximumRecordAgeInSeconds %s is not bounded (60–604,800; -1 is until expiry)", where, desc)
			}
			dc, _ := ev["DestinationConfig"].(obj)
			of, _ := dc["OnFailure"].(obj)
			if of["Type"] != "S3" {
				t.Errorf("%s: on-failure destination type %v, want S3 (it keeps the records, not only their positions)", where, of["Type"])
			}
			if dest := refName(of["Destination"]); buckets[dest] == nil {
				t.Errorf("%s: on-failure destination %v is not a bucket of this template", where, of["Destination"])
			}
			if _, ok := ev["FilterCriteria"]; !ok {
				t.Errorf("%s: no FilterCriteria", where)
			}
			if ev["StartingPosition"] == nil {
				t.Errorf("%s: no StartingPosition", where)
			}
			if fc, ok := tp.fnProp(fn, "Timeout").(float64); !ok || fc < 30 {
				t.Errorf("%s: function Timeout %v", where, tp.fnProp(fn, "Timeout"))
			}
			if _, isDDB := fnEventType(fn, evName); isDDB {
				key, _ := json.Marshal(ev["Stream"])
				readers[string(key)] = append(readers[string(key)], where)
			}
		}
	}
	if n == 0 {
		t.Fatal("no stream event source mapping")
	}
	for stream, rs := range readers {
		if len(rs) > 2 {
			t.Errorf("table stream %s has %d readers %v: DynamoDB Streams allows two per shard; send further consumers to the Kinesis stream", stream, len(rs), rs)
		}
	}
}

func fnEventType(fn obj, ev string) (string, bool) {
	events, _ := props(fn)["Events"].(obj)
	typ, _ := events[ev].(obj)["Type"].(string)
	return typ, typ == "DynamoDB"
}

// templateFilters returns the FilterCriteria of fn's only stream event, as
// the filters command prints it (JSON), its patterns evaluated for the
// parameters' defaults.
func templateFilters(t *testing.T, tp tmpl, fnName string, params map[string]string) filter.Criteria {
	t.Helper()
	fn := tp.resources()[fnName]
	if fn == nil {
		t.Fatalf("no resource %s", fnName)
	}
	evs := streamEvents(fn)
	if len(evs) != 1 {
		t.Fatalf("%s: %d stream events, want 1", fnName, len(evs))
	}
	var fc filter.Criteria
	for _, ev := range evs {
		crit, _ := ev["FilterCriteria"].(obj)
		fs, _ := crit["Filters"].([]any)
		for i, f := range fs {
			p, err := tp.eval(f.(obj)["Pattern"], params)
			if err != nil {
				t.Fatalf("%s: Filters[%d]: %v", fnName, i, err)
			}
			fc.Filters = append(fc.Filters, filter.Pattern{Pattern: p.(string)})
		}
	}
	return fc
}

// eval evaluates the intrinsic functions the template's values use — Ref
// (to a parameter, with params overriding its default), Fn::Join and
// Fn::Sub — to a string, or a list for a CommaDelimitedList.
func (tp tmpl) eval(v any, params map[string]string) (any, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			s, err := tp.eval(e, params)
			if err != nil {
				return nil, err
			}
			str, ok := s.(string)
			if !ok {
				return nil, fmt.Errorf("list element %v is not a string", e)
			}
			out[i] = str
		}
		return out, nil
	case obj:
		if name, ok := x["Ref"].(string); ok {
			ps, _ := tp.obj["Parameters"].(obj)
			p, ok := ps[name].(obj)
			if !ok {
				return nil, fmt.Errorf("Ref %s: not a parameter", name)
			}
			val, given := params[name]
			if !given {
				val = fmt.Sprint(p["Default"])
			}
			if p["Type"] == "CommaDelimitedList" {
				return strings.Split(val, ","), nil
			}
			return val, nil
		}
		if j, ok := x["Fn::Join"].([]any); ok && len(j) == 2 {
			list, err := tp.eval(j[1], params)
			if err != nil {
				return nil, err
			}
			l, ok := list.([]string)
			if !ok {
				return nil, fmt.Errorf("Fn::Join of %v", j[1])
			}
			return strings.Join(l, j[0].(string)), nil
		}
		if sub, ok := x["Fn::Sub"]; ok {
			tmplStr, vars := "", obj{}
			switch sv := sub.(type) {
			case string:
				tmplStr = sv
			case []any:
				tmplStr, _ = sv[0].(string)
				vars, _ = sv[1].(obj)
			}
			var err error
			out := regexp.MustCompile(`\$\{([A-Za-z0-9_.:]+)\}`).ReplaceAllStringFunc(tmplStr, func(m string) string {
				name := m[2 : len(m)-1]
				var val any
				if v, ok := vars[name]; ok {
					val, err = tp.eval(v, params)
				} else {
					val, err = tp.eval(obj{"Ref": name}, params)
				}
				s, _ := val.(string)
				return s
			})
			return out, err
		}
	}
	return nil, fmt.Errorf("cannot evaluate %v", v)
}

// TestTemplateProjectorFilters: the projectors' FilterCriteria are what
// `tributary filters` generates for the ProjectedEntityTypes and
// TypeAttribute parameters — for their defaults, which are the seed
// projections' (the stock deployment), and for a team's values — and the
// projectors are told the same types (FILTER_ENTITY_TYPES), which they check
// against their projections at init, so a filter that would drop a
// projected type cannot deploy silently.
func TestTemplateProjectorFilters(t *testing.T) {
	tp := loadTemplate(t)
	params, _ := tp.obj["Parameters"].(obj)
	def, _ := params["ProjectedEntityTypes"].(obj)["Default"].(string)
	if want := strings.Join(seed.Set().EntityTypes(), ","); def != want {
		t.Errorf("ProjectedEntityTypes defaults to %q, want the seed projections' %q", def, want)
	}
	team := projections.MustSet(teamOrders{})
	for _, tt := range []struct {
		fn     string
		source filter.Source
		set    *projections.Set
		params map[string]string
	}{
		{"Projector", filter.Streams, seed.Set(), nil},
		{"KinesisProjector", filter.Kinesis, seed.Set(), nil},
		{"Projector", filter.Streams, team, map[string]string{"ProjectedEntityTypes": "Order", "TypeAttribute": "kind"}},
		{"KinesisProjector", filter.Kinesis, team, map[string]string{"ProjectedEntityTypes": "Order", "TypeAttribute": "kind"}},
	} {
		t.Run(fmt.Sprint(tt.fn, tt.params), func(t *testing.T) {
			fn := tp.resources()[tt.fn]
			if fn == nil {
				t.Fatalf("no %s in the template", tt.fn)
			}
			typeAttr := "EntityType"
			if ta, ok := tt.params["TypeAttribute"]; ok {
				typeAttr = ta
			}
			want, err := generateFilters(tt.set, "projector", tt.source, typeAttr)
			if err != nil {
				t.Fatal(err)
			}
			if got := templateFilters(t, tp, tt.fn, tt.params); !reflect.DeepEqual(got, want) {
				var b strings.Builder
				if err := want.WriteYAML(&b, 12); err != nil {
					t.Fatal(err)
				}
				t.Errorf("%s's FilterCriteria differ from `tributary filters`.\n got: %+v\nwant: %+v\n%s", tt.fn, got, want, b.String())
			}
			vars, _ := props(fn)["Environment"].(obj)["Variables"].(obj)
			got, err := tp.eval(vars["FILTER_ENTITY_TYPES"], tt.params)
			if err != nil || got != strings.Join(tt.set.EntityTypes(), ",") {
				t.Errorf("%s: FILTER_ENTITY_TYPES %v (%v), want the filter's types %v", tt.fn, got, err, tt.set.EntityTypes())
			}
			if got, err := tp.eval(vars["TYPE_ATTRIBUTE"], tt.params); err != nil || got != typeAttr {
				t.Errorf("%s: TYPE_ATTRIBUTE %v (%v), want %s", tt.fn, got, err, typeAttr)
			}
		})
	}
}

// TestTemplateProjectionsLayer: every function mounts the projections layer
// when one is given, hands over to its own main in the layer
// (/opt/bin/<function>) with MainsInLayer, and the projectors load the spec
// file of the layer with ProjectionsFile; rules refuse a file or mains
// without a layer.
func TestTemplateProjectionsLayer(t *testing.T) {
	tp := loadTemplate(t)
	fns := tp.ofType("AWS::Serverless::Function")
	for name, fn := range fns {
		layers, _ := props(fn)["Layers"].(obj)
		if f, _ := layers["Fn::If"].([]any); len(f) != 3 || f[0] != "HasProjectionsLayer" || refName(f[2]) != "AWS::NoValue" ||
			!reflect.DeepEqual(f[1], []any{obj{"Ref": "ProjectionsLayerArn"}}) {
			t.Errorf("%s: Layers %v, want [ProjectionsLayerArn] if HasProjectionsLayer", name, props(fn)["Layers"])
		}
		vars, _ := props(fn)["Environment"].(obj)["Variables"].(obj)
		main := path.Base(strings.TrimSuffix(props(fn)["CodeUri"].(string), "/"))
		if f, _ := vars["TRIBUTARY_MAIN"].(obj)["Fn::If"].([]any); len(f) != 3 || f[0] != "MainsInLayer" || f[1] != "/opt/bin/"+main {
			t.Errorf("%s: TRIBUTARY_MAIN %v, want /opt/bin/%s if MainsInLayer", name, vars["TRIBUTARY_MAIN"], main)
		}
		if name != "Projector" && name != "KinesisProjector" && name != "Backfiller" && name != "Verifier" {
			continue
		}
		pf, _ := vars["PROJECTIONS_FILE"].(obj)["Fn::If"].([]any)
		if len(pf) != 3 || pf[0] != "HasProjectionsFile" {
			t.Fatalf("%s: PROJECTIONS_FILE %v, want a file of the layer if HasProjectionsFile", name, vars["PROJECTIONS_FILE"])
		}
		if got, err := tp.eval(pf[1], map[string]string{"ProjectionsFile": "desk/projections.yaml"}); err != nil || got != "/opt/desk/projections.yaml" {
			t.Errorf("%s: PROJECTIONS_FILE for desk/projections.yaml: %v %v", name, got, err)
		}
	}
	// Each function reads the table's attributes it needs from the
	// parameters: a table whose attributes have other names deploys the
	// stock template unchanged. The projectors, the backfiller and the
	// verifier, which load a spec, get all four, to check them against the
	// spec's at init.
	all := map[string]string{"TYPE_ATTRIBUTE": "TypeAttribute", "VERSION_ATTRIBUTE": "VersionAttribute", "KEY_ATTRIBUTES": "KeyAttributes", "TTL_ATTRIBUTE": "TTLAttribute"}
	reads := map[string]map[string]string{
		"Projector":        all,
		"KinesisProjector": all,
		"Archiver":         {"TYPE_ATTRIBUTE": "TypeAttribute", "TTL_ATTRIBUTE": "TTLAttribute"},
		"Repartitioner":    {"TYPE_ATTRIBUTE": "TypeAttribute", "VERSION_ATTRIBUTE": "VersionAttribute", "KEY_ATTRIBUTES": "KeyAttributes"},
		"Backfiller":       all,
		"Verifier":         all,
	}
	for name, want := range reads {
		fn, ok := fns[name]
		if !ok {
			t.Errorf("no function %s", name)
			continue
		}
		vars, _ := props(fn)["Environment"].(obj)["Variables"].(obj)
		for env, param := range want {
			if got, err := tp.eval(vars[env], map[string]string{param: "Id"}); err != nil || got != "Id" {
				t.Errorf("%s: %s %v (%v), want the %s parameter", name, env, vars[env], err, param)
			}
		}
	}
	// A team nests the template as an AWS::Serverless::Application, which
	// takes at most 60 parameters (the SAM developer guide, "Reuse code and
	// resources using nested applications").
	if params, _ := tp.obj["Parameters"].(obj); len(params) > 60 {
		t.Errorf("%d parameters: a nested application may have at most 60", len(params))
	}
	rules, _ := tp.obj["Rules"].(obj)
	if rules["ProjectionsNeedTheLayer"] == nil || rules["SpecOrMains"] == nil {
		t.Errorf("rules %v: want ProjectionsNeedTheLayer and SpecOrMains", slices.Sorted(maps.Keys(rules)))
	}
	params, _ := tp.obj["Parameters"].(obj)
	pattern := regexp.MustCompile(params["ProjectionsFile"].(obj)["AllowedPattern"].(string))
	for file, ok := range map[string]bool{"": true, "projections.yaml": true, "desk/p.json": true, "../etc/p.yaml": false, "/p.yaml": false, "p.txt": false, "a/../p.yml": false} {
		if pattern.MatchString(file) != ok {
			t.Errorf("ProjectionsFile %q: allowed %v, want %v", file, !ok, ok)
		}
	}
}

// TestTemplateArchiverFilters: the archiver's mapping delivers only TTL
// removals — the generated pattern, and on its meaning: REMOVE records whose
// userIdentity is the DynamoDB service, and nothing else.
func TestTemplateArchiverFilters(t *testing.T) {
	tp := loadTemplate(t)
	want, err := generateFilters(seed.Set(), "archiver", filter.Streams, "")
	if err != nil {
		t.Fatal(err)
	}
	got := templateFilters(t, tp, "Archiver", nil)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Archiver's FilterCriteria: got %+v, want %+v", got, want)
	}
	if len(got.Filters) != 1 {
		t.Fatalf("%d filters (OR-ed), want exactly 1", len(got.Filters))
	}
	var p obj
	if err := json.Unmarshal([]byte(got.Filters[0].Pattern), &p); err != nil {
		t.Fatal(err)
	}
	wantPattern := obj{
		"eventName":    []any{"REMOVE"},
		"userIdentity": obj{"type": []any{"Service"}, "principalId": []any{"dynamodb.amazonaws.com"}},
	}
	if !reflect.DeepEqual(p, wantPattern) {
		t.Errorf("archiver pattern %v does not select exactly TTL removals", p)
	}
	fn := tp.resources()["Archiver"]
	for name, ev := range streamEvents(fn) {
		if ev["ParallelizationFactor"] != float64(1) {
			t.Errorf("Archiver.%s: ParallelizationFactor %v, want 1 (docs/archive.md: the naming rule needs contiguous batches)", name, ev["ParallelizationFactor"])
		}
	}
}

// Actions that support no resource-level permission: the only ones a policy
// may grant on "*".
var noResourceLevel = map[string]bool{
	"xray:PutTraceSegments": true, "xray:PutTelemetryRecords": true,
	"xray:GetSamplingRules": true, "xray:GetSamplingTargets": true,
	"logs:CreateLogDelivery": true, "logs:GetLogDelivery": true, "logs:UpdateLogDelivery": true,
	"logs:DeleteLogDelivery": true, "logs:ListLogDeliveries": true,
}

func strs(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			for _, b := range branches(e) {
				if s, ok := b.(string); ok {
					out = append(out, s)
				} else {
					out = append(out, "<"+fmt.Sprint(b)+">")
				}
			}
		}
		return out
	}
	var out []string
	for _, b := range branches(v) {
		if s, ok := b.(string); ok {
			out = append(out, s)
		} else if b != nil {
			out = append(out, "<"+fmt.Sprint(b)+">")
		}
	}
	return out
}

// TestTemplateLeastPrivilege: functions use the roles declared here (SAM's
// managed execution policies grant stream reads and logs on "*"); no Allow
// statement uses an action wildcard or NotAction/NotResource; "*" is granted
// only for actions that have no resource-level permissions (X-Ray, log
// delivery), never for a data-plane action.
func TestTemplateLeastPrivilege(t *testing.T) {
	tp := loadTemplate(t)
	for name, fn := range tp.ofType("AWS::Serverless::Function") {
		if refName(props(fn)["Role"]) == "" {
			t.Errorf("%s: no Role of this template: SAM would create one with managed policies on \"*\"", name)
		}
		if _, ok := props(fn)["Policies"]; ok {
			t.Errorf("%s: Policies is ignored when Role is set; put them in the role", name)
		}
	}
	for name, sm := range tp.ofType("AWS::Serverless::StateMachine") {
		if refName(props(sm)["Role"]) == "" {
			t.Errorf("%s: no Role of this template", name)
		}
	}
	roles := tp.ofType("AWS::IAM::Role")
	if len(roles) == 0 {
		t.Fatal("no IAM role")
	}
	for name, role := range roles {
		if _, ok := props(role)["ManagedPolicyArns"]; ok {
			t.Errorf("%s: managed policies (ManagedPolicyArns) are not least privilege", name)
		}
		policies, _ := props(role)["Policies"].([]any)
		for _, p := range policies {
			doc, _ := p.(obj)["PolicyDocument"].(obj)
			stmts, _ := doc["Statement"].([]any)
			for _, s := range stmts {
				for _, b := range branches(s) {
					checkStatement(t, name, b.(obj))
				}
			}
		}
	}
}

func checkStatement(t *testing.T, role string, s obj) {
	t.Helper()
	sid, _ := s["Sid"].(string)
	where := role + "/" + sid
	if s["Effect"] != "Allow" {
		return
	}
	if _, ok := s["NotAction"]; ok {
		t.Errorf("%s: NotAction", where)
	}
	if _, ok := s["NotResource"]; ok {
		t.Errorf("%s: NotResource", where)
	}
	actions := strs(s["Action"])
	resources := strs(s["Resource"])
	if len(actions) == 0 || len(resources) == 0 {
		t.Errorf("%s: no Action or Resource", where)
	}
	for _, a := range actions {
		if strings.Contains(a, "*") {
			t.Errorf("%s: action wildcard %q", where, a)
		}
	}
	if slices.Contains(resources, "*") {
		for _, a := range actions {
			if !noResourceLevel[a] {
				t.Errorf("%s: %s granted on \"*\"", where, a)
			}
		}
	}
}

// TestTemplateOperations: every function logs to a log group of this
// template with a retention; every stream consumer has iterator-age and
// error alarms; the on-failure bucket has an alarm on objects arriving; the
// buckets are encrypted, private and TLS-only.
func TestTemplateOperations(t *testing.T) {
	tp := loadTemplate(t)
	res := tp.resources()
	alarms := tp.ofType("AWS::CloudWatch::Alarm")
	alarmed := func(metric, target string) bool {
		for _, a := range alarms {
			p := props(a)
			if p["MetricName"] != metric {
				continue
			}
			dims, _ := p["Dimensions"].([]any)
			for _, d := range dims {
				if refName(d.(obj)["Value"]) == target {
					return true
				}
			}
		}
		return false
	}
	for name, fn := range tp.ofType("AWS::Serverless::Function") {
		lc, _ := props(fn)["LoggingConfig"].(obj)
		lg := res[refName(lc["LogGroup"])]
		if lg == nil || lg["Type"] != "AWS::Logs::LogGroup" || props(lg)["RetentionInDays"] == nil {
			t.Errorf("%s: LoggingConfig.LogGroup is not a log group of this template with a retention", name)
		}
		if lc["LogFormat"] != "JSON" {
			t.Errorf("%s: LogFormat %v, want JSON", name, lc["LogFormat"])
		}
		if len(streamEvents(fn)) > 0 {
			for _, m := range []string{"IteratorAge", "Errors"} {
				if !alarmed(m, name) {
					t.Errorf("%s: no %s alarm", name, m)
				}
			}
		}
	}
	destinations := map[string]bool{}
	for _, fn := range tp.ofType("AWS::Serverless::Function") {
		for _, ev := range streamEvents(fn) {
			dc, _ := ev["DestinationConfig"].(obj)
			of, _ := dc["OnFailure"].(obj)
			destinations[refName(of["Destination"])] = true
		}
	}
	for d := range destinations {
		if !alarmed("PutRequests", d) {
			t.Errorf("on-failure bucket %s: no alarm on objects arriving (PutRequests)", d)
		}
	}
	policies := map[string]obj{}
	for _, p := range tp.ofType("AWS::S3::BucketPolicy") {
		policies[refName(props(p)["Bucket"])] = props(p)
	}
	for name, b := range tp.ofType("AWS::S3::Bucket") {
		p := props(b)
		pab, _ := p["PublicAccessBlockConfiguration"].(obj)
		for _, k := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
			if pab[k] != true {
				t.Errorf("%s: PublicAccessBlockConfiguration.%s is not true", name, k)
			}
		}
		if p["BucketEncryption"] == nil {
			t.Errorf("%s: no default encryption", name)
		}
		if p["LifecycleConfiguration"] == nil {
			t.Errorf("%s: no lifecycle", name)
		}
		bp := policies[name]
		doc, _ := bp["PolicyDocument"].(obj)
		tlsOnly := false
		stmts, _ := doc["Statement"].([]any)
		for _, s := range stmts {
			s := s.(obj)
			c, _ := s["Condition"].(obj)
			b, _ := c["Bool"].(obj)
			if s["Effect"] == "Deny" && s["Principal"] == "*" && b["aws:SecureTransport"] == "false" {
				tlsOnly = true
			}
		}
		if !tlsOnly {
			t.Errorf("%s: no bucket policy denying requests without TLS", name)
		}
	}
}

// TestTemplateRepartition: the export state machine is a Distributed Map
// whose ItemReader reads the export's manifest-files.json as JSON lines and
// runs the repartitioner once per data file, between a plan and a finish
// step; every step carries the execution's ID (the owner of the output's
// claim, which its steps share), and a failure of the map or the finish is
// caught by a release step before the execution fails.
func TestTemplateRepartition(t *testing.T) {
	tp := loadTemplate(t)
	sms := tp.ofType("AWS::Serverless::StateMachine")
	if !sameSet(slices.Collect(maps.Keys(sms)), []string{"Repartition", "Backfill", "Verify"}) {
		t.Fatalf("state machines %v, want Repartition, Backfill and Verify", slices.Sorted(maps.Keys(sms)))
	}
	for name, sm := range map[string]obj{"Repartition": sms["Repartition"]} {
		def, _ := props(sm)["Definition"].(obj)
		states, _ := def["States"].(obj)
		var maps []obj
		for _, s := range states {
			if s.(obj)["Type"] == "Map" {
				maps = append(maps, s.(obj))
			}
		}
		if len(maps) != 1 {
			t.Fatalf("%s: %d Map states, want 1", name, len(maps))
		}
		m := maps[0]
		ip, _ := m["ItemProcessor"].(obj)
		pc, _ := ip["ProcessorConfig"].(obj)
		if pc["Mode"] != "DISTRIBUTED" {
			t.Errorf("%s: Map mode %v, want DISTRIBUTED", name, pc["Mode"])
		}
		ir, _ := m["ItemReader"].(obj)
		rc, _ := ir["ReaderConfig"].(obj)
		if rc["InputType"] != "JSONL" || ir["Resource"] != "arn:aws:states:::s3:getObject" {
			t.Errorf("%s: ItemReader %v, want s3:getObject of JSONL", name, ir)
		}
		args, _ := ir["Arguments"].(obj)
		if key, _ := args["Key"].(string); !strings.Contains(key, "manifest-files.json") {
			t.Errorf("%s: ItemReader key %q is not the export's manifest-files.json", name, key)
		}
		var actions []string
		b, _ := json.Marshal(def)
		for _, a := range regexp.MustCompile(`'action': '(\w+)'`).FindAllStringSubmatch(string(b), -1) {
			actions = append(actions, a[1])
		}
		if !sameSet(actions, []string{"plan", "file", "finish", "release"}) {
			t.Errorf("%s: repartitioner actions %v, want plan, file, finish and release", name, actions)
		}
		// The execution's ID goes into the plan's payload and the job every
		// later step merges into its own.
		plan, _ := states["Plan"].(obj)
		pargs, _ := plan["Arguments"].(obj)
		assign, _ := plan["Assign"].(obj)
		for what, v := range map[string]any{"the plan's payload": pargs["Payload"], "the job": assign["job"]} {
			if e, _ := v.(string); !strings.Contains(e, "'executionId': $states.context.Execution.Id") {
				t.Errorf("%s: %s is %v, without the execution's ID", name, what, v)
			}
		}
		for _, st := range []string{"Files", "Finish"} {
			s, _ := states[st].(obj)
			catches, _ := s["Catch"].([]any)
			if len(catches) != 1 || catches[0].(obj)["Next"] != "Release" {
				t.Errorf("%s: %s's Catch is %v, want one to the Release step", name, st, s["Catch"])
			}
		}
		rel, _ := states["Release"].(obj)
		if rel["Next"] != "Failed" || states["Failed"].(obj)["Type"] != "Fail" {
			t.Errorf("%s: the Release step goes to %v, want a Fail state", name, rel["Next"])
		}
		subs, _ := props(sm)["DefinitionSubstitutions"].(obj)
		if fn := refName(subs["RepartitionerArn"]); tp.resources()[fn]["Type"] != "AWS::Serverless::Function" {
			t.Errorf("%s: RepartitionerArn is %v, not a function of this template", name, subs["RepartitionerArn"])
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// parameter returns a template parameter.
func (tp tmpl) parameter(t *testing.T, name string) obj {
	t.Helper()
	p, _ := tp.obj["Parameters"].(obj)[name].(obj)
	if p == nil {
		t.Fatalf("no parameter %s", name)
	}
	return p
}

// TestTemplateArchivePrefix: ArchivePrefix becomes part of the archiver's
// s3:PutObject resource (${ArchivePrefix}/*), so its pattern admits no IAM
// wildcard (* ?) and no . or .. segment, and only prefixes the archiver
// itself accepts (archive.ValidatePrefix).
func TestTemplateArchivePrefix(t *testing.T) {
	tp := loadTemplate(t)
	p := tp.parameter(t, "ArchivePrefix")
	re, err := regexp.Compile(p["AllowedPattern"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if p["MaxLength"] != float64(512) {
		t.Errorf("MaxLength %v, want 512 (archive.ValidatePrefix)", p["MaxLength"])
	}
	for _, ok := range []string{"ttl", "ttl-archive/orders", "a.b/c_d(1)", "Team's!/x", "v1.2"} {
		if !re.MatchString(ok) {
			t.Errorf("pattern refuses %q", ok)
		}
		if err := archive.ValidatePrefix(ok); err != nil {
			t.Errorf("pattern accepts %q, which the archiver refuses: %v", ok, err)
		}
	}
	for _, bad := range []string{"*", "ttl/*", "t?l", "..", ".", "a/../b", "a/./b", "../a", "a/..", ".hidden", "/a", "a/", "a//b", "", "${AWS::Region}", "a b"} {
		if re.MatchString(bad) {
			t.Errorf("pattern accepts %q", bad)
		}
	}
	// And the resource it goes into.
	role := tp.resources()["ArchiverRole"]
	b, _ := json.Marshal(role)
	if !strings.Contains(string(b), `${ArchiveBucket.Arn}/${ArchivePrefix}/*`) {
		t.Errorf("the archiver's PutObject resource is not ${ArchiveBucket.Arn}/${ArchivePrefix}/*: the test checks the wrong thing")
	}
}

// TestTemplateKinesisProjectorNeverSourceTable: whatever
// KinesisProjectorTableName names, the kinesis-projector's role denies it
// every DynamoDB action on the source table (the one the stack creates, or
// the table of SourceStreamArn) and its indexes.
func TestTemplateKinesisProjectorNeverSourceTable(t *testing.T) {
	tp := loadTemplate(t)
	role := tp.resources()["KinesisProjectorRole"]
	var deny obj
	for _, p := range props(role)["Policies"].([]any) {
		for _, s := range p.(obj)["PolicyDocument"].(obj)["Statement"].([]any) {
			for _, b := range branches(s) {
				if st := b.(obj); st["Effect"] == "Deny" {
					deny = st
				}
			}
		}
	}
	if deny == nil {
		t.Fatal("no Deny statement in KinesisProjectorRole")
	}
	if a := strs(deny["Action"]); !slices.Equal(a, []string{"dynamodb:*"}) {
		t.Errorf("Deny actions %v, want dynamodb:*", a)
	}
	want := []string{
		`{"Fn::GetAtt":["SourceTable","Arn"]}`,
		`{"Fn::Select":[0,{"Fn::Split":["/stream/",{"Ref":"SourceStreamArn"}]}]}`,
		`{"Fn::Sub":"${SourceTable.Arn}/*"}`,
		`{"Fn::Join":["",[{"Fn::Select":[0,{"Fn::Split":["/stream/",{"Ref":"SourceStreamArn"}]}]},"/*"]]}`,
	}
	var got []string
	for _, r := range deny["Resource"].([]any) {
		for _, b := range branches(r) {
			j, _ := json.Marshal(b)
			got = append(got, string(j))
		}
	}
	if !sameSet(got, want) {
		t.Errorf("Deny resources:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The ARN the split makes is the table's: the stream ARN's part before /stream/.
	arn := "arn:aws:dynamodb:eu-west-1:111122223333:table/App/stream/2026-01-01T00:00:00.000"
	if re := regexp.MustCompile(tp.parameter(t, "SourceStreamArn")["AllowedPattern"].(string)); !re.MatchString(arn) || strings.Split(arn, "/stream/")[0] != "arn:aws:dynamodb:eu-west-1:111122223333:table/App" {
		t.Errorf("SourceStreamArn %s does not split into its table's ARN", arn)
	}
}

// TestTemplateLogDeliveryPolicy: the state machine role may write log
// groups' resource policy (the log delivery it sets up needs that) on the
// account's log groups in its Region only, not on "*".
func TestTemplateLogDeliveryPolicy(t *testing.T) {
	tp := loadTemplate(t)
	found := false
	for name, role := range tp.ofType("AWS::IAM::Role") {
		for _, p := range props(role)["Policies"].([]any) {
			for _, s := range p.(obj)["PolicyDocument"].(obj)["Statement"].([]any) {
				for _, b := range branches(s) {
					st := b.(obj)
					if !slices.Contains(strs(st["Action"]), "logs:PutResourcePolicy") {
						continue
					}
					found = true
					res, _ := json.Marshal(st["Resource"])
					if string(res) != `{"Fn::Sub":"arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:*"}` {
						t.Errorf("%s: logs:PutResourcePolicy on %s, want the account's log groups", name, res)
					}
				}
			}
		}
	}
	if !found {
		t.Error("no role may set up the state machine's log delivery")
	}
}

// TestTemplateBackfill: the Backfill state machine, the backfiller and
// their roles, log groups and alarm exist only when BackfillMaxConcurrency
// is not 0 (its default); the state machine begins, plans, maps a
// Distributed Map over the plan's files (one backfiller invocation each,
// retried, at most BackfillMaxConcurrency at once, no failure tolerated),
// plans again after each round and finishes when none is pending; and the
// names it reads and writes are the backfiller's event and response
// fields.
func TestTemplateBackfill(t *testing.T) {
	tp := loadTemplate(t)
	res := tp.resources()
	p := tp.parameter(t, "BackfillMaxConcurrency")
	if p["Default"] != float64(0) || p["MinValue"] != float64(0) {
		t.Errorf("BackfillMaxConcurrency: default %v, minimum %v; want 0 and 0 (no backfill unless asked)", p["Default"], p["MinValue"])
	}
	conds, _ := tp.obj["Conditions"].(obj)
	if c, _ := json.Marshal(conds["Backfill"]); string(c) != `{"Fn::Not":[{"Fn::Equals":[{"Ref":"BackfillMaxConcurrency"},0]}]}` {
		t.Errorf("condition Backfill is %s, want BackfillMaxConcurrency != 0", c)
	}
	for _, name := range []string{"Backfill", "Backfiller", "BackfillerRole", "BackfillerLogGroup", "BackfillRole", "BackfillLogGroup", "BackfillFailedAlarm"} {
		if r := res[name]; r == nil || r["Condition"] != "Backfill" {
			t.Errorf("%s: %v, want a resource under the Backfill condition", name, r["Condition"])
		}
	}
	alarm := props(res["BackfillFailedAlarm"])
	dims, _ := alarm["Dimensions"].([]any)
	if alarm["MetricName"] != "ExecutionsFailed" || len(dims) != 1 || refName(dims[0].(obj)["Value"]) != "Backfill" {
		t.Errorf("BackfillFailedAlarm: %v, want ExecutionsFailed of Backfill", alarm)
	}

	sm := props(res["Backfill"])
	subs, _ := sm["DefinitionSubstitutions"].(obj)
	if refName(subs["BackfillerArn"]) != "Backfiller" || refName(subs["MaxConcurrency"]) != "BackfillMaxConcurrency" {
		t.Errorf("substitutions %v, want the Backfiller's ARN and BackfillMaxConcurrency", subs)
	}
	if refName(sm["Role"]) != "BackfillRole" {
		t.Errorf("the state machine's role is %v", sm["Role"])
	}
	def, _ := sm["Definition"].(obj)
	states, _ := def["States"].(obj)
	state := func(name string) obj {
		s, _ := states[name].(obj)
		if s == nil {
			t.Fatalf("no state %s", name)
		}
		return s
	}
	if def["StartAt"] != "Begin" || state("Begin")["Next"] != "Plan" || state("Plan")["Next"] != "AnyPending" {
		t.Errorf("the state machine does not begin Begin → Plan → AnyPending")
	}
	choice := state("AnyPending")
	choices, _ := choice["Choices"].([]any)
	if len(choices) != 1 || choices[0].(obj)["Next"] != "Files" || choices[0].(obj)["Condition"] != "{% $count($states.input.files) > 0 %}" || choice["Default"] != "Finish" {
		t.Errorf("AnyPending: %v, want Files while the plan returns files, else Finish", choice)
	}
	m := state("Files")
	ip, _ := m["ItemProcessor"].(obj)
	pc, _ := ip["ProcessorConfig"].(obj)
	if m["Type"] != "Map" || pc["Mode"] != "DISTRIBUTED" || m["Items"] != "{% $states.input.files %}" || m["Next"] != "AnyRefused" ||
		m["ToleratedFailurePercentage"] != float64(0) || m["MaxConcurrency"] != "{% ${MaxConcurrency} %}" {
		t.Errorf("Files: %v, want a Distributed Map over the plan's files, no failure tolerated, at most MaxConcurrency at once, then AnyRefused", m)
	}
	file, _ := ip["States"].(obj)["File"].(obj)
	var retried []string
	retries, _ := file["Retry"].([]any)
	for _, r := range retries {
		retried = append(retried, strs(r.(obj)["ErrorEquals"])...)
	}
	for _, want := range []string{"Lambda.ServiceException", "Lambda.TooManyRequestsException", "OutOfTime", "States.TaskFailed"} {
		if !slices.Contains(retried, want) {
			t.Errorf("the file step does not retry %s (it retries %v)", want, retried)
		}
	}
	if state("Finish")["End"] != true {
		t.Errorf("Finish does not end the execution")
	}
	checkHandoffStates(t, state, file, ip)

	// What the definition says of the backfiller's events and responses
	// is what the backfiller reads and writes.
	b, _ := json.Marshal(def)
	var actions []string
	for _, a := range regexp.MustCompile(`'action': '(\w+)'`).FindAllStringSubmatch(string(b), -1) {
		actions = append(actions, a[1])
	}
	if !sameSet(actions, []string{"plan", "file", "finish"}) {
		t.Errorf("backfiller actions %v, want plan, file and finish", actions)
	}
	var ev backfiller.Event
	if err := json.Unmarshal([]byte(`{"action":"file","export":"s3://b/e","incrementals":["s3://b/i"],"skipMd5":true,"dataFileS3Key":"k","pendingBefore":3}`), &ev); err != nil ||
		!reflect.DeepEqual(ev, backfiller.Event{Action: "file", Export: "s3://b/e", Incrementals: []string{"s3://b/i"}, SkipMD5: true, DataFileS3Key: "k", PendingBefore: 3}) {
		t.Errorf("the event's fields: %+v, %v", ev, err)
	}
	for _, field := range []string{"'pendingBefore'", "'dataFileS3Key'", "$states.result.Payload.plan.pending"} {
		if !strings.Contains(string(b), field) {
			t.Errorf("the definition does not name %s", field)
		}
	}
	if out := state("Plan")["Output"]; out != "{% $states.result.Payload.plan %}" {
		t.Errorf("Plan's output is %v, want the plan (whose files the next states read)", out)
	}
	out, _ := json.Marshal(backfiller.Response{Action: "plan", Plan: &backfiller.Plan{Files: []string{}}})
	if !strings.Contains(string(out), `"plan":{"files":[],"pending":0,`) {
		t.Errorf("a plan's response is %s, without the plan's files and pending count the state machine reads", out)
	}

	// The state machine's role invokes the backfiller and nothing else.
	role, _ := json.Marshal(res["BackfillRole"])
	if strings.Contains(string(role), "Repartitioner") || !strings.Contains(string(role), `"Fn::GetAtt":["Backfiller","Arn"]`) {
		t.Errorf("BackfillRole does not invoke exactly the backfiller: %s", role)
	}
}

// checkHandoffStates: a refusal by the backfiller's hand-off guard
// (HandoffError), like any other refusal (Refused), is retried by neither
// the plan nor the file step; a file
// step's ends its child (FileRefused) with a few bytes, {"refused": true},
// the map says so, and the execution ends with the finish step told of it
// (Refused: finish with refused, which fails with the refusal recorded,
// not retried); without one the map goes on to the next plan.
func checkHandoffStates(t *testing.T, state func(string) obj, file, ip obj) {
	t.Helper()
	for name, s := range map[string]obj{"Plan": state("Plan"), "File": file, "Refused": state("Refused")} {
		retries, _ := s["Retry"].([]any)
		if len(retries) == 0 || !reflect.DeepEqual(retries[0], obj{"ErrorEquals": []any{"Refused", "HandoffError"}, "MaxAttempts": float64(0)}) {
			t.Errorf("%s: first retrier %v, want Refused and HandoffError never retried", name, retries)
		}
	}
	catch, _ := file["Catch"].([]any)
	if len(catch) != 1 || !reflect.DeepEqual(catch[0], obj{"ErrorEquals": []any{"HandoffError"}, "Output": obj{"refused": true}, "Next": "FileRefused"}) {
		t.Errorf("File: Catch %v, want HandoffError to FileRefused, saying refused", catch)
	}
	if fr, _ := ip["States"].(obj)["FileRefused"].(obj); fr["Type"] != "Succeed" {
		t.Errorf("FileRefused: %v, want a Succeed state", fr)
	}
	if out := state("Files")["Output"]; out != "{% $exists($states.result.refused) ? {'refused': true} : {} %}" {
		t.Errorf("Files: Output %v, want whether a file step was refused", out)
	}
	choice := state("AnyRefused")
	choices, _ := choice["Choices"].([]any)
	if len(choices) != 1 || choices[0].(obj)["Next"] != "Refused" || choices[0].(obj)["Condition"] != "{% $exists($states.input.refused) %}" || choice["Default"] != "Plan" {
		t.Errorf("AnyRefused: %v, want Refused on a refusal, else Plan", choice)
	}
	r := state("Refused")
	args, _ := r["Arguments"].(obj)
	if r["Type"] != "Task" || args["Payload"] != "{% $merge([$job, {'action': 'finish', 'refused': true}]) %}" || r["End"] != true {
		t.Errorf("Refused: %v, want the finish step told of the refusal, ending the execution", r)
	}
	var ev backfiller.Event
	if err := json.Unmarshal([]byte(`{"action":"finish","refused":true}`), &ev); err != nil || !ev.Refused {
		t.Errorf("the finish event's refused: %+v, %v", ev, err)
	}
}

// TestTemplateBackfillerHandoff: the backfiller is told the stream a
// table with nothing attached is caught up from (REPLAY_FROM, the hand-off
// guard): the Kinesis stream with ReplayEnabled, else the table's DynamoDB
// stream, in replay's --from syntax; its role may read the Kinesis
// stream's retention (kinesis:DescribeStreamSummary), that stream's only,
// and only with ReplayEnabled, and nothing else of Kinesis.
func TestTemplateBackfillerHandoff(t *testing.T) {
	tp := loadTemplate(t)
	res := tp.resources()
	vars, _ := props(res["Backfiller"])["Environment"].(obj)["Variables"].(obj)
	got, _ := json.Marshal(vars["REPLAY_FROM"])
	want := `{"Fn::If":["Replay",{"Fn::Sub":"kinesis://${ReplayStream.Arn}"},{"Fn::Sub":["streams://${Stream}",{"Stream":{"Fn::If":["CreateSourceTable",{"Fn::GetAtt":["SourceTable","StreamArn"]},{"Ref":"SourceStreamArn"}]}}]}]}`
	if string(got) != want {
		t.Errorf("REPLAY_FROM is %s, want %s", got, want)
	}
	var kinesisStmts []obj
	policies, _ := props(res["BackfillerRole"])["Policies"].([]any)
	for _, p := range policies {
		stmts, _ := p.(obj)["PolicyDocument"].(obj)["Statement"].([]any)
		for _, s := range stmts {
			if b, _ := json.Marshal(s); strings.Contains(string(b), "kinesis:") {
				kinesisStmts = append(kinesisStmts, s.(obj))
			}
		}
	}
	if len(kinesisStmts) != 1 {
		t.Fatalf("%d statements of BackfillerRole name kinesis: actions, want 1", len(kinesisStmts))
	}
	b, _ := json.Marshal(kinesisStmts[0])
	if string(b) != `{"Fn::If":["Replay",{"Action":"kinesis:DescribeStreamSummary","Effect":"Allow","Resource":{"Fn::GetAtt":["ReplayStream","Arn"]},"Sid":"ReplayStreamRetention"},{"Ref":"AWS::NoValue"}]}` {
		t.Errorf("BackfillerRole's Kinesis statement is %s, want DescribeStreamSummary on ReplayStream, with ReplayEnabled", b)
	}
}

// TestTemplateShadowAndSwitch: the projectors' live table and set, and
// their shadow's, come from the parameters of the road in docs/backfill.md
// (ProjectorTableName, ProjectorProjections, ShadowTableName,
// ShadowProjections, KinesisShadowTableName); the roles reach those tables;
// a shadow's failed batches go to the failure bucket; its failures have an
// alarm; and every function is told the layer and the accounts it may come
// from (ProjectionsLayerAccounts), which it checks at init.
func TestTemplateShadowAndSwitch(t *testing.T) {
	tp := loadTemplate(t)
	fns := tp.ofType("AWS::Serverless::Function")
	ifOf := func(cond string, yes, no any) any { return obj{"Fn::If": []any{cond, yes, no}} }
	ref := func(name string) any { return obj{"Ref": name} }
	none := ref("AWS::NoValue")
	env := func(fn string) obj {
		vars, _ := props(fns[fn])["Environment"].(obj)["Variables"].(obj)
		return vars
	}
	for fn, want := range map[string]map[string]any{
		"Projector": {
			"AGGREGATE_TABLE":    ifOf("HasProjectorTable", ref("ProjectorTableName"), ref("AggregateTable")),
			"PROJECTIONS":        ifOf("HasProjectorProjections", ref("ProjectorProjections"), none),
			"SHADOW_TABLE":       ifOf("HasShadow", ref("ShadowTableName"), none),
			"SHADOW_PROJECTIONS": ifOf("HasShadowProjections", ref("ShadowProjections"), none),
			"SHADOW_FAILURES":    ifOf("HasShadow", obj{"Fn::Sub": "s3://${FailureBucket}/shadow-failures/projector"}, none),
		},
		"KinesisProjector": {
			"SHADOW_TABLE":       ifOf("HasKinesisShadow", ref("KinesisShadowTableName"), none),
			"SHADOW_PROJECTIONS": ifOf("HasKinesisShadowProjections", ref("KinesisShadowProjections"), none),
			"SHADOW_FAILURES":    ifOf("HasKinesisShadow", obj{"Fn::Sub": "s3://${FailureBucket}/shadow-failures/kinesis-projector"}, none),
		},
	} {
		vars := env(fn)
		for name, w := range want {
			if !reflect.DeepEqual(vars[name], w) {
				t.Errorf("%s: %s = %v, want %v", fn, name, vars[name], w)
			}
		}
	}
	for name := range fns {
		vars := env(name)
		if !reflect.DeepEqual(vars["PROJECTIONS_LAYER"], ifOf("HasProjectionsLayer", ref("ProjectionsLayerArn"), none)) {
			t.Errorf("%s: PROJECTIONS_LAYER %v", name, vars["PROJECTIONS_LAYER"])
		}
		if got := fmt.Sprint(vars["LAYER_ACCOUNTS"]); !strings.Contains(got, "AWS::AccountId") || !strings.Contains(got, "ProjectionsLayerAccounts") {
			t.Errorf("%s: LAYER_ACCOUNTS %v, want the stack's account and ProjectionsLayerAccounts", name, vars["LAYER_ACCOUNTS"])
		}
	}
	conds, _ := tp.obj["Conditions"].(obj)
	want := obj{"Fn::Not": []any{obj{"Fn::Equals": []any{ref("ShadowTableName"), ""}}}}
	if got := conds["HasShadow"]; !reflect.DeepEqual(got, want) {
		t.Errorf("HasShadow: %v", got)
	}
	// A shadow's set goes to a function only with the shadow's table: the
	// function refuses SHADOW_PROJECTIONS without SHADOW_TABLE at init.
	for cond, shadow := range map[string]string{"HasShadowProjections": "HasShadow", "HasKinesisShadowProjections": "HasKinesisShadow"} {
		and, _ := conds[cond].(obj)["Fn::And"].([]any)
		if len(and) != 2 || !reflect.DeepEqual(and[0], obj{"Condition": shadow}) {
			t.Errorf("%s = %v, want it to hold only with %s", cond, conds[cond], shadow)
		}
	}
	rules, _ := tp.obj["Rules"].(obj)
	for _, rule := range []string{"ShadowProjectionsNeedAShadow", "KinesisShadowProjectionsNeedAShadow", "KinesisShadowNeedsTheKinesisProjector", "ShadowIsNotLive"} {
		if rules[rule] == nil {
			t.Errorf("no rule %s", rule)
		}
	}
	// The roles that the table parameters point never reach the source
	// table's items.
	for _, role := range []string{"ProjectorRole", "KinesisProjectorRole", "BackfillerRole", "VerifierRole"} {
		doc := fmt.Sprint(props(tp.resources()[role])["Policies"])
		if !strings.Contains(doc, "Sid:NeverTheSourceTable") || !strings.Contains(doc, "Effect:Deny") {
			t.Errorf("%s has no NeverTheSourceTable deny", role)
		}
	}
	// The on-failure alarm counts the mappings' invocation records only,
	// not a shadow's kept batches.
	if mc := fmt.Sprint(props(tp.resources()["FailureBucket"])["MetricsConfigurations"]); !strings.Contains(mc, "Prefix:aws/lambda/") {
		t.Errorf("FailureBucket MetricsConfigurations %s: want the prefix aws/lambda/", mc)
	}
	// The roles reach the tables the parameters name.
	roleTables := func(role string) string {
		doc, _ := props(tp.resources()[role])["Policies"].([]any)
		return fmt.Sprint(doc)
	}
	for role, tables := range map[string][]string{
		"ProjectorRole":        {"${ProjectorTableName}", "${ShadowTableName}"},
		"KinesisProjectorRole": {"${KinesisShadowTableName}"},
		"BackfillerRole":       {"${ProjectorTableName}", "${ShadowTableName}"},
		"VerifierRole":         {"${ProjectorTableName}", "${ShadowTableName}"},
	} {
		for _, tab := range tables {
			if !strings.Contains(roleTables(role), "table/"+tab) {
				t.Errorf("%s does not reach table/%s", role, tab)
			}
		}
	}
	alarm := tp.resources()["ShadowFailuresAlarm"]
	if alarm["Condition"] != "HasAnyShadow" || props(alarm)["MetricName"] != "ShadowFailures" || props(alarm)["Namespace"] != "Tributary" {
		t.Errorf("ShadowFailuresAlarm: %v", alarm)
	}
}

// TestTemplateBackfillRefusedNotRetried: a step the backfiller refuses
// (error type Refused: no rerun can finish the job) is not retried by the
// Backfill state machine's plan, file or finish step: each one's first
// retrier that matches it — Step Functions takes the first in order — is
// one for Refused with MaxAttempts 0, before States.TaskFailed (which
// matches every error a task returns) and States.ALL. (The backfiller's
// tests pin that its refusals are of the error type Refused.)
func TestTemplateBackfillRefusedNotRetried(t *testing.T) {
	res := loadTemplate(t).resources()
	def, _ := props(res["Backfill"])["Definition"].(obj)
	states, _ := def["States"].(obj)
	files, _ := states["Files"].(obj)
	ip, _ := files["ItemProcessor"].(obj)
	inner, _ := ip["States"].(obj)
	steps := map[string]obj{}
	for name, s := range map[string]any{"Plan": states["Plan"], "File": inner["File"], "Finish": states["Finish"]} {
		steps[name], _ = s.(obj)
	}
	for name, s := range steps {
		checkRefusedNotRetried(t, name, s)
	}
}

// checkRefusedNotRetried: the first of a task state's retriers that
// matches the error Refused — Step Functions takes the first in order —
// is one for Refused with MaxAttempts 0, before States.TaskFailed (which
// matches every error a task returns) and States.ALL.
func checkRefusedNotRetried(t *testing.T, name string, s obj) {
	t.Helper()
	if s == nil {
		t.Errorf("no state %s", name)
		return
	}
	retries, _ := s["Retry"].([]any)
	for _, r := range retries {
		r, _ := r.(obj)
		errs := strs(r["ErrorEquals"])
		if slices.Contains(errs, "Refused") {
			if r["MaxAttempts"] != float64(0) {
				t.Errorf("%s retries Refused: %v", name, r)
			}
			return
		}
		if slices.Contains(errs, "States.TaskFailed") || slices.Contains(errs, "States.ALL") {
			t.Errorf("%s: the retrier %v matches a Refused error before any retrier for Refused does: a refusal is retried", name, errs)
			return
		}
	}
	t.Errorf("%s has no retrier for Refused (its retries: %v)", name, retries)
}

// TestTemplateArchiveTables holds the archive's Glue tables to the layout:
// the Parquet table declares exactly the columns compaction writes
// (lake.Columns, which internal/capabilities/archive holds to the written
// file), both tables project entity and date onto the archiver's and the
// compactor's key layouts, and the compactor may write only under
// compacted/ and remove only JSON-lines objects.
func TestTemplateArchiveTables(t *testing.T) {
	tp := loadTemplate(t)
	res := tp.resources()
	input := func(name string) obj {
		r, ok := res[name]
		if !ok {
			t.Fatalf("no %s", name)
		}
		return r["Properties"].(obj)["TableInput"].(obj)
	}
	pq := input("ArchiveParquetTable")
	var got []string
	for _, c := range pq["StorageDescriptor"].(obj)["Columns"].([]any) {
		got = append(got, fmt.Sprint(c.(obj)["Name"], " ", c.(obj)["Type"]))
	}
	var want []string
	for _, c := range lake.Columns {
		want = append(want, c.Name+" "+c.Type)
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("archive_parquet columns:\n%v\nwant (lake.Columns):\n%v", got, want)
	}
	for name, dir := range map[string]string{"ArchiveJsonTable": "", "ArchiveParquetTable": archive.CompactedDir + "/"} {
		p := input(name)["Parameters"].(obj)
		tmpl, _ := json.Marshal(p["storage.location.template"])
		if want := "/${ArchivePrefix}/" + dir + "entity=${!entity}/date=${!date}/"; !strings.Contains(string(tmpl), want) {
			t.Errorf("%s: storage.location.template %s, want …%s", name, tmpl, want)
		}
		if p["projection.enabled"] != "true" || p["projection.entity.type"] != "enum" || p["projection.date.format"] != "yyyy-MM-dd" {
			t.Errorf("%s: projection %v", name, p)
		}
	}
	policy, _ := json.Marshal(res["CompactorRole"]["Properties"])
	for _, want := range []string{`${ArchiveBucket.Arn}/${ArchivePrefix}/compacted/*`, `${ArchiveBucket.Arn}/${ArchivePrefix}/entity=*`} {
		if !strings.Contains(string(policy), want) {
			t.Errorf("CompactorRole lacks %s", want)
		}
	}
	if strings.Count(string(policy), `"s3:PutObject"`) != 1 || strings.Count(string(policy), `"s3:DeleteObject"`) != 1 {
		t.Errorf("CompactorRole: PutObject and DeleteObject once each, scoped: %s", policy)
	}
}

// TestTemplateVerify: the Verify state machine, the verifier, their roles
// and log groups and the work bucket exist only with the Backfill
// condition (no parameter of their own); the state machine plans, maps a
// Distributed Map over each list the plan wrote to the work bucket — the
// table's scan segments, the export's data files, the partitions twice
// (join, then compare) — one verifier invocation per item, at most
// BackfillMaxConcurrency at once, no failure tolerated, a refusal never
// retried, then finishes, and ends on the verdict: AGREE succeeds,
// MISMATCH and anything else fail with VerifyMismatch and VerifyNotReady,
// the report the cause. The verifier checks the backfiller's table with
// the backfiller's projections; its role scans that table, reads exports
// as the backfiller's does, and writes the work bucket's verify/ prefix,
// nothing else; the state machine's role is the Backfill one's, for the
// verifier, and reads the plan's lists.
func TestTemplateVerify(t *testing.T) {
	tp := loadTemplate(t)
	res := tp.resources()
	for _, name := range []string{"Verify", "Verifier", "VerifierRole", "VerifierLogGroup", "VerifyRole", "VerifyLogGroup", "VerifyWorkBucket", "VerifyWorkBucketPolicy"} {
		if r := res[name]; r == nil || r["Condition"] != "Backfill" {
			t.Errorf("%s: %v, want a resource under the Backfill condition", name, r["Condition"])
		}
	}
	// A failed execution is the gate's answer as often as an outage: no
	// alarm reads the state machine.
	for name, a := range tp.ofType("AWS::CloudWatch::Alarm") {
		if b, _ := json.Marshal(a); strings.Contains(string(b), `{"Ref":"Verify"}`) || strings.Contains(string(b), "${Verify}") {
			t.Errorf("%s reads the Verify state machine: its failures are MISMATCH and NOT READY answers", name)
		}
	}

	// The function.
	fn := props(res["Verifier"])
	if fn["CodeUri"] != "functions/cmd/verifier/" || refName(fn["Role"]) != "VerifierRole" ||
		refName(fn["LoggingConfig"].(obj)["LogGroup"]) != "VerifierLogGroup" {
		t.Errorf("Verifier: CodeUri %v, Role %v, LoggingConfig %v", fn["CodeUri"], fn["Role"], fn["LoggingConfig"])
	}
	if fn["Timeout"] != float64(900) || !reflect.DeepEqual(fn["EphemeralStorage"], obj{"Size": float64(10240)}) {
		t.Errorf("Verifier: Timeout %v, EphemeralStorage %v; want 900 and 10,240 MB (a compare step spills a partition to /tmp)", fn["Timeout"], fn["EphemeralStorage"])
	}
	if m, _ := fn["MemorySize"].(float64); m < float64(props(res["Backfiller"])["MemorySize"].(float64)) {
		t.Errorf("Verifier: MemorySize %v, below the backfiller's", fn["MemorySize"])
	}
	vars, _ := fn["Environment"].(obj)["Variables"].(obj)
	bvars, _ := props(res["Backfiller"])["Environment"].(obj)["Variables"].(obj)
	for _, name := range []string{"AGGREGATE_TABLE", "PROJECTIONS", "PROJECTIONS_FILE", "TYPE_ATTRIBUTE", "VERSION_ATTRIBUTE", "KEY_ATTRIBUTES", "TTL_ATTRIBUTE"} {
		if vars[name] == nil || !reflect.DeepEqual(vars[name], bvars[name]) {
			t.Errorf("Verifier: %s = %v, want the backfiller's %v (the gate checks the table the backfiller writes, with its projections)", name, vars[name], bvars[name])
		}
	}
	if _, fixed := vars["SCAN_SEGMENTS"]; fixed || vars["MAX_PRINT"] != "100" {
		t.Errorf("Verifier: SCAN_SEGMENTS %v, MAX_PRINT %v; want none (the plan chooses the segments by the table's size) and 100", vars["SCAN_SEGMENTS"], vars["MAX_PRINT"])
	}
	loc, _ := vars["WORK_LOCATION"].(obj)["Fn::Sub"].(string)
	prefix, ok := strings.CutPrefix(loc, "s3://${VerifyWorkBucket}/")
	if !ok || prefix != "verify" {
		t.Fatalf("Verifier: WORK_LOCATION %v, want s3://${VerifyWorkBucket}/verify", vars["WORK_LOCATION"])
	}
	work := "${VerifyWorkBucket.Arn}/" + prefix + "/*"

	// The work bucket: hardened as the export bucket is, and whatever an
	// execution that never finished left under the prefix expires.
	bucket, export := props(res["VerifyWorkBucket"]), props(res["ExportBucket"])
	for _, p := range []string{"BucketEncryption", "PublicAccessBlockConfiguration", "OwnershipControls"} {
		if !reflect.DeepEqual(bucket[p], export[p]) {
			t.Errorf("VerifyWorkBucket: %s %v, want the export bucket's %v", p, bucket[p], export[p])
		}
	}
	rules, _ := bucket["LifecycleConfiguration"].(obj)["Rules"].([]any)
	expires := false
	for _, r := range rules {
		r := r.(obj)
		if r["Status"] == "Enabled" && r["Prefix"] == prefix+"/" && r["ExpirationInDays"] == float64(7) {
			expires = true
		}
	}
	if !expires {
		t.Errorf("VerifyWorkBucket: lifecycle %v, want objects under %s/ expired after 7 days", rules, prefix)
	}
	if refName(props(res["VerifyWorkBucketPolicy"])["Bucket"]) != "VerifyWorkBucket" {
		t.Errorf("VerifyWorkBucketPolicy is not the work bucket's")
	}

	// The state machine.
	sm := props(res["Verify"])
	if name, _ := json.Marshal(sm["Name"]); string(name) != `{"Fn::Sub":"${AWS::StackName}-verify"}` || refName(sm["Role"]) != "VerifyRole" || sm["Type"] != "STANDARD" {
		t.Errorf("Verify: Name %s, Role %v, Type %v", name, sm["Role"], sm["Type"])
	}
	subs, _ := sm["DefinitionSubstitutions"].(obj)
	if len(subs) != 2 || refName(subs["VerifierArn"]) != "Verifier" || refName(subs["MaxConcurrency"]) != "BackfillMaxConcurrency" {
		t.Errorf("substitutions %v, want the verifier's ARN and BackfillMaxConcurrency", subs)
	}
	def, _ := sm["Definition"].(obj)
	states, _ := def["States"].(obj)
	state := func(name string) obj {
		s, _ := states[name].(obj)
		if s == nil {
			t.Fatalf("no state %s", name)
		}
		return s
	}
	if def["QueryLanguage"] != "JSONata" || def["StartAt"] != "Plan" {
		t.Errorf("QueryLanguage %v, StartAt %v; want JSONata and Plan", def["QueryLanguage"], def["StartAt"])
	}
	order := []string{"Plan", "Scan", "Files", "Join", "Compare", "Finish", "Verdict"}
	for i, name := range order[:len(order)-1] {
		if next := state(name)["Next"]; next != order[i+1] {
			t.Errorf("%s goes to %v, want %s (%s)", name, next, order[i+1], strings.Join(order, " → "))
		}
	}
	if len(states) != len(order)+3 {
		t.Errorf("states %v, want %v and Agree, Mismatch, NotReady", slices.Sorted(maps.Keys(states)), order)
	}

	// Plan: the execution's input, only its export, incrementals and
	// skipMd5, the run the execution's name; every later step carries the
	// same and the plan's job, and the maps read the plan's lists.
	input := "$sift($states.input, function($v, $k) {$k in ['export', 'incrementals', 'skipMd5']})"
	plan := state("Plan")
	if p := plan["Arguments"].(obj)["Payload"]; p != "{% $merge(["+input+", {'action': 'plan', 'run': $states.context.Execution.Name}]) %}" {
		t.Errorf("Plan's payload is %v, want the input's export, incrementals and skipMd5, the action and the execution's name", p)
	}
	assign, _ := plan["Assign"].(obj)
	if assign["job"] != "{% $merge(["+input+", {'job': $states.result.Payload.job}]) %}" || assign["work"] != "{% $states.result.Payload.work %}" {
		t.Errorf("Plan assigns %v, want the job (the input and the plan's job) and the plan's work lists", assign)
	}
	for _, m := range []struct{ state, list, child, action, field string }{
		{"Scan", "segments", "ScanSegment", "scan", "segment"},
		{"Files", "files", "File", "file", "dataFileS3Key"},
		{"Join", "parts", "JoinPart", "join", "part"},
		{"Compare", "parts", "ComparePart", "compare", "part"},
	} {
		s := state(m.state)
		ip, _ := s["ItemProcessor"].(obj)
		pc, _ := ip["ProcessorConfig"].(obj)
		if s["Type"] != "Map" || pc["Mode"] != "DISTRIBUTED" || pc["ExecutionType"] != "STANDARD" {
			t.Errorf("%s: %v %v, want a Distributed Map of standard child executions", m.state, s["Type"], pc)
		}
		if s["MaxConcurrency"] != "{% ${MaxConcurrency} %}" || s["ToleratedFailurePercentage"] != float64(0) || s["Items"] != nil {
			t.Errorf("%s: MaxConcurrency %v, ToleratedFailurePercentage %v, Items %v; want BackfillMaxConcurrency, 0 and an ItemReader",
				m.state, s["MaxConcurrency"], s["ToleratedFailurePercentage"], s["Items"])
		}
		ir, _ := s["ItemReader"].(obj)
		want := obj{
			"Resource":     "arn:aws:states:::s3:getObject",
			"ReaderConfig": obj{"InputType": "JSON"},
			"Arguments":    obj{"Bucket": "{% $work.bucket %}", "Key": "{% $work." + m.list + " %}"},
		}
		if !reflect.DeepEqual(ir, want) {
			t.Errorf("%s: ItemReader %v, want the plan's %s list (a JSON array in the work bucket)", m.state, ir, m.list)
		}
		sel := obj{"job": "{% $job %}", m.field: "{% $states.context.Map.Item.Value." + m.field + " %}"}
		if !reflect.DeepEqual(s["ItemSelector"], sel) {
			t.Errorf("%s: ItemSelector %v, want %v", m.state, s["ItemSelector"], sel)
		}
		if !reflect.DeepEqual(s["Output"], obj{}) {
			t.Errorf("%s: Output %v, want {} (the next state reads nothing of it)", m.state, s["Output"])
		}
		children, _ := ip["States"].(obj)
		child, _ := children[m.child].(obj)
		if len(children) != 1 || ip["StartAt"] != m.child || child["Type"] != "Task" || child["End"] != true {
			t.Fatalf("%s: child states %v, want one task, %s", m.state, slices.Sorted(maps.Keys(children)), m.child)
		}
		args, _ := child["Arguments"].(obj)
		payload := "{% $merge([$states.input.job, {'action': '" + m.action + "', '" + m.field + "': $states.input." + m.field + "}]) %}"
		if args["FunctionName"] != "${VerifierArn}" || args["Payload"] != payload || child["Resource"] != "arn:aws:states:::lambda:invoke" {
			t.Errorf("%s: the child invokes %v with %v, want the verifier with %s", m.child, args["FunctionName"], args["Payload"], payload)
		}
		if !reflect.DeepEqual(child["Output"], obj{}) {
			t.Errorf("%s: Output %v, want {} (the map's result stays small whatever the number of items)", m.child, child["Output"])
		}
		checkRefusedNotRetried(t, m.child, child)
		checkRetried(t, m.child, child)
	}
	for _, name := range []string{"Plan", "Finish"} {
		checkRefusedNotRetried(t, name, state(name))
		checkRetried(t, name, state(name))
	}
	finish := state("Finish")
	if p := finish["Arguments"].(obj)["Payload"]; p != "{% $merge([$job, {'action': 'finish'}]) %}" || finish["Output"] != "{% $states.result.Payload %}" {
		t.Errorf("Finish: payload %v, output %v; want the job's finish, and its answer", p, finish["Output"])
	}
	b, _ := json.Marshal(def)
	var actions []string
	for _, a := range regexp.MustCompile(`'action': '(\w+)'`).FindAllStringSubmatch(string(b), -1) {
		actions = append(actions, a[1])
	}
	if !sameSet(actions, []string{"plan", "scan", "file", "join", "compare", "finish"}) || len(actions) != 6 {
		t.Errorf("verifier actions %v, want plan, scan, file, join, compare and finish", actions)
	}

	// The verdict.
	verdict := state("Verdict")
	choices, _ := verdict["Choices"].([]any)
	wantChoices := []any{
		obj{"Condition": "{% $states.input.verdict = 'AGREE' %}", "Next": "Agree"},
		obj{"Condition": "{% $states.input.verdict = 'MISMATCH' %}", "Next": "Mismatch"},
	}
	if verdict["Type"] != "Choice" || !reflect.DeepEqual(choices, wantChoices) || verdict["Default"] != "NotReady" {
		t.Errorf("Verdict: %v, want AGREE to Agree, MISMATCH to Mismatch, anything else to NotReady", verdict)
	}
	if state("Agree")["Type"] != "Succeed" {
		t.Errorf("Agree: %v, want a Succeed state", state("Agree"))
	}
	for name, errName := range map[string]string{"Mismatch": "VerifyMismatch", "NotReady": "VerifyNotReady"} {
		s := state(name)
		if s["Type"] != "Fail" || s["Error"] != errName || s["Cause"] != "{% $substring($states.input.report, -32768) %}" {
			t.Errorf("%s: %v, want a Fail state with error %s and the report as the cause (its last 32,768 characters, what a cause holds: the verdict is its last line)", name, s, errName)
		}
	}

	// The verifier's role: exactly these grants.
	scan := tableARN(vars["AGGREGATE_TABLE"])
	var scanned []string
	for _, r := range branches(scan) {
		j, _ := json.Marshal(r)
		for _, a := range []string{"dynamodb:Scan", "dynamodb:BatchGetItem", "dynamodb:DescribeTable"} {
			scanned = append(scanned, a+" on "+string(j))
		}
	}
	wantGrants := append(scanned,
		`logs:CreateLogStream on {"Fn::GetAtt":["VerifierLogGroup","Arn"]}`,
		`logs:PutLogEvents on {"Fn::GetAtt":["VerifierLogGroup","Arn"]}`,
		`xray:PutTraceSegments on *`,
		`xray:PutTelemetryRecords on *`,
		`s3:GetObject on {"Fn::Sub":"${ExportBucket.Arn}/*"}`,
		`s3:ListBucket on {"Fn::GetAtt":["ExportBucket","Arn"]}`,
		`kms:GenerateDataKey on {"Ref":"DataKmsKeyArn"}`,
		`kms:Decrypt on {"Ref":"DataKmsKeyArn"}`,
		`s3:GetObject on {"Fn::Sub":"`+work+`"}`,
		`s3:PutObject on {"Fn::Sub":"`+work+`"}`,
		`s3:AbortMultipartUpload on {"Fn::Sub":"`+work+`"}`,
		`s3:ListBucket on {"Fn::GetAtt":["VerifyWorkBucket","Arn"]}`,
	)
	got := grants(t, tp, "VerifierRole")
	if !sameSet(got, wantGrants) || len(got) != len(wantGrants) {
		t.Errorf("VerifierRole grants:\n%s\nwant exactly:\n%s", strings.Join(got, "\n"), strings.Join(slices.Sorted(slices.Values(wantGrants)), "\n"))
	}
	for _, g := range got {
		action, on, _ := strings.Cut(g, " on ")
		if strings.HasPrefix(action, "dynamodb:") && !slices.Contains([]string{"dynamodb:Scan", "dynamodb:BatchGetItem", "dynamodb:DescribeTable"}, action) {
			t.Errorf("VerifierRole: %s: the verifier only reads (Scan, the marker by BatchGetItem, the table's size by DescribeTable)", g)
		}
		if write := strings.HasPrefix(action, "s3:Put") || strings.HasPrefix(action, "s3:Delete") || strings.HasPrefix(action, "s3:Abort"); write && on != `{"Fn::Sub":"`+work+`"}` {
			t.Errorf("VerifierRole: %s: S3 writes only under the work bucket's %s/", g, prefix)
		}
	}
	// Exports are read as the backfiller reads them; the source table is
	// denied, whatever the table parameters name.
	for _, sid := range []string{"ReadExports", "ListExports"} {
		if v, bf := statement(t, tp, "VerifierRole", sid), statement(t, tp, "BackfillerRole", sid); v == nil || !reflect.DeepEqual(v, bf) {
			t.Errorf("VerifierRole's %s is %v, want the backfiller's %v", sid, v, bf)
		}
	}
	if v, bf := statement(t, tp, "VerifierRole", "NeverTheSourceTable"), statement(t, tp, "BackfillerRole", "NeverTheSourceTable"); v == nil || !reflect.DeepEqual(v, bf) {
		t.Errorf("VerifierRole's NeverTheSourceTable is %v, want the backfiller's %v", v, bf)
	}

	// The state machine's role: the Backfill state machine's, for the
	// verifier and its own executions, and the plan's lists.
	var wantSM []string
	for _, g := range grants(t, tp, "BackfillRole") {
		g = strings.ReplaceAll(g, "Backfiller", "Verifier")
		wantSM = append(wantSM, strings.ReplaceAll(g, "${AWS::StackName}-backfill", "${AWS::StackName}-verify"))
	}
	wantSM = append(wantSM, `s3:GetObject on {"Fn::Sub":"`+work+`"}`, `kms:Decrypt on {"Ref":"DataKmsKeyArn"}`)
	if got := grants(t, tp, "VerifyRole"); !sameSet(got, wantSM) || len(got) != len(wantSM) {
		t.Errorf("VerifyRole grants:\n%s\nwant exactly:\n%s", strings.Join(got, "\n"), strings.Join(slices.Sorted(slices.Values(wantSM)), "\n"))
	}
	for role, like := range map[string]string{"VerifierRole": "BackfillerRole", "VerifyRole": "BackfillRole"} {
		for _, p := range []string{"AssumeRolePolicyDocument", "PermissionsBoundary"} {
			if got, want := props(res[role])[p], props(res[like])[p]; !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %s %v, want %s's %v", role, p, got, like, want)
			}
		}
	}

	// The dashboard shows its executions.
	body, err := flattenAll(props(res["Dashboard"])["DashboardBody"])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, `"title":"verify: executions"`) || !strings.Contains(body, `["AWS/States","ExecutionsFailed","StateMachineArn","Verify",`) {
		t.Errorf("the dashboard has no widget of the Verify state machine's executions")
	}
}

// checkRetried: a task state retries Lambda's service errors and task
// failures.
func checkRetried(t *testing.T, name string, s obj) {
	t.Helper()
	var retried []string
	retries, _ := s["Retry"].([]any)
	for _, r := range retries {
		if r.(obj)["MaxAttempts"] != float64(0) {
			retried = append(retried, strs(r.(obj)["ErrorEquals"])...)
		}
	}
	for _, want := range []string{"Lambda.ServiceException", "Lambda.TooManyRequestsException", "States.TaskFailed"} {
		if !slices.Contains(retried, want) {
			t.Errorf("%s does not retry %s (it retries %v)", name, want, retried)
		}
	}
}

// tableARN is the ARN of the table an environment variable names: a Ref
// to a table parameter, or to a table of the template, in each branch of
// its Fn::If.
func tableARN(v any) any {
	m, _ := v.(obj)
	if f, ok := m["Fn::If"].([]any); ok && len(f) == 3 {
		return obj{"Fn::If": []any{f[0], tableARN(f[1]), tableARN(f[2])}}
	}
	name := refName(m)
	if strings.HasSuffix(name, "TableName") {
		return obj{"Fn::Sub": "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${" + name + "}"}
	}
	return obj{"Fn::GetAtt": []any{name, "Arn"}}
}

// grants lists what a role's Allow statements grant, every branch of an
// Fn::If taken: "action on resource" (a resource that is not a string as
// JSON), and " if condition" when the statement has one.
func grants(t *testing.T, tp tmpl, role string) []string {
	t.Helper()
	var out []string
	for _, st := range allowStatements(t, tp, role) {
		cond := ""
		if c, ok := st["Condition"]; ok {
			b, _ := json.Marshal(c)
			cond = " if " + string(b)
		}
		rs := st["Resource"]
		list, ok := rs.([]any)
		if !ok {
			list = []any{rs}
		}
		for _, a := range strs(st["Action"]) {
			for _, r := range list {
				for _, b := range branches(r) {
					on, ok := b.(string)
					if !ok {
						j, _ := json.Marshal(b)
						on = string(j)
					}
					out = append(out, a+" on "+on+cond)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// statement returns a role's statement of that Sid, whatever its effect
// (nil: none), with its Fn::If, if any, taken on its first branch.
func statement(t *testing.T, tp tmpl, role, sid string) obj {
	t.Helper()
	for _, p := range props(tp.resources()[role])["Policies"].([]any) {
		for _, s := range p.(obj)["PolicyDocument"].(obj)["Statement"].([]any) {
			for _, b := range branches(s) {
				if st := b.(obj); st["Sid"] == sid {
					return st
				}
			}
		}
	}
	return nil
}

// TestVerifyDefinitionSpeaksTheVerifiers: every field the Verify state
// machine's definition reads of the verifier's answers, or writes into its
// events, is one the verifier's Response or Event carries, by its JSON name.
func TestVerifyDefinitionSpeaksTheVerifiers(t *testing.T) {
	def, err := json.Marshal(props(loadTemplate(t).resources()["Verify"])["Definition"])
	if err != nil {
		t.Fatal(err)
	}
	fields := func(v any) []string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		var out []string
		for k, v := range m {
			out = append(out, k)
			if sub, ok := v.(map[string]any); ok {
				for sk := range sub {
					out = append(out, k+"."+sk)
				}
			}
		}
		return out
	}
	resp := fields(verifier.Response{Action: "finish", Job: "j", Work: &verifier.Work{Bucket: "b", Segments: "s", Files: "f", Parts: "p"}, Verdict: verify.Agree, Report: "r"})
	event := fields(verifier.Event{Action: "scan", Export: "e", Incrementals: []string{"i"}, SkipMD5: true, Run: "r", Job: "j", Segment: 1, DataFileS3Key: "d", Part: 1})
	for _, read := range []string{"job", "work", "work.bucket", "work.segments", "work.files", "work.parts", "verdict", "report"} {
		if !slices.Contains(resp, read) {
			t.Errorf("verifier.Response has no %q", read)
		}
		last := read[strings.LastIndex(read, ".")+1:]
		if !strings.Contains(string(def), "Payload."+read) && !strings.Contains(string(def), "."+last) {
			t.Errorf("the definition does not read %q: the test is stale", read)
		}
	}
	for _, written := range []string{"action", "export", "incrementals", "skipMd5", "run", "job", "segment", "dataFileS3Key", "part"} {
		if !slices.Contains(event, written) {
			t.Errorf("verifier.Event has no %q", written)
		}
		if !strings.Contains(string(def), "'"+written+"'") {
			t.Errorf("the definition does not write %q into an event: the test is stale", written)
		}
	}
}
