# Sourced (POSIX sh) by mvnw, bin/caravan and the test scripts: Caravan needs a JDK 25.
# Keeps a JAVA_HOME that already points at JDK 25 or newer; otherwise looks in the usual
# places and exports the first JDK 25+ found. When none is found JAVA_HOME is left alone,
# and the build's enforcer rule explains how to point it at one.
caravan_java_feature() {
  # Prints the feature release (17, 25, ...) of the JDK at $1, or nothing.
  [ -x "$1/bin/java" ] || return 0
  sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$1/release" 2>/dev/null
}
caravan_pick_jdk() {
  if [ -n "${JAVA_HOME-}" ]; then
    v=$(caravan_java_feature "$JAVA_HOME")
    if [ -n "$v" ] && [ "$v" -ge 25 ]; then return 0; fi
  fi
  for candidate in /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/temurin-25* /usr/lib/jvm/java-25* \
                   /usr/lib/jvm/jdk-25* /opt/java/openjdk /usr/lib/jvm/*; do
    v=$(caravan_java_feature "$candidate")
    if [ -n "$v" ] && [ "$v" -ge 25 ]; then
      JAVA_HOME="$candidate"
      export JAVA_HOME
      return 0
    fi
  done
  return 0
}
# mvnw runs with globbing off (set -f); the search below needs it for a moment.
case $- in *f*) set +f; caravan_pick_jdk; set -f ;; *) caravan_pick_jdk ;; esac
