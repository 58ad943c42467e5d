# Sourced by the .ci scripts: which cri4j artifacts are published, read from the one list of them,
# the io.cri4j entries of cri4j-bom's dependencyManagement (bom/pom.xml, one line per module).
# Besides them, cri4j-bom and cri4j-parent are published (POMs only). A module left out of the BOM
# sets maven.deploy.skip, maven.source.skip and maven.javadoc.skip; .ci/check-published.sh fails on
# a module that is deployed but not listed, or listed but not deployed.
#
# Sets: cri4j_version   the version being built (cri4j-bom's)
#       cri4j_published the published modules' artifactIds (a module's directory is its artifactId
#                       without "cri4j-": cri4j-proxy-core -> proxy-core)
cri4j_version=$(awk '/<artifactId>cri4j-bom<\/artifactId>/ {b = 1} b && /<version>/ {
                       sub(/.*<version>/, ""); sub(/<\/version>.*/, ""); print; exit}' bom/pom.xml)
cri4j_published=$(sed -n 's:.*<groupId>io\.cri4j</groupId><artifactId>\(cri4j-[a-z0-9-]*\)</artifactId>.*:\1:p' bom/pom.xml)
if [[ -z $cri4j_version || -z $cri4j_published ]]; then
  echo "cannot read the version and the published modules from bom/pom.xml" >&2
  exit 1
fi
