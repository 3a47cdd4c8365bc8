package io.kvchecksum.engine.wire;

/**
 * Chooses msgpack-core's buffers before any of them exists: its portable {@code ByteBuffer}-based ones instead of
 * {@code sun.misc.Unsafe}, whose first use JDK 24 and later report with four {@code WARNING} lines on stderr of every
 * process that loads the library (JEP 498). msgpack reads the system property {@value #PROPERTY} once, when its
 * {@code MessageBuffer} class initializes, so this must run before the first packer or unpacker is made: every class
 * of this package that makes one initializes this class first ({@link PayloadCodec}'s static initializer). A consumer
 * who wants the {@code Unsafe} buffers sets the property to {@code false} before using msgpack; a value already set is
 * never changed. A process that made a msgpack buffer before this class ran keeps whichever buffers it got.
 */
final class MsgpackBuffers {
    /** The property msgpack-core 0.9.x reads: {@code true} selects the universal (no {@code Unsafe}) buffers. */
    static final String PROPERTY = "msgpack.universal-buffer";

    static {
        if (System.getProperty(PROPERTY) == null) {
            System.setProperty(PROPERTY, "true");
        }
    }

    private MsgpackBuffers() {
    }

    /** Initializes this class (setting the property once); call before making a msgpack packer or unpacker. */
    static void ensure() {
        // the work is the static initializer's, which the JVM runs exactly once, thread-safely
    }
}
