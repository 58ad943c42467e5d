#!/usr/bin/env bash
# Consumer smoke test: builds the user projects in it/ against the published modules as a user's
# build meets them. The modules cri4j-bom lists (and their parents) are installed with -DskipTests
# into an empty private local repository, then it/consumer (imports cri4j-bom),
# it/consumer-nobom (module versions written out) and it/consumer-modules (a named module on the
# module path: the published modules' boundaries) run their tests with that same repository, so
# nothing from ~/.m2 or the reactor can hide a missing or wrong dependency. Before building it checks
# that README.md's dependency snippet is it/consumer/pom.xml's, character for character, and that
# both consumers depend on every module the BOM lists.
#
#   bash .ci/consumer-smoke.sh [LOCAL_REPO]    default: target/consumer-m2 (emptied first)
#
# A module's directory is its artifactId without "cri4j-" (cri4j-proxy-core -> proxy-core).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(realpath -m "${1:-target/consumer-m2}")
fail() { echo "consumer-smoke: $*" >&2; exit 1; }

# --- the README snippet is the consumer's POM
begin='<!-- README snippet: begin -->'
end='<!-- README snippet: end -->'
from_pom=$(awk -v b="$begin" -v e="$end" 'index($0, e) {on = 0} on {sub(/^  /, ""); print} index($0, b) {on = 1}' \
  it/consumer/pom.xml)
from_readme=$(awk '/it\/consumer\/pom\.xml/ {seen = 1} seen && !on && /^```xml/ {on = 1; next}
                   on && /^```/ {exit} on {print}' README.md)
[[ -n $from_pom ]] || fail "no '$begin' ... '$end' block in it/consumer/pom.xml"
[[ -n $from_readme ]] || fail "no \`\`\`xml block after the line naming it/consumer/pom.xml in README.md"
if ! diff -u <(echo "$from_readme") <(echo "$from_pom") >&2; then
  fail "README.md's dependency snippet differs from it/consumer/pom.xml's (diff above: - README, + POM)"
fi

# --- the consumers use every published module, at the version being built
source .ci/published.sh
version=$cri4j_version
published=$cri4j_published
for pom in it/consumer/pom.xml it/consumer-nobom/pom.xml; do
  for a in $published; do
    grep -q "<artifactId>$a</artifactId>" "$pom" || fail "$pom does not depend on $a (listed in cri4j-bom)"
  done
  stale=$(awk '/<groupId>io\.cri4j<\/groupId>/ {g = 1} /<\/dependency>/ {g = 0}
               g && /<version>/ {sub(/.*<version>/, ""); sub(/<\/version>.*/, ""); print}' "$pom" \
          | grep -vx "$version" | sort -u | paste -sd' ' - || true)
  [[ -z $stale ]] || fail "$pom names cri4j version(s) $stale, the build is $version"
done
for pom in it/consumer/pom.xml it/consumer-modules/pom.xml; do
  grep -q "<version>$version</version>" "$pom" || fail "$pom does not import cri4j-bom $version"
done

# --- install the published modules into an empty repository, then build the consumers with it
rm -rf "$repo"
mkdir -p "$repo"
modules=bom,$(for a in $published; do echo "${a#cri4j-}"; done | paste -sd, -)
t0=$SECONDS
echo "== consumer smoke: install $(echo $published | wc -w) modules into the empty repository $repo"
# Stale-source detection instead of incremental compilation: the latter recompiles every module
# because the jars' paths in the new repository differ, where the classes the main build just
# compiled and tested are what users get (on a clean tree everything is compiled as usual).
mvn -B -ntp -q -Dstyle.color=never -Dmaven.repo.local="$repo" -Dmaven.compiler.useIncrementalCompilation=false -DskipTests \
  -pl "$modules" -am install
t1=$SECONDS
for consumer in it/consumer it/consumer-nobom it/consumer-modules; do
  echo "== consumer smoke: $consumer"
  log=$consumer/target/consumer-smoke.log
  rm -rf "$consumer/target" && mkdir -p "$consumer/target"
  if ! mvn -B -ntp -Dstyle.color=never -Dmaven.repo.local="$repo" -f "$consumer/pom.xml" test >"$log" 2>&1; then
    cat "$log" >&2
    fail "$consumer failed (log above, also in $log)"
  fi
  grep -E '^\[INFO\] Tests run:' "$log" | tail -1
done
echo "== consumer smoke: passed; install $((t1 - t0)) s, consumers $((SECONDS - t1)) s"
