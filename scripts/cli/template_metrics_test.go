package cli

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tributary/tributary/internal/metrics"
)

// metricRef is one metric the template reads: where, namespace, name and
// dimensions (name → value; a Ref is its logical ID).
type metricRef struct {
	where, namespace, name string
	dims                   map[string]string
}

func (r metricRef) dimNames() []string {
	var out []string
	for k := range r.dims {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// flattenAll renders a string built with Fn::Join, Fn::If and Fn::Sub as
// it is with every condition true (so that every conditional part is in
// it), each ${X} replaced by X.
func flattenAll(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case obj:
		if j, ok := x["Fn::Join"].([]any); ok && len(j) == 2 {
			sep, _ := j[0].(string)
			parts, _ := j[1].([]any)
			var out []string
			for _, p := range parts {
				s, err := flattenAll(p)
				if err != nil {
					return "", err
				}
				out = append(out, s)
			}
			return strings.Join(out, sep), nil
		}
		if f, ok := x["Fn::If"].([]any); ok && len(f) == 3 {
			return flattenAll(f[1])
		}
		if s, ok := x["Fn::Sub"].(string); ok {
			return regexp.MustCompile(`\$\{([A-Za-z0-9_.:]+)\}`).ReplaceAllString(s, "$1"), nil
		}
	}
	return "", fmt.Errorf("cannot flatten %v", v)
}

var schemaQuery = regexp.MustCompile(`^SELECT\s+[A-Z]+\((\w+)\)\s+FROM\s+SCHEMA\(\s*"([^"]+)"\s*((?:,\s*\w+\s*)*)\)(?:\s+WHERE\s+(.*?))?(?:\s+GROUP BY\s+[\w, ]+)?$`)

// fromQuery reads a Metrics Insights query's metric and dimensions.
func fromQuery(where, q string) (metricRef, error) {
	m := schemaQuery.FindStringSubmatch(strings.TrimSpace(q))
	if m == nil {
		return metricRef{}, fmt.Errorf("%s: query %q is not SELECT FN(metric) FROM SCHEMA(\"namespace\", dims…)", where, q)
	}
	ref := metricRef{where: where, name: m[1], namespace: m[2], dims: map[string]string{}}
	for _, d := range strings.Split(m[3], ",") {
		if d = strings.TrimSpace(d); d != "" {
			ref.dims[d] = ""
		}
	}
	for _, cond := range regexp.MustCompile(`(\w+)\s*=\s*'([^']*)'`).FindAllStringSubmatch(m[4], -1) {
		if _, ok := ref.dims[cond[1]]; !ok {
			return metricRef{}, fmt.Errorf("%s: query %q filters on %s, which is not in its SCHEMA", where, q, cond[1])
		}
		ref.dims[cond[1]] = cond[2]
	}
	return ref, nil
}

func dimsOf(v any) map[string]string {
	out := map[string]string{}
	ds, _ := v.([]any)
	for _, d := range ds {
		d, _ := d.(obj)
		name, _ := d["Name"].(string)
		val, _ := d["Value"].(string)
		if val == "" {
			val = refName(d["Value"])
		}
		if val == "" {
			val, _ = flattenAll(d["Value"])
		}
		out[name] = val
	}
	return out
}

// templateMetrics returns every metric the template's alarms and
// dashboards read.
func templateMetrics(t *testing.T, tp tmpl) []metricRef {
	t.Helper()
	var refs []metricRef
	for name, a := range tp.ofType("AWS::CloudWatch::Alarm") {
		p := props(a)
		if mn, ok := p["MetricName"].(string); ok {
			ns, _ := p["Namespace"].(string)
			refs = append(refs, metricRef{where: name, namespace: ns, name: mn, dims: dimsOf(p["Dimensions"])})
		}
		ms, _ := p["Metrics"].([]any)
		for _, m := range ms {
			m := m.(obj)
			if st, ok := m["MetricStat"].(obj); ok {
				mm, _ := st["Metric"].(obj)
				ns, _ := mm["Namespace"].(string)
				mn, _ := mm["MetricName"].(string)
				refs = append(refs, metricRef{where: name, namespace: ns, name: mn, dims: dimsOf(mm["Dimensions"])})
				continue
			}
			expr, err := flattenAll(m["Expression"])
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if strings.Contains(expr, "SELECT") {
				ref, err := fromQuery(name, expr)
				if err != nil {
					t.Error(err)
					continue
				}
				refs = append(refs, ref)
			}
		}
	}
	for name, d := range tp.ofType("AWS::CloudWatch::Dashboard") {
		body, err := flattenAll(props(d)["DashboardBody"])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var dash struct {
			Widgets []struct {
				Type       string `json:"type"`
				Properties struct {
					Title   string `json:"title"`
					Metrics []any  `json:"metrics"`
				} `json:"properties"`
			} `json:"widgets"`
		}
		if err := json.Unmarshal([]byte(body), &dash); err != nil {
			t.Fatalf("%s: the dashboard body (every condition true) is not JSON: %v\n%s", name, err, body)
		}
		for _, w := range dash.Widgets {
			where := fmt.Sprintf("%s widget %q", name, w.Properties.Title)
			for _, el := range w.Properties.Metrics {
				if e, ok := el.(map[string]any); ok {
					ref, err := fromQuery(where, fmt.Sprint(e["expression"]))
					if err != nil {
						t.Error(err)
						continue
					}
					refs = append(refs, ref)
					continue
				}
				m, _ := el.([]any)
				var strs []string
				for _, v := range m {
					if s, ok := v.(string); ok {
						strs = append(strs, s)
					}
				}
				if len(strs) < 2 || len(strs)%2 != 0 || slices.Contains(strs, ".") {
					t.Errorf("%s: metric %v is not [namespace, name, dimension, value…] (no \".\" shorthand)", where, m)
					continue
				}
				ref := metricRef{where: where, namespace: strs[0], name: strs[1], dims: map[string]string{}}
				for i := 2; i < len(strs); i += 2 {
					ref.dims[strs[i]] = strs[i+1]
				}
				refs = append(refs, ref)
			}
		}
	}
	return refs
}

// awsDimensions are the dimensions the template reads AWS's own metrics by.
var awsDimensions = map[string][]string{
	"AWS/Lambda":   {"FunctionName"},
	"AWS/States":   {"StateMachineArn"},
	"AWS/DynamoDB": {"TableName"},
	"AWS/S3":       {"BucketName", "FilterId"},
}

// TestTemplateMetricsAreWritten: every metric the template's alarms and
// dashboard read in the Tributary namespace is one the code writes
// (internal/metrics, through which every emitter writes), with the same
// name and the same dimensions, and a dimension of a fixed or listed value
// has that value; AWS's metrics are read by their own dimensions; every
// family the code writes is on the dashboard. A Tributary metric named in
// the template but not in the code, or with other dimensions, fails here.
func TestTemplateMetricsAreWritten(t *testing.T) {
	tp := loadTemplate(t)
	refs := templateMetrics(t, tp)
	if len(refs) == 0 {
		t.Fatal("no metric read by the template")
	}
	shown := map[*metrics.Family]bool{}
	for _, r := range refs {
		if want, ok := awsDimensions[r.namespace]; ok {
			if !slices.Equal(r.dimNames(), want) {
				t.Errorf("%s: %s %s by %v, want %v", r.where, r.namespace, r.name, r.dimNames(), want)
			}
			continue
		}
		if r.namespace != metrics.Namespace {
			t.Errorf("%s: namespace %q of %s: neither AWS's nor %s", r.where, r.namespace, r.name, metrics.Namespace)
			continue
		}
		f, ok := metrics.Find(r.name, r.dimNames())
		if !ok {
			t.Errorf("%s: reads %s by %v, which the code does not write with those dimensions (internal/metrics)", r.where, r.name, r.dimNames())
			continue
		}
		for d, v := range r.dims {
			if fixed, ok := f.Fixed[d]; ok && v != fixed {
				t.Errorf("%s: %s with %s=%q; the code writes %q", r.where, r.name, d, v, fixed)
			}
			if vs, ok := f.Values[d]; ok && v != "" && !slices.Contains(vs, v) {
				t.Errorf("%s: %s with %s=%q; the code writes one of %v", r.where, r.name, d, v, vs)
			}
		}
		if strings.Contains(r.where, "widget") {
			shown[f] = true
		}
	}
	for _, f := range metrics.Families() {
		if !shown[f] {
			t.Errorf("the dashboard shows no metric of the %s family (%v)", f.Name, f.Dimensions)
		}
	}
}

// TestCodeWritesMetricsThroughTheList: no code writes EMF but through
// internal/metrics (so nothing unlisted can be written), and every metric
// listed there is named by the code that writes it.
func TestCodeWritesMetricsThroughTheList(t *testing.T) {
	literals := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".tools", "testdata", "examples", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(repoRoot, path)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, "internal/emf/") || strings.HasPrefix(rel, "internal/metrics/") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && id.Name == "emf" && x.Sel.Name == "New" {
					t.Errorf("%s: emf.New: write metrics through internal/metrics, whose list the template is checked against", fset.Position(x.Pos()))
				}
			case *ast.BasicLit:
				if x.Kind == token.STRING {
					if s, err := strconv.Unquote(x.Value); err == nil {
						literals[s] = true
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range metrics.Families() {
		for _, m := range f.Metrics {
			if !literals[m.Name] {
				t.Errorf("internal/metrics lists %s (%s family), which no code names", m.Name, f.Name)
			}
		}
	}
}
