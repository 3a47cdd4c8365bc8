package io.kvchecksum.archfixture.internal;

/** The core's implementation. */
public class Secret {
}
