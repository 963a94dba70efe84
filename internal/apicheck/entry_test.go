package apicheck

import (
	"go/types"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// TestFunctionEntryShape pins the one shape of every Lambda function
// package under functions/ (docs/api.md): Main(env), LoadConfig(lookup)
// (Config, error), and New([ctx,] cfg, env, clients…, log[, metrics]
// [, opts…]) (handler, error), the remodeler's taking its remodel in the
// environment's place.
func TestFunctionEntryShape(t *testing.T) {
	pkgs := importable(load(t, packages.NeedName|packages.NeedTypes, "./functions/..."))
	for _, p := range pkgs {
		for _, problem := range entryShape(p.Types) {
			t.Errorf("%s: %s", p.PkgPath, problem)
		}
	}
	if len(pkgs) < 6 {
		t.Fatalf("checked %d function packages, want the six", len(pkgs))
	}
}

// entryShape lists how pkg's entry points differ from the shape.
func entryShape(pkg *types.Package) []string {
	var problems []string
	sig := func(name string) *types.Signature {
		f, ok := pkg.Scope().Lookup(name).(*types.Func)
		if !ok {
			problems = append(problems, "no func "+name)
			return nil
		}
		return f.Signature()
	}
	str := func(t types.Type) string {
		return types.TypeString(t, func(p *types.Package) string { return p.Name() })
	}
	params := func(s *types.Signature) []string {
		var out []string
		for v := range s.Params().Variables() {
			out = append(out, str(v.Type()))
		}
		return out
	}
	results := func(s *types.Signature) []string {
		var out []string
		for v := range s.Results().Variables() {
			out = append(out, str(v.Type()))
		}
		return out
	}
	if s := sig("Main"); s != nil {
		if got := strings.Join(params(s), ", "); got != "*projections.Environment" || s.Results().Len() != 0 {
			problems = append(problems, "Main("+got+") "+strings.Join(results(s), ", ")+", want Main(*projections.Environment)")
		}
	}
	config := pkg.Name() + ".Config"
	if s := sig("LoadConfig"); s != nil {
		got, res := strings.Join(params(s), ", "), results(s)
		if got != "func(string) (string, bool)" || len(res) != 2 || !isConfig(res[0], config) || res[1] != "error" {
			problems = append(problems, "LoadConfig("+got+") ("+strings.Join(res, ", ")+"), want LoadConfig(func(string) (string, bool)) (Config, error)")
		}
	}
	if s := sig("New"); s != nil {
		ps, res := params(s), results(s)
		if len(ps) > 0 && ps[0] == "context.Context" {
			ps = ps[1:]
		}
		if s.Variadic() {
			ps = ps[:len(ps)-1]
		}
		if n := len(ps); n > 0 && ps[n-1] == "io.Writer" {
			ps = ps[:n-1]
		}
		env := "*projections.Environment"
		if pkg.Name() == "remodeler" {
			env = "*remodeler.Remodel" // the remodel takes the environment's place
		}
		ok := len(ps) >= 3 && isConfig(ps[0], config) && ps[1] == env && ps[len(ps)-1] == "*slog.Logger" &&
			len(res) == 2 && res[1] == "error"
		if !ok {
			problems = append(problems, "New("+strings.Join(params(s), ", ")+") ("+strings.Join(res, ", ")+"), want New([ctx,] Config, env, clients…, *slog.Logger[, metrics][, opts…]) (handler, error)")
		}
	}
	return problems
}

// isConfig reports whether a type's name is the package's Config (or, in
// the Kinesis projector, the projector's, which its Config is an alias
// of).
func isConfig(typ, config string) bool {
	return typ == config || config == "kinesisprojector.Config" && typ == "projector.Config"
}
