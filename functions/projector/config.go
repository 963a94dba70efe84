package main

import "github.com/tributary/tributary/functions/internal/projenv"

// Config is the projector's configuration, read from the environment:
// AGGREGATE_TABLE (required), TYPE_ATTRIBUTE, VERSION_ATTRIBUTE,
// UNKNOWN_TYPE_POLICY (skip|fail), PERMANENT_FAILURES (report|skip),
// IGNORE_TYPES, TOMBSTONE_TTL_DAYS.
type Config = projenv.Config

// loadConfig reads the configuration and reports every problem at once.
func loadConfig(getenv func(string) string) (Config, error) { return projenv.Load(getenv) }
