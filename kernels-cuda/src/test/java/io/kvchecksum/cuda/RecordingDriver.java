package io.kvchecksum.cuda;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** Wraps a driver so every call (name and arguments) is logged before it is forwarded. Works on the real driver too. */
final class RecordingDriver {
    record Call(String name, Object[] args) {
        long longArg(int i) {
            return ((Number) args[i]).longValue();
        }

        @Override
        public String toString() {
            return name;
        }
    }

    final List<Call> calls = Collections.synchronizedList(new ArrayList<>());
    final CudaDriver driver;

    RecordingDriver(CudaDriver target) {
        this.driver = (CudaDriver) Proxy.newProxyInstance(CudaDriver.class.getClassLoader(), new Class<?>[] {CudaDriver.class},
                (proxy, m, args) -> {
                    calls.add(new Call(m.getName(), args == null ? new Object[0] : args.clone()));
                    try {
                        return m.invoke(target, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    List<Call> take() {
        synchronized (calls) {
            List<Call> out = new ArrayList<>(calls);
            calls.clear();
            return out;
        }
    }
}
