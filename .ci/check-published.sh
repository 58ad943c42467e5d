#!/usr/bin/env bash
# Checks what a publication of cri4j holds, as deployed into a file repository by
# `mvn -Ppublish deploy -DaltDeploymentRepository=publish-check::default::file:DIR`:
#  - exactly the published artifacts are deployed: cri4j-bom, cri4j-parent and the modules cri4j-bom
#    lists (.ci/published.sh); a module deployed but not in the BOM, or in the BOM but not deployed,
#    fails (an unpublished module sets maven.deploy.skip, maven.source.skip, maven.javadoc.skip);
#  - every module has its POM, jar, sources jar and Javadoc jar (with checksums), cri4j-bom and
#    cri4j-parent their POM only, as Maven Central requires;
#  - every POM names and describes itself, and gets URL, licence, SCM and developers from cri4j-bom,
#    the root of every published POM's parent chain;
#  - every module's jar is an explicit Java module (module-info.class) named io.cri4j.*, which exports
#    no .internal package to everyone (only qualified, to io.cri4j modules) and opens nothing to everyone.
#
#   bash .ci/check-published.sh [DIR]   without DIR: deploys into target/publish-check (emptied
#                                       first) with -DskipTests, then checks it
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "check-published: $*" >&2; exit 1; }
source .ci/published.sh

if [[ $# -ge 1 ]]; then
  repo=$(realpath -m "$1")
else
  repo=$(realpath -m target/publish-check)
  rm -rf "$repo"
  modules=bom,$(for a in $cri4j_published; do echo "${a#cri4j-}"; done | paste -sd, -)
  echo "== check-published: deploy $modules into $repo"
  # -DaltDeploymentRepository in its id::layout::url form: the BOM, which has no parent to pin a newer
  # maven-deploy-plugin, is deployed by Maven 3.8's default 2.7, which knows no other form. Install
  # skipped: deploy would otherwise also install every module into the shared ~/.m2; the repository
  # id is not "local", whose metadata copy (maven-metadata-local.xml) would pose there as installed.
  mvn -B -ntp -q -Ppublish -DskipTests -Dmaven.install.skip=true -DaltDeploymentRepository="publish-check::default::file:$repo" \
    -pl "$modules" -am deploy
fi
[[ -d $repo/io/cri4j ]] || fail "nothing of io.cri4j in $repo"

# --- exactly the published artifacts
expected=$(printf '%s\n' cri4j-bom cri4j-parent $cri4j_published | sort)
deployed=$(find "$repo/io/cri4j" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort)
extra=$(comm -13 <(echo "$expected") <(echo "$deployed") | paste -sd' ' -)
missing=$(comm -23 <(echo "$expected") <(echo "$deployed") | paste -sd' ' -)
[[ -z $extra ]] || fail "deployed but not listed in bom/pom.xml: $extra (list it there, or set maven.deploy.skip,
  maven.source.skip and maven.javadoc.skip in the module's POM)"
[[ -z $missing ]] || fail "listed in bom/pom.xml but not deployed: $missing (not a module of the reactor, or its POM sets maven.deploy.skip)"

# --- files of one artifact: release names are a-1.0.jar, snapshot names a-1.0-20260101.120000-1.jar
base=${cri4j_version%-SNAPSHOT}
files() { # artifactId suffix -> the deployed files ending in suffix (.jar: the classifier-less ones)
  local dir=$repo/io/cri4j/$1/$cri4j_version
  local all
  all=$(find "$dir" -maxdepth 1 -type f -name "$1-$base*$2" -printf '%f\n' 2>/dev/null || true)
  if [[ $2 == .jar ]]; then grep -Ev -- '-(sources|javadoc|tests)\.jar$' <<<"$all" || true; else echo "$all"; fi
}
one() { # artifactId suffix what -> the one file (fails on none)
  local f
  f=$(files "$1" "$2" | sort | tail -1)
  [[ -n $f ]] || fail "$1: no $3 ($1-$cri4j_version$2) in $repo/io/cri4j/$1/$cri4j_version"
  [[ -f $repo/io/cri4j/$1/$cri4j_version/$f.sha1 && -f $repo/io/cri4j/$1/$cri4j_version/$f.md5 ]] \
    || fail "$1: $f has no .sha1 and .md5"
  echo "$repo/io/cri4j/$1/$cri4j_version/$f"
}
tag() { # file element -> whether the POM has the element at the top level (our POMs indent by 2)
  grep -Eq "^  <$2[ >]" "$1"
}

for a in cri4j-bom cri4j-parent; do
  one "$a" .pom POM >/dev/null
  jars=$(files "$a" .jar)
  [[ -z $jars ]] || fail "$a: a POM-only artifact, but jars were deployed: $jars"
done
bom=$(one cri4j-bom .pom POM)
for e in name description url licenses developers scm; do
  tag "$bom" "$e" || fail "cri4j-bom: its POM has no <$e> (the parent chain of every published POM ends here)"
done
parent=$(one cri4j-parent .pom POM)
grep -q '<artifactId>cri4j-bom</artifactId>' "$parent" || fail "cri4j-parent: its parent is not cri4j-bom"

# module descriptor of a jar -> fails unless it is an explicit io.cri4j module keeping its .internal packages
module_boundaries() { # artifactId jar
  local d name
  d=$(jar --describe-module --file "$2" 2>&1) || fail "$1: jar --describe-module failed: $d"
  grep -q '^No module descriptor found' <<<"$d" && fail "$1: its jar has no module-info.class (an automatic module)"
  name=$(head -1 <<<"$d" | sed 's/@.*//; s/ .*//')
  [[ $name == io.cri4j.* ]] || fail "$1: module $name is not named io.cri4j.*"
  grep -q '^open module' <<<"$d" && fail "$1: $name is an open module"
  local bad
  bad=$(grep -E '^exports [^ ]*\.internal(\.| |$)' <<<"$d" || true)
  [[ -z $bad ]] || fail "$1: $name exports an internal package to everyone: $bad (export it to the io.cri4j modules that use it)"
  bad=$(grep -E '^opens ' <<<"$d" || true)
  [[ -z $bad ]] || fail "$1: $name opens a package to everyone: $bad"
  bad=$(grep -E '^qualified exports ' <<<"$d" | awk '{ for (i = 5; i <= NF; i++) if ($i !~ /^io\.cri4j\./) print }' || true)
  [[ -z $bad ]] || fail "$1: $name exports a package to a module outside cri4j: $bad"
  modules+=("$name")
}
modules=()
for a in $cri4j_published; do
  pom=$(one "$a" .pom POM)
  jar=$(one "$a" .jar jar)
  module_boundaries "$a" "$jar"
  sources=$(one "$a" -sources.jar "sources jar")
  javadoc=$(one "$a" -javadoc.jar "Javadoc jar")
  grep -q '\.java$' <<<"$(unzip -Z1 "$sources")" || fail "$a: the sources jar holds no .java file"
  grep -qx 'index.html' <<<"$(unzip -Z1 "$javadoc")" || fail "$a: the Javadoc jar has no index.html"
  for e in name description; do
    tag "$pom" "$e" || fail "$a: its POM has no <$e> of its own"
  done
  grep -q '<artifactId>cri4j-parent</artifactId>' "$pom" || fail "$a: its parent is not cri4j-parent"
done
echo "== check-published: cri4j-bom, cri4j-parent and $(echo $cri4j_published | wc -w) modules, each with POM, jar, sources and Javadoc; nothing else"
echo "== check-published: Java modules ${modules[*]}, no internal package exported or opened to everyone"
