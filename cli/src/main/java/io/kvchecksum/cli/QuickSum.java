package io.kvchecksum.cli;

import java.io.PrintWriter;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;

/**
 * {@code sum}'s common command lines read without picocli: {@code sum DUMP --block-size B} with any of
 * {@code --layout}, {@code --num-tokens}, {@code --first-block}, {@code --head-offset}, {@code --backend} (auto, cpu or
 * reference), {@code --json} and {@code -q}/{@code --quiet}, each at most once, in any order, with plain values.
 *
 * <p>Why: picocli builds its model of a command by reflection, reading every annotation through a proxy class the JDK
 * generates at run time, all of it interpreted in a fresh JVM and out of reach of the AOT cache; that was the largest
 * part of a one-shot {@code sum}'s start-up. Whatever else the arguments hold (help, version, {@code --verbose}, a
 * value picocli might convert or refuse differently, an option given twice, a backend that could fail to open)
 * {@link #parse} declines and picocli reads them, so a usage error is always picocli's. What is accepted sets the same
 * fields picocli would set, its defaults included (QuickSumTest compares both, field by field, and the outputs), and
 * the command then runs the same code with the same backend: output, errors and exit codes are the same.
 */
final class QuickSum {
    /** Backends that open without probing a driver and never fail to open. */
    private static final Set<String> BACKENDS = Set.of("auto", "cpu", "reference");

    private QuickSum() {
    }

    /**
     * Runs {@code args} if {@link #parse} accepts them, printing to {@code out} and {@code err}.
     *
     * @return the exit code, or {@code null} when the arguments are for picocli
     */
    static Integer run(String[] args, PrintWriter out, PrintWriter err) {
        SumCommand c = parse(args);
        if (c == null) {
            return null;
        }
        try {
            return c.run(null, out, err);
        } catch (Throwable t) {
            // what picocli's execution handler (Main.commandLine) does with it; --verbose is never given here
            return Main.report(t, err, false);
        }
    }

    /** The command with the fields picocli would set for {@code args}, or {@code null} to leave them to picocli. */
    static SumCommand parse(String[] args) {
        if (args.length < 4 || !args[0].equals("sum") || System.getProperty("picocli.trace") != null) {
            return null;
        }
        SumCommand c = defaults();
        Set<String> seen = new HashSet<>();
        for (int i = 1; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("-")) {
                if (a.isEmpty() || !seen.add("DUMP")) {
                    return null;
                }
                try {
                    c.dump = Path.of(a);
                } catch (InvalidPathException e) {
                    return null;
                }
                continue;
            }
            String name = a;
            String value = null;
            int eq = a.indexOf('=');
            if (a.startsWith("--") && eq > 0) {
                name = a.substring(0, eq);
                value = a.substring(eq + 1);
            }
            boolean flag = name.equals("--json") || name.equals("-q") || name.equals("--quiet");
            if (!seen.add(name.equals("-q") ? "--quiet" : name)) {
                return null;
            }
            if (flag) {
                if (value != null) {
                    return null;
                }
                if (name.equals("--json")) {
                    c.json = true;
                } else {
                    c.quiet.quiet = true;
                }
                continue;
            }
            if (value == null) {
                if (++i == args.length) {
                    return null;
                }
                value = args[i];
            }
            switch (name) {
                case "--block-size" -> {
                    if (!digits(value, 9)) {
                        return null;
                    }
                    c.blockSize = Integer.parseInt(value);
                }
                case "--head-offset" -> {
                    if (!digits(value, 9)) {
                        return null;
                    }
                    c.dumpOptions.headOffset = Integer.parseInt(value);
                }
                case "--first-block" -> {
                    if (!digits(value, 18)) {
                        return null;
                    }
                    c.dumpOptions.firstBlock = Long.parseLong(value);
                }
                case "--num-tokens" -> {
                    if (!digits(value, 18)) {
                        return null;
                    }
                    c.dumpOptions.numTokens = Long.parseLong(value);
                }
                case "--layout" -> {
                    if (!word(value)) {
                        return null;
                    }
                    c.dumpOptions.layout = value;
                }
                case "--backend" -> {
                    if (!BACKENDS.contains(value)) {
                        return null;
                    }
                    c.backend.name = value;
                }
                default -> {
                    return null;
                }
            }
        }
        return seen.contains("DUMP") && seen.contains("--block-size") ? c : null;
    }

    /**
     * Whether {@code s} is a plain decimal of at most {@code max} digits without a sign or leading zero, which every
     * converter reads alike and no int or long overflows. (Checked by hand: a regular expression costs more to set up
     * in a fresh JVM than the rest of this class.)
     */
    static boolean digits(String s, int max) {
        if (s.isEmpty() || s.length() > max || (s.charAt(0) == '0' && s.length() > 1)) {
            return false;
        }
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) < '0' || s.charAt(i) > '9') {
                return false;
            }
        }
        return true;
    }

    /** Whether {@code s} is a name such as a layout's: ASCII letters, digits, '_', '.', '-', not starting with '-'. */
    static boolean word(String s) {
        if (s.isEmpty() || s.charAt(0) == '-') {
            return false;
        }
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            if (!(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '.'
                    || ch == '-')) {
                return false;
            }
        }
        return true;
    }

    /** {@code sum} with every option at picocli's default (the {@code defaultValue}s of its annotations). */
    private static SumCommand defaults() {
        SumCommand c = new SumCommand();
        c.dumpOptions = new DumpOptions();
        c.dumpOptions.layout = "gathered";
        c.dumpOptions.firstBlock = 0;
        c.dumpOptions.headOffset = 0;
        c.backend = new BackendOption();
        c.backend.name = "auto";
        c.modeOption = new ModeOption();
        c.modeOption.name = "standard";
        c.tpSize = 1;
        c.groupId = 0;
        c.fingerprint = new FingerprintOptions();
        c.fingerprint.layerName = "model.layers.{L}.self_attn.attn";
        c.pageDigest = new PageDigestOption();
        c.quiet = new QuietOption();
        return c;
    }
}
