package io.kvchecksum.jlama;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One Jlama engine instance: a loaded model and its own KV sessions, driven token by token with greedy sampling.
 *
 * <p>Jlama's forward pass keeps scratch buffers in the model's layers, so one instance runs one forward at a time
 * (an engine's step loop does the same); everything around it (transfers, checksums, verification) runs concurrently.
 * Sessions are Jlama's ephemeral buffers: not registered in a map, released to Jlama's tensor pool on close, so a
 * long run does not accumulate them.
 */
public final class JlamaInstance implements AutoCloseable {
    private final String name;
    private final AbstractModel model;
    private final KvBufferCache sessions;
    private final ReentrantLock step = new ReentrantLock();

    private JlamaInstance(String name, AbstractModel model) {
        this.name = name;
        this.model = model;
        this.sessions = new KvBufferCache(model);
    }

    /** Loads the model in {@code dir} with F32 working memory. */
    public static JlamaInstance load(String name, Path dir) {
        return new JlamaInstance(name, ModelSupport.loadModel(dir.toFile(), DType.F32, DType.F32));
    }

    /** The Jlama model. */
    public AbstractModel model() {
        return model;
    }

    /** A new, empty KV session; close it when the request ends. */
    public KvBufferCache.KvBuffer newSession() {
        return sessions.getEphemeralKvBuffer();
    }

    /**
     * Runs the forward pass over {@code tokens} at positions {@code start ..}, writing their KV into {@code kv}, and
     * returns the greedy next token.
     */
    public int prefill(KvBufferCache.KvBuffer kv, int[] tokens, int start) {
        step.lock();
        try (AbstractTensor<?, ?> logits = model.makeDenseTensor(model.getConfig().vocabularySize)) {
            AbstractTensor<?, ?> last = model.batchForward(tokens, start, kv);
            try (AbstractTensor<?, ?> row = last.slice(last.shape().first() - 1)) {
                kv.setCurrentContextPosition(start + tokens.length);
                return model.sample(row, 0f, 0f, logits);
            } finally {
                last.close();
            }
        } finally {
            step.unlock();
        }
    }

    /**
     * Decodes {@code count} tokens greedily: feeds {@code first} at position {@code position}, then each sampled
     * token at the next position. Returns {@code first} followed by the {@code count - 1} tokens sampled after it.
     */
    public int[] decode(KvBufferCache.KvBuffer kv, int first, int position, int count) {
        int[] out = new int[count];
        out[0] = first;
        step.lock();
        try (AbstractTensor<?, ?> logits = model.makeDenseTensor(model.getConfig().vocabularySize)) {
            for (int i = 1; i < count; i++) {
                try (AbstractTensor<?, ?> o = model.forward(out[i - 1], position + i - 1, kv, Optional.empty())) {
                    out[i] = model.sample(o, 0f, 0f, logits);
                }
                kv.incrementContextPosition();
            }
        } finally {
            step.unlock();
        }
        return out;
    }

    @Override
    public void close() {
        sessions.close();
        model.close();
    }

    @Override
    public String toString() {
        return "jlama[" + name + "]";
    }
}
