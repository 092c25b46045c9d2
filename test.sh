#!/usr/bin/env bash
# The whole test suite: formatting, vet, staticcheck, and every test with the race detector
# against a real PostgreSQL (STEAD_TEST_DATABASE_URL, default the local server). Starts PostgreSQL
# if it is installed but down; installs it with apt if it is missing. Starts a PgBouncer in
# transaction mode in front of it for the suites that run through one (STEAD_TEST_PGBOUNCER_URL),
# installing it from Debian if it is missing, and stops it at the end. Installs Chromium from
# Debian if it is missing, for the console's real-browser test.
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

# start_pgbouncer runs PgBouncer in transaction mode on a free port in front of the test server,
# with its own config, auth file, log and pid file in a temp dir, and exports its URL as
# STEAD_TEST_PGBOUNCER_URL.
bouncer_dir=
start_pgbouncer() {
  if ! command -v pgbouncer >/dev/null 2>&1 && [[ ! -x /usr/sbin/pgbouncer ]]; then
    echo "test.sh: installing PgBouncer" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null
  fi
  local bin
  bin=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
  # The test URL's user, port and database: postgres://user[:password]@host:port/db?params
  local rest=${url#*://} user port db listen
  user=${rest%%@*}
  user=${user%%:*}
  port=${rest#*@}
  port=${port%%/*}
  port=${port##*:}
  [[ $port =~ ^[0-9]+$ ]] || port=5432
  db=${rest#*/}
  db=${db%%\?*}
  # A free port: nothing answers a connect there.
  for _ in $(seq 1 50); do
    listen=$((20000 + RANDOM % 20000))
    (exec 3<>"/dev/tcp/127.0.0.1/$listen") 2>/dev/null || break
  done
  bouncer_dir=$(mktemp -d -t stead-pgbouncer.XXXXXX)
  chmod 755 "$bouncer_dir"
  printf '%s\n' \
    '[databases]' \
    "* = host=127.0.0.1 port=$port" \
    '[pgbouncer]' \
    'listen_addr = 127.0.0.1' \
    "listen_port = $listen" \
    'unix_socket_dir =' \
    'auth_type = trust' \
    "auth_file = $bouncer_dir/users.txt" \
    'pool_mode = transaction' \
    'default_pool_size = 20' \
    'max_client_conn = 2000' \
    "logfile = $bouncer_dir/pgbouncer.log" \
    "pidfile = $bouncer_dir/pgbouncer.pid" >"$bouncer_dir/pgbouncer.ini"
  printf '"%s" ""\n' "$user" >"$bouncer_dir/users.txt"
  # PgBouncer refuses to run as root.
  local as=()
  if [[ $(id -u) == 0 ]]; then
    chown -R postgres "$bouncer_dir"
    as=(runuser -u postgres --)
  fi
  if ! "${as[@]}" "$bin" -d "$bouncer_dir/pgbouncer.ini"; then
    echo "test.sh: PgBouncer did not start; its log:" >&2
    cat "$bouncer_dir/pgbouncer.log" >&2 || true
    return 1
  fi
  trap stop_pgbouncer EXIT
  for _ in $(seq 1 50); do
    pg_isready -q -h 127.0.0.1 -p "$listen" && break
    sleep 0.1
  done
  export STEAD_TEST_PGBOUNCER_URL="postgres://$user@127.0.0.1:$listen/$db?sslmode=disable"
  echo "test.sh: PgBouncer (transaction mode) on 127.0.0.1:$listen, files in $bouncer_dir" >&2
}

stop_pgbouncer() {
  if [[ -n $bouncer_dir && -f $bouncer_dir/pgbouncer.pid ]]; then
    kill "$(cat "$bouncer_dir/pgbouncer.pid")" 2>/dev/null || true
  fi
  [[ -n $bouncer_dir ]] && rm -rf "$bouncer_dir"
  return 0
}

if [[ -z ${STEAD_TEST_PGBOUNCER_URL:-} && ($url == *127.0.0.1* || $url == *localhost*) ]]; then
  # Without it the PgBouncer tests skip, or fail where STEAD_REQUIRE_PGBOUNCER=1 (CI).
  start_pgbouncer || echo "test.sh: continuing without PgBouncer" >&2
fi

# The console's browser test drives a headless Chromium; without one it skips, or fails where
# STEAD_REQUIRE_BROWSER=1 (CI).
if ! command -v chromium >/dev/null 2>&1; then
  echo "test.sh: installing Chromium" >&2
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } ||
    echo "test.sh: continuing without Chromium" >&2
fi

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [[ -n $unformatted ]]; then
  echo "gofmt would change:" $unformatted >&2
  exit 1
fi

# Every module go.work uses but the examples and bench/river (below): the library, otelstead,
# console, cli, cmd/stead and bench, all in one go command each. In workspace mode ./... names the
# library's packages only, so each module is named by its directory.
modules=()
while IFS= read -r dir; do
  case ${dir#"$PWD"/} in examples/* | bench/river) continue ;; esac
  modules+=("$dir/...")
done < <(go list -m -f '{{.Dir}}')
go vet "${modules[@]}"
# staticcheck, pinned, run from the module cache so that no go.mod carries it.
staticcheck="go run honnef.co/go/tools/cmd/staticcheck@v0.8.2"
$staticcheck "${modules[@]}"
# The library's exported API against the revision api/baseline names: an incompatible change fails unless
# CHANGELOG.md names it under Unreleased (README.md, "Stability").
internal/tools/apicheck.sh
# Every package but the chaos drills, then their short forms alone (the crash drill and the
# failover drill): they measure how fast worker processes recover, which a machine busy with
# every other package at once would blur.
go test -race -count=1 -timeout 40m $(go list "${modules[@]}" | grep -v /internal/chaos)
go test -race -count=1 -timeout 10m ./internal/chaos

# Modules never released, each with its replace of the library (a third-party backend, the first
# flow, stead against River): built and tested on their own go.mod and go.sum (GOWORK=off), as
# a reader who copies one gets it.
for mod in examples/*/go.mod bench/river/go.mod; do
  dir=$(dirname "$mod")
  (cd "$dir" && export GOWORK=off && go vet ./... && $staticcheck ./... && go test -race -count=1 ./...)
done
