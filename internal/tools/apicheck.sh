#!/usr/bin/env bash
# The library's exported API against its committed baseline, api/stead.api.
#
#   internal/tools/apicheck.sh           fail on an incompatible change that CHANGELOG.md does not name
#   internal/tools/apicheck.sh -update   rewrite the baseline from the working tree
#
# apidiff (golang.org/x/exp/cmd/apidiff, pinned below and run from the module cache so that no
# go.mod carries it) compares the baseline, the export data of every non-internal package of the
# module github.com/steadhq/stead, with the working tree. Each incompatible change it reports, a
# line like "- ./worker.(*Client).Send: changed from … to …" or "- (*Store).Foo: removed", must be
# named in the "## [Unreleased]" section of CHANGELOG.md, as a whole word anywhere in it: the
# name with the package's directory, without "./" and without a pointer receiver's parentheses
# (worker.Client.Send, schedule/schedworker.Config.Every; Store.Foo in the root package; a
# removed package by its import path). Compatible changes (additions) pass unnamed. The baseline
# is the API of the last release: rewrite it with -update when a release is cut (Version's new
# value is itself a change), or when the lead folds merged branches in.
set -euo pipefail
cd "$(dirname "$0")/../.."

apidiff="go run golang.org/x/exp/cmd/apidiff@v0.0.0-20261113113407-e3970619a1a4"
module=github.com/steadhq/stead
baseline=api/stead.api
changelog=CHANGELOG.md

# The library module alone: in the workspace, $module/... would take in cli, console and the
# other modules nested under it.
export GOWORK=off

# apidiff says which internal packages it leaves out, on stderr; keep the rest of stderr.
quiet() { "$@" 2> >(grep -v '^Ignoring internal package' >&2); }

if [[ ${1:-} == -update ]]; then
  mkdir -p "$(dirname "$baseline")"
  quiet $apidiff -m -w "$baseline" "$module"
  echo "apicheck: wrote $baseline" >&2
  exit 0
fi
[[ $# -eq 0 ]] || { echo "usage: $0 [-update]" >&2; exit 2; }

report=$(quiet $apidiff -m -incompatible "$baseline" "$module")
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
echo "apicheck: incompatible changes, each named in $changelog:" >&2
echo "$report" >&2
