#!/usr/bin/env bash
# go mod tidy for every module of the repository, without go.work and without a replace left
# behind.
#
# The released modules (otelstead, console, cli, cmd/stead, bench) require the others at
# v$VERSION (stead.Version in version.go) and carry no replace directive, since `go install
# …@latest` refuses a module that has one. Until that version is tagged, `go mod tidy` cannot
# fetch it; so for each such module this script adds a replace of every sibling by its relative
# path, tidies with GOWORK=off, pins the siblings it kept at v$VERSION and drops the replaces
# again. The modules that are never released (examples/*, bench/river) keep their own replace of
# the root and are tidied as they are. go.work (a fresh clone builds every module in place) gets
# its replaces' version set to v$VERSION; go.work.sum is written by the go command when the
# workspace needs a sum that no module's go.sum holds (go build over every module, as test.sh
# does, adds any that are missing; commit it).
#
# After the root's tag v$VERSION exists on the proxy, the same modules can be tidied against it
# (GOWORK=off go mod tidy in each, no replace): that is the release step that adds the root's
# own go.sum line to every released module before its own tag (ARCHITECTURE.md, "Modules").
set -euo pipefail
cd "$(dirname "$0")/../.."

version=$(sed -n 's/^const Version = "\(.*\)"$/\1/p' version.go)
[[ -n $version ]] || { echo "tidy.sh: no const Version in version.go" >&2; exit 1; }

root=github.com/steadhq/stead
# The modules released from this repository, by directory; "." is the library.
released=(. otelstead console cli cmd/stead bench)
# Built and tested here, never released: each keeps its replace of the root.
local_only=(examples/firstflow examples/mapstore bench/river)

# rel DIR prints the path from DIR up to the repository's root ("../.." for cmd/stead).
rel() {
  local d=$1 up=.
  [[ $d == . ]] && { echo .; return; }
  up=$(echo "$d" | sed 's#[^/][^/]*#..#g')
  echo "$up"
}

modpath() { [[ $1 == . ]] && echo "$root" || echo "$root/$1"; }

# canon rewrites ./go.mod's requirements as one block of direct ones and one of indirect ones,
# each sorted, the layout go mod tidy keeps once it is there (the pins above may land elsewhere).
canon() {
  awk '
    function add(l) { sub(/^[ \t]+/, "", l); if (l ~ /\/\/ indirect/) ind[++ni] = l; else dir[++nd] = l }
    /^require \(/ { blk = 1; next }
    blk && /^\)/ { blk = 0; next }
    blk { if ($0 ~ /[^ \t]/) add($0); next }
    /^require / { l = $0; sub(/^require /, "", l); add(l); next }
    { other[++no] = $0 }
    function block(a, n,   i, j, t) {
      for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
      if (n == 0) return
      print ""; print "require ("; for (i = 1; i <= n; i++) print "\t" a[i]; print ")"
    }
    END {
      while (no > 0 && other[no] == "") no--
      for (i = 1; i <= no; i++) print other[i]
      block(dir, nd); block(ind, ni)
    }' go.mod >go.mod.tmp && mv go.mod.tmp go.mod
}

export GOWORK=off
for dir in "${released[@]}"; do
  echo "tidy.sh: $dir" >&2
  up=$(rel "$dir")
  siblings=()
  for other in "${released[@]}"; do
    [[ $other == "$dir" ]] && continue
    siblings+=("$other")
  done
  (
    cd "$dir"
    edits=()
    for other in "${siblings[@]}"; do
      p=$(modpath "$other")
      target=$up
      [[ $other != . ]] && target=$up/$other
      edits+=(-require="$p@v$version" -replace="$p=$target")
    done
    [[ $dir != . ]] && go mod edit "${edits[@]}"
    go mod tidy
    # Drop the replaces; pin each sibling the module still needs at the release version.
    if [[ $dir != . ]]; then
      drops=()
      for other in "${siblings[@]}"; do
        drops+=(-dropreplace="$(modpath "$other")")
      done
      go mod edit "${drops[@]}"
      pins=()
      for other in "${siblings[@]}"; do
        p=$(modpath "$other")
        if grep -Eq "^(require)?[[:space:]]+$p v" go.mod; then
          pins+=(-require="$p@v$version")
        fi
      done
      [[ ${#pins[@]} -eq 0 ]] || go mod edit "${pins[@]}"
      canon
    fi
    if grep -q '^replace' go.mod; then
      echo "tidy.sh: $dir/go.mod still has a replace" >&2
      exit 1
    fi
  )
done
for dir in "${local_only[@]}"; do
  echo "tidy.sh: $dir" >&2
  (cd "$dir" && go mod tidy)
done
# go.work replaces the siblings the released modules require, at v$version, by their directories:
# workspace mode still reads the go.mod of a required version, which is not published before
# its tag.
sed -i -E "s#^([[:space:]]*github.com/steadhq/stead[a-z/]*) v[^ ]+ => #\1 v$version => #" go.work
