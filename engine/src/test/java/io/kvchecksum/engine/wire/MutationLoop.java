package io.kvchecksum.engine.wire;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Random;
import java.util.function.BiFunction;
import java.util.function.Predicate;

/** The seeded, time-bounded mutation loop the decoders' fuzz tests share ({@code PayloadFuzzTest}, the record codec's). */
public final class MutationLoop {
    private MutationLoop() {
    }

    /**
     * Until {@code budgetMs} has passed: an input drawn from {@code corpus} with {@code rnd}, mutated, decoded; a mutant
     * that decodes joins the corpus (up to 4096 inputs), so later mutations start from it. Prints the counts under
     * {@code label} and its seed, and fails unless the loop ran more than {@code minIterations} times.
     *
     * @param corpus valid inputs to start from; grows
     * @param mutate a mutant of an input, drawn with the random source
     * @param decodes true when the mutant decodes, false when it is rejected as malformed (anything else fails in it)
     */
    public static <T> void run(String label, long seed, List<T> corpus, Random rnd, long budgetMs, long minIterations,
            BiFunction<T, Random, T> mutate, Predicate<T> decodes) {
        long deadline = System.nanoTime() + budgetMs * 1_000_000;
        long iterations = 0;
        long accepted = 0;
        while (System.nanoTime() < deadline) {
            T input = mutate.apply(corpus.get(rnd.nextInt(corpus.size())), rnd);
            if (decodes.test(input)) {
                accepted++;
                if (corpus.size() < 4096) {
                    corpus.add(input);
                }
            }
            iterations++;
        }
        System.out.println(label + " seed " + seed + ": " + iterations + " inputs, " + accepted + " decoded");
        assertTrue(iterations > minIterations, "the fuzz loop ran only " + iterations + " times");
    }
}
