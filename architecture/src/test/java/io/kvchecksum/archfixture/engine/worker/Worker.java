package io.kvchecksum.archfixture.engine.worker;

import io.kvchecksum.archfixture.engine.wire.Payload;

/** A class of the worker layer, using the layer below it as allowed. */
public class Worker {
    public Payload payload;
}
