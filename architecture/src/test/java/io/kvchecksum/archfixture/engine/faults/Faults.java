package io.kvchecksum.archfixture.engine.faults;

import io.kvchecksum.archfixture.engine.worker.Worker;

/** A class of the faults layer, using the worker layer as allowed. */
public class Faults {
    public Worker worker;
}
