#!/usr/bin/env bash
# The whole test suite: formatting, vet, and every test with the race detector against a real
# PostgreSQL (STEAD_TEST_DATABASE_URL, default the local server). Starts PostgreSQL if it is
# installed but down; installs it with apt if it is missing.
set -euo pipefail
cd "$(dirname "$0")"

url=${STEAD_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
export STEAD_TEST_DATABASE_URL=$url

if [[ $url == *127.0.0.1* || $url == *localhost* ]]; then
  if ! command -v pg_isready >/dev/null 2>&1 || ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
    echo "test.sh: installing PostgreSQL" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql postgresql-contrib >/dev/null
  fi
  if ! pg_isready -q -h 127.0.0.1 -p 5432; then
    echo "test.sh: starting PostgreSQL" >&2
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
    for _ in $(seq 1 60); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
  fi
fi

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [[ -n $unformatted ]]; then
  echo "gofmt would change:" $unformatted >&2
  exit 1
fi
go vet ./...
go test -race -count=1 -timeout 40m ./...

# Modules of their own under examples/ (a third-party backend): built and tested like the rest.
for mod in examples/*/go.mod; do
  dir=$(dirname "$mod")
  (cd "$dir" && go vet ./... && go test -race -count=1 ./...)
done
