// Package apicheck holds the tests that keep Tributary's public API usable
// from other modules and its layers pointing one way: no exported
// identifier of an importable package may name a type from an internal/
// package (another module could not name it, nor build a value of it), and
// no package imports one of a floor above its own (pipeline/, projections/
// with the engine in internal/engine/, infra/, internal/capabilities/, then
// functions/ and scripts/: the folders are the floors, docs/api.md).
package apicheck
