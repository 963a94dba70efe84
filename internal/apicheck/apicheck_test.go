package apicheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// TestNoInternalTypesInPublicAPI loads every importable package of the
// module and walks its exported API — functions, methods of exported
// types, exported struct fields and interface methods, variables,
// constants and type definitions — and fails for each internal type that
// appears in it.
func TestNoInternalTypesInPublicAPI(t *testing.T) {
	pkgs := importable(load(t, packages.NeedName|packages.NeedTypes|packages.NeedImports|packages.NeedDeps, "./..."))
	for _, p := range pkgs {
		for _, leak := range internalTypes(p.Types) {
			t.Errorf("%s: %s", p.PkgPath, leak)
		}
	}
	if len(pkgs) < 10 {
		t.Fatalf("checked %d packages: the load went wrong", len(pkgs))
	}
}

// load loads the module's packages that pattern matches, with mode; a
// package that does not load fails the test.
func load(t *testing.T, mode packages.LoadMode, pattern string) []*packages.Package {
	t.Helper()
	pkgs, err := packages.Load(&packages.Config{Mode: mode, Dir: "../.."}, pattern)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Errorf("%s: %v", p.PkgPath, e)
		}
	}
	return pkgs
}

// importable keeps the packages another module may import: not internal,
// not a main.
func importable(pkgs []*packages.Package) []*packages.Package {
	var out []*packages.Package
	for _, p := range pkgs {
		if !isInternal(p.PkgPath) && p.Name != "main" && p.Types != nil {
			out = append(out, p)
		}
	}
	return out
}

func isInternal(path string) bool {
	return strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal")
}

// internalTypes lists the exported identifiers of pkg whose declared type
// names an internal package's type, as "identifier: type".
func internalTypes(pkg *types.Package) []string {
	var out []string
	report := func(where string, t types.Type) {
		if bad := findInternal(t, map[types.Type]bool{}); bad != "" {
			out = append(out, where+": "+bad)
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.TypeName:
			named, ok := o.Type().(*types.Named)
			if !ok { // an alias
				report(name, o.Type())
				continue
			}
			report(name, named.Underlying())
			for m := range named.Methods() {
				if m.Exported() {
					report(name+"."+m.Name(), m.Type())
				}
			}
		default:
			report(name, obj.Type())
		}
	}
	slices.Sort(out)
	return out
}

// findInternal returns the first internal named type that t refers to
// through its exported parts, or "".
func findInternal(t types.Type, seen map[types.Type]bool) string {
	if seen[t] {
		return ""
	}
	seen[t] = true
	switch t := t.(type) {
	case *types.Named:
		if obj := t.Obj(); obj.Pkg() != nil && isInternal(obj.Pkg().Path()) {
			return obj.Pkg().Path() + "." + obj.Name()
		}
		if args := t.TypeArgs(); args != nil {
			for a := range args.Types() {
				if bad := findInternal(a, seen); bad != "" {
					return bad
				}
			}
		}
		return "" // a named type of a public package is checked there
	case *types.Alias:
		return findInternal(types.Unalias(t), seen)
	case *types.Pointer:
		return findInternal(t.Elem(), seen)
	case *types.Slice:
		return findInternal(t.Elem(), seen)
	case *types.Array:
		return findInternal(t.Elem(), seen)
	case *types.Map:
		if bad := findInternal(t.Key(), seen); bad != "" {
			return bad
		}
		return findInternal(t.Elem(), seen)
	case *types.Chan:
		return findInternal(t.Elem(), seen)
	case *types.Signature:
		for _, tuple := range []*types.Tuple{t.Params(), t.Results()} {
			for v := range tuple.Variables() {
				if bad := findInternal(v.Type(), seen); bad != "" {
					return bad
				}
			}
		}
	case *types.Struct:
		for f := range t.Fields() {
			if f.Exported() || f.Embedded() {
				if bad := findInternal(f.Type(), seen); bad != "" {
					return bad
				}
			}
		}
	case *types.Interface:
		for m := range t.Methods() {
			if m.Exported() {
				if bad := findInternal(m.Type(), seen); bad != "" {
					return bad
				}
			}
		}
		for e := range t.EmbeddedTypes() {
			if bad := findInternal(e, seen); bad != "" {
				return bad
			}
		}
	}
	return ""
}

// TestInternalTypes: the walk finds an internal type wherever an exported
// identifier's type can name one, and nowhere else.
func TestInternalTypes(t *testing.T) {
	const internalSrc = `package secret
type T struct{}
type I interface{ M() }`
	const src = `package api
import "example.com/m/internal/secret"
type unexported struct{ F secret.T }
type Fine struct{ f secret.T; Exported int }
func (Fine) m(secret.T) {}
var Var secret.T
type Field struct{ F *secret.T }
type Method struct{}
func (Method) Get() []secret.T { return nil }
type Iface interface{ Get() map[string]secret.I }
func Func(func(chan secret.T)) {}
type Alias = secret.T
type Embed struct{ secret.T }
type Gen[X any] struct{ X X }
var GenVar Gen[secret.T]
func Ok(unexported) {}`
	fset := token.NewFileSet()
	parse := func(src string) *ast.File {
		f, err := parser.ParseFile(fset, "x.go", src, 0)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	secret, err := (&types.Config{}).Check("example.com/m/internal/secret", fset, []*ast.File{parse(internalSrc)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	imp := importerFunc(func(string) (*types.Package, error) { return secret, nil })
	api, err := (&types.Config{Importer: imp}).Check("example.com/m/api", fset, []*ast.File{parse(src)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(internalTypes(api), "\n")
	want := strings.Join([]string{
		"Alias: example.com/m/internal/secret.T",
		"Embed: example.com/m/internal/secret.T",
		"Field: example.com/m/internal/secret.T",
		"Func: example.com/m/internal/secret.T",
		"GenVar: example.com/m/internal/secret.T",
		"Iface: example.com/m/internal/secret.I",
		"Method.Get: example.com/m/internal/secret.T",
		"Var: example.com/m/internal/secret.T",
	}, "\n")
	if got != want {
		t.Errorf("found:\n%s\nwant:\n%s", got, want)
	}
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }
