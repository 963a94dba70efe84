// Package apicheck holds the test that keeps Tributary's public API usable
// from other modules: no exported identifier of an importable package may
// name a type from an internal/ package (another module could not name it,
// nor build a value of it).
package apicheck
