package io.kvchecksum.archfixture.engine.b;

import io.kvchecksum.archfixture.engine.a.CycleA;

/** The other half of the cycle. */
public class CycleB {
    public CycleA a;
}
