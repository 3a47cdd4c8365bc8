/**
 * The engine side: one worker's checksums of its caches ({@link io.kvchecksum.engine.worker.CacheGate} at startup,
 * over the {@link io.kvchecksum.engine.worker.FieldLayouts} presets or an engine's own specs,
 * {@link io.kvchecksum.engine.worker.WorkerChecksummer}, {@link io.kvchecksum.engine.worker.WorkerRecord}), the
 * scheduler's selection and aggregation over TP/PP workers and replicas ({@link
 * io.kvchecksum.engine.worker.BlockSelection}, {@link io.kvchecksum.engine.worker.Aggregator}, {@link
 * io.kvchecksum.engine.worker.ReplicaKey}), its sending and pending loads ({@link
 * io.kvchecksum.engine.worker.PayloadSender}, {@link io.kvchecksum.engine.worker.PendingLoads}), and the whole path of
 * a one-worker engine ({@link io.kvchecksum.engine.worker.SingleWorker}).
 *
 * <p>Depends on {@link io.kvchecksum.engine.wire} and {@link io.kvchecksum.engine.verdict}; nothing below depends on
 * it. Within it, the worker knows only the layout it is given ({@link
 * io.kvchecksum.engine.worker.WorkerChecksummer.GatedLayout}), not the gate that decided it.
 */
package io.kvchecksum.engine.worker;
