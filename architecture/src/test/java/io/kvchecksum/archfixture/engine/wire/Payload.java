package io.kvchecksum.archfixture.engine.wire;

/** A class of the wire layer (no layer of the fixture is empty). */
public class Payload {
}
