package io.kvchecksum.archfixture.engine.auxiliary;

import io.kvchecksum.archfixture.engine.worker.Worker;

/** A class of the auxiliary layer, using the worker layer as allowed. */
public class Auxiliary {
    public Worker worker;
}
