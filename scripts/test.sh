#!/usr/bin/env bash
# The whole test suite: every crate's unit, property and integration tests.
# This is the README's test command; .ci/run calls it after formatting and lint checks.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked
