#!/usr/bin/env bash
# The library's exported API against its baseline, the API at the commit api/baseline names.
#
#   internal/tools/apicheck.sh               fail on an incompatible change CHANGELOG.md does not name
#   internal/tools/apicheck.sh -update [REF] make REF (default HEAD) the baseline
#
# api/baseline holds one git revision: the last release's tag once there is one (v0.1.0), until
# then the commit whose API 0.1.0 will ship. The check builds that revision's API in a temporary
# worktree, so the baseline stays a line of text any reader can check out, and needs the
# repository's history (a clone, not an archive).
#
# apidiff (golang.org/x/exp/cmd/apidiff, pinned below and run from the module cache so that no
# go.mod carries it) compares the export data of every non-internal package of the module
# github.com/steadhq/stead at the baseline with the working tree. Each incompatible change it
# reports, a line like "- ./worker.(*Client).Send: changed from … to …" or "- (*Store).Foo:
# removed", must be named in the "## [Unreleased]" section of CHANGELOG.md, as a whole word
# anywhere in it: the name with the package's directory, without "./" and without a pointer
# receiver's parentheses (worker.Client.Send, schedule/schedworker.Config.Every; Store.Foo in the
# root package; a removed package by its import path). Compatible changes (additions) pass
# unnamed.
set -euo pipefail
cd "$(dirname "$0")/../.."

apidiff="go run golang.org/x/exp/cmd/apidiff@v0.0.0-20261113113407-e3970619a1a4"
module=github.com/steadhq/stead
baseline=api/baseline
changelog=CHANGELOG.md

# The library module alone: in the workspace, $module/... would take in cli, console and the
# other modules nested under it.
export GOWORK=off

# apidiff says which internal packages it leaves out, on stderr; keep the rest of stderr.
quiet() { "$@" 2> >(grep -v '^Ignoring internal package' >&2); }

if [[ ${1:-} == -update ]]; then
  rev=$(git rev-parse --verify "${2:-HEAD}^{commit}")
  mkdir -p "$(dirname "$baseline")"
  echo "$rev" >"$baseline"
  echo "apicheck: the baseline is now $rev" >&2
  exit 0
fi
[[ $# -eq 0 ]] || { echo "usage: $0 [-update [REF]]" >&2; exit 2; }

rev=$(tr -d '[:space:]' <"$baseline")
if ! git rev-parse --verify --quiet "$rev^{commit}" >/dev/null; then
  echo "apicheck: the baseline $rev (api/baseline) is not in this repository's history; fetch it (git fetch --tags)" >&2
  exit 1
fi
tmp=$(mktemp -d -t stead-apicheck.XXXXXX)
cleanup() { git worktree remove --force "$tmp/old" >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT
git worktree add --quiet --detach "$tmp/old" "$rev"
(cd "$tmp/old" && quiet $apidiff -m -w "$tmp/old.api" "$module")

report=$(quiet $apidiff -m -incompatible "$tmp/old.api" "$module")
[[ -n $report ]] || exit 0

# The changelog's Unreleased section: from its heading to the next release's.
unreleased=$(awk '/^## \[Unreleased\]/ { on = 1; next } on && /^## \[/ { exit } on' "$changelog")

missing=0
while IFS= read -r line; do
  [[ $line == "- "* ]] || continue
  subject=${line#- }
  subject=${subject%%: *}
  subject=${subject%%,*}
  name=${subject#package }
  name=${name#./}
  name=${name//(\*/}
  name=${name//)/}
  if ! grep -qwF -- "$name" <<<"$unreleased" && ! grep -qwF -- "$subject" <<<"$unreleased"; then
    echo "apicheck: incompatible change not named under ## [Unreleased] in $changelog (as $name): ${line#- }" >&2
    missing=1
  fi
done <<<"$report"
if [[ $missing == 1 ]]; then
  echo "apicheck: name each change above in $changelog (README.md, \"Stability\"), or, if the baseline is out of date, run $0 -update" >&2
  exit 1
fi
echo "apicheck: incompatible changes since $rev, each named in $changelog:" >&2
echo "$report" >&2
