# Sourced by jmh/readbound-compare.sh and jmh/ab/*.sh: sets $jar to jmh/target/benchmarks.jar, rebuilt (offline Maven)
# when missing or older than any of the sources it is built from (a jar left by an earlier checkout would measure old
# code). Needs $root (the repository) and $java_home (a JDK 25) set by the caller.
jar=$root/jmh/target/benchmarks.jar
if [[ ! -f $jar || -n $(find "$root/jmh/src" "$root/bindings/src/main" "$root/bench/src/main" -newer "$jar" -type f -print -quit 2>/dev/null) ]]; then
    echo "$(basename "$0"): building $jar" >&2
    (cd "$root" && JAVA_HOME=$java_home mvn -o -B -ntp -q -pl jmh -am package -DskipTests -Dkvchecksum.skipCuda=true \
        -Dexec.skip=true) >&2
fi

# compile_ab OUT SOURCES...: compiles jmh/ab sources against $jar into OUT; a compile error stops the script (the
# classes of an earlier build would otherwise be measured).
compile_ab() {
    local out=$1 log
    shift
    if ! log=$("$java_home/bin/javac" -nowarn --add-modules jdk.incubator.vector -cp "$jar" -d "$out" "$@" 2>&1); then
        echo "$log" | grep -v '^warning\|^Note\|incubating' >&2
        exit 1
    fi
}
