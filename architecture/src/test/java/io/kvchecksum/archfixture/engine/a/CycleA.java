package io.kvchecksum.archfixture.engine.a;

import io.kvchecksum.archfixture.engine.b.CycleB;

/** Violates enginePackagesAreFreeOfCycles (with {@link CycleB}) and engineClassesAreInALayer. */
public class CycleA {
    public CycleB b;
}
