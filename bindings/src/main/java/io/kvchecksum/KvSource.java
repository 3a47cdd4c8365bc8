package io.kvchecksum;

/**
 * Where a request's KV lives, as the compiler takes it: one {@link KvCacheGroup} addressed through a page table, or a
 * {@link KvSegments segmented cache} whose consecutive position ranges are held by groups of one geometry. Every
 * operation accepts either; {@link CompiledPlan#compile} turns both into the same kind of launches.
 */
public sealed interface KvSource permits KvCacheGroup, KvSegments {
    /**
     * {@return the layers, heads and cells of the source: the group itself, or a segmented cache's first group (whose
     * geometry every segment shares)} Its layer order is the row order of slice sums.
     */
    KvCacheGroup geometry();
}
