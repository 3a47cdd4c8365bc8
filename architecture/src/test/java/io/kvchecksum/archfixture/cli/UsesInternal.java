package io.kvchecksum.archfixture.cli;

import io.kvchecksum.archfixture.internal.Secret;

/** Violates internalIsNotUsedByOtherModules: another module imports an internal class. */
public class UsesInternal {
    public Secret secret;
}
