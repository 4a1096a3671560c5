#!/usr/bin/env bash
# The whole test suite: every crate's unit, property and integration tests.
# This is the README's test command; .ci/run calls it after formatting and lint checks.
#
# One test drives a real browser (crates/cli/tests/it/explorer.rs: headless Chromium renders the
# model checker's explorer). On a machine without one, Debian's chromium is installed first.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${RINGLEADER_BROWSER:-}" ] && ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
  echo "== installing chromium for the browser test (Debian package)"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

if ! command -v protoc >/dev/null && [ -z "${PROTOC:-}" ]; then
  # The etcd-client crate (the client of crates/cli/tests/it/etcd_grpc.rs) runs protoc in its build.
  echo "== installing protoc for the etcd-client test dependency (Debian package)"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq protobuf-compiler >/dev/null
fi

if ! command -v etcdctl >/dev/null; then
  # crates/cli/tests/it/etcdctl.rs runs Debian's etcdctl (etcd v3.4) against the service.
  echo "== installing etcdctl for crates/cli/tests/it/etcdctl.rs (Debian package etcd-client)"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-client >/dev/null
fi

if ! command -v go >/dev/null; then
  # crates/lab/tests/go.rs builds a lab node written in Go (standard library only) to prove the
  # lab's protocol is language-neutral.
  echo "== installing Go for crates/lab/tests/go.rs (Debian package golang-go)"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null
fi

cargo test --workspace --locked
