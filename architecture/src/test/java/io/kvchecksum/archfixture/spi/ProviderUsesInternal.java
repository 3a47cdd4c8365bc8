package io.kvchecksum.archfixture.spi;

import io.kvchecksum.archfixture.internal.Secret;

/** Violates spiDoesNotUseInternal. */
public interface ProviderUsesInternal {
    /**
     * Exposes the implementation.
     *
     * @return an internal class
     */
    Secret secret();
}
