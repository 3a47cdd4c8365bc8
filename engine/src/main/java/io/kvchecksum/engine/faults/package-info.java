/**
 * Fault injection for engines' own end-to-end tests ({@link io.kvchecksum.engine.faults.FaultInjector}): flips a
 * worker's computed checksum or corrupts a landed row, per rank, off unless configured.
 *
 * <p>Works on worker records, so it may depend on {@link io.kvchecksum.engine.worker} (and what that uses); no other
 * engine package depends on it.
 */
package io.kvchecksum.engine.faults;
