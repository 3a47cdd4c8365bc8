package io.kvchecksum.jmh;

/** The flags every forked benchmark JVM needs; constants so that annotations and the runner share them. */
final class Jvm {
    /** The fast CPU backend's Vector API loop; without it the backend silently runs its scalar fallback. */
    static final String VECTOR = "--add-modules=jdk.incubator.vector";
    /** The GPU backends call native drivers (JNA, JOCL, FFM). */
    static final String NATIVE = "--enable-native-access=ALL-UNNAMED";
    /** The KV lives off-heap in arenas; the heap holds only tables and results. */
    static final String HEAP = "-Xmx2g";

    private Jvm() {
    }
}
