package io.kvchecksum.cli;

import io.kvchecksum.BackendUnavailableException;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.cli.dump.DumpFile;
import io.kvchecksum.cli.dump.InvalidInputException;
import io.kvchecksum.cli.dump.InvalidOptionException;
import io.kvchecksum.engine.wire.MalformedPayloadException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

import java.io.File;
import java.io.OutputStreamWriter;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.module.ModuleFinder;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.Callable;

/**
 * {@code kvchecksum}: checksum, verify and diff KV cache dumps; decode payloads; demo; bench.
 *
 * <p>With no arguments it runs {@link DemoCommand}. Exit codes: 0 match or success, 1 mismatch, 2 unverified, 64
 * usage error (including a backend asked for by name that cannot run here), 65 invalid input (malformed dump or
 * payload, options that do not fit the dump), 70 internal error. Every failure ends in one line on stderr and its
 * code; {@code --verbose} adds the stack trace of an internal error.
 */
@Command(name = "kvchecksum", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = {"Checksums of LLM KV caches moved between prefill and decode engines.",
                "Checksum, verify and diff KV dumps (safetensors, .npy, .npz), decode checksum payloads.",
                "With no arguments: the demo."},
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:match, or success", "1:mismatch (verify, diff, demo)", "2:unverified (verify)",
                "64:usage error (bad option; a backend asked for by name that cannot run here)",
                "65:invalid input (malformed dump or payload; options that do not fit the dump)",
                "70:internal error (a bug: one line; --verbose prints the stack trace)"},
        footerHeading = "%nCPU speed:%n",
        footer = {"The fast CPU backend uses the Vector API (incubator module jdk.incubator.vector) for demo and bench:"
                + " the launcher cli/kvchecksum adds it; started with `java -jar`, kvchecksum restarts itself once"
                + " with it (KVCHECKSUM_REEXEC=0 stops that). One-shot sum, verify and diff run the scalar loop, which"
                + " finishes first (KVCHECKSUM_VECTOR=1 or 0 decides instead). Every output names the backend that"
                + " ran. Documents: README.md and cli/README.md in the repository."})
public final class Main implements Callable<Integer> {
    /** Exit code: match, or success. */
    public static final int OK = 0;
    /** Exit code: a mismatch was found. */
    public static final int MISMATCH = 1;
    /** Exit code: the comparison could not be made (verify). */
    public static final int UNVERIFIED = 2;
    /** Exit code: usage error (sysexits EX_USAGE). */
    public static final int USAGE = 64;
    /** Exit code: invalid input data (sysexits EX_DATAERR). */
    public static final int INVALID_INPUT = 65;
    /** Exit code: internal error (sysexits EX_SOFTWARE). */
    public static final int INTERNAL = 70;

    /** Set in the restarted JVM: the launcher JVM's pid, whose end ends this JVM too. */
    static final String PARENT_PROPERTY = "kvchecksum.parent";

    /** The longest message printed: a huge shape or a hostile header must not flood a terminal. */
    static final int MAX_MESSAGE = 400;

    static {
        // msgpack-core reads this once: its ByteBuffer-based buffers instead of sun.misc.Unsafe, whose use JDK 25
        // reports with four lines of warnings on stderr
        if (System.getProperty("msgpack.universal-buffer") == null) {
            System.setProperty("msgpack.universal-buffer", "true");
        }
    }

    @Spec
    CommandSpec spec;

    @Option(names = "--verbose", scope = ScopeType.INHERIT,
            description = "On an internal error, print the stack trace too.")
    boolean verbose;

    /** No subcommand: the demo with its defaults. */
    @Override
    public Integer call() {
        CommandLine demo = spec.commandLine().getSubcommands().get("demo");
        return demo.execute();
    }

    /** Runs the command line and exits with its code; restarts with the Vector API module first where that helps. */
    public static void main(String[] args) {
        prefetchDumps(args);
        watchParent();
        Integer child = reexecWithVectorModule(args);
        if (child != null) {
            System.exit(child);
        }
        PrintWriter out = new PrintWriter(new OutputStreamWriter(System.out, System.out.charset()), true);
        PrintWriter err = new PrintWriter(new OutputStreamWriter(System.err, System.err.charset()), true);
        // sum's common command lines skip picocli's reflective start-up; anything else is picocli's (QuickSum)
        Integer quick = QuickSum.run(args, out, err);
        if (quick != null) {
            System.exit(quick);
        }
        CommandLine cl = commandLine(args);
        cl.setOut(out);
        cl.setErr(err);
        System.exit(execute(cl, args));
    }

    /**
     * For the one-shot commands that read dumps ({@code sum}, {@code verify}, {@code diff}): starts reading the large
     * files among the arguments on another thread while this one parses the command line ({@link DumpFile#prefetch}).
     */
    private static void prefetchDumps(String[] args) {
        String command = Arrays.stream(args).filter(a -> !a.startsWith("-")).findFirst().orElse("");
        if (command.equals("sum") || command.equals("verify") || command.equals("diff")) {
            DumpFile.prefetch(Arrays.asList(args));
        }
    }

    /**
     * Runs {@code args} on {@code cl} and returns the exit code; whatever escapes a command, an {@link Error}
     * included, becomes one line on {@code cl}'s stderr and its documented code.
     */
    public static int execute(CommandLine cl, String... args) {
        try {
            return cl.execute(args);
        } catch (Throwable t) {
            return report(t, cl.getErr(), verbose(args));
        }
    }

    /**
     * The configured command line: exit codes, one-line errors, no {@code @FILE} expansion (options that take a file
     * read it themselves, refusing what is not a regular file). Tests call {@link #execute} on it with their own
     * writers ({@link CommandLine#setOut}, {@link CommandLine#setErr}).
     */
    public static CommandLine commandLine() {
        return commandLine(null);
    }

    /** The commands, by name, in the order {@code --help} lists them. */
    private static final Map<String, Supplier<Object>> COMMANDS = commands();

    private static Map<String, Supplier<Object>> commands() {
        Map<String, Supplier<Object>> m = new LinkedHashMap<>();
        m.put("sum", SumCommand::new);
        m.put("verify", VerifyCommand::new);
        m.put("diff", DiffCommand::new);
        m.put("payload", PayloadCommand::new);
        m.put("demo", DemoCommand::new);
        m.put("bench", BenchCommand::new);
        // A lambda, not CommandLine.HelpCommand::new: a method reference to a picocli class (class file version 49,
        // which the AOT cache leaves out) made JDK 25.0.3 crash while writing the cache (cli/aot-cache.sh).
        m.put("help", () -> new CommandLine.HelpCommand());
        return m;
    }

    /**
     * The command line for {@code args}: when they name a command (and not {@code help}), only that command is built,
     * since picocli's reflective model of every command is most of a one-shot run's start-up; otherwise all of them.
     * Parsing and exit codes are the same either way.
     */
    static CommandLine commandLine(String[] args) {
        CommandLine cl = new CommandLine(new Main());
        String only = args == null ? null : Arrays.stream(args).filter(a -> !a.startsWith("-")).findFirst().orElse(null);
        if (only != null && COMMANDS.containsKey(only) && !only.equals("help")) {
            cl.addSubcommand(only, COMMANDS.get(only).get());
        } else {
            COMMANDS.forEach((name, c) -> cl.addSubcommand(name, c.get()));
        }
        cl.setExpandAtFiles(false);
        cl.setParameterExceptionHandler((ex, given) -> {
            CommandLine c = ex.getCommandLine();
            PrintWriter err = c.getErr();
            err.println("kvchecksum: " + oneLine(ex.getMessage()));
            err.println("Try '" + c.getCommandSpec().qualifiedName() + " --help' for usage.");
            err.flush();
            return USAGE;
        });
        cl.setExecutionExceptionHandler((ex, c, parsed) -> report(ex, c.getErr(), verbose(parsed.originalArgs().toArray(String[]::new))));
        return cl;
    }

    /** Prints one line for {@code t} (the stack trace too for an internal error when verbose) and returns its code. */
    static int report(Throwable t, PrintWriter err, boolean verbose) {
        if (t instanceof CommandLine.ExecutionException && t.getCause() != null) {
            t = t.getCause();
        }
        int code;
        String msg;
        if (t instanceof InvalidInputException || t instanceof InvalidLayoutException
                || t instanceof MalformedPayloadException) {
            code = INVALID_INPUT;
            msg = t.getMessage();
        } else if (t instanceof BackendUnavailableException || t instanceof CommandLine.ParameterException
                || t instanceof InvalidOptionException) {
            code = USAGE;
            msg = t.getMessage();
        } else if (truncatedWhileRead(t)) {
            // a read of a mapped dump past the end of a file that shrank after it was mapped (SIGBUS)
            code = INVALID_INPUT;
            msg = "the file changed or was truncated while being read";
        } else if (t instanceof OutOfMemoryError) {
            code = INTERNAL;
            msg = "out of memory (" + t.getMessage() + "); the JVM's limit is " + Units.bytes(Runtime.getRuntime().maxMemory())
                    + " of heap";
        } else {
            code = INTERNAL;
            msg = "internal error: " + t + (verbose ? "" : " (--verbose prints the stack trace)");
        }
        if (code == INTERNAL && verbose) {
            t.printStackTrace(err);
        }
        err.println("kvchecksum: " + oneLine(msg));
        err.flush();
        return code;
    }

    /** An access to a mapped dump past the end of a file that shrank after it was mapped (SIGBUS), however wrapped. */
    private static boolean truncatedWhileRead(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof InternalError && String.valueOf(c.getMessage()).contains("unsafe memory access")) {
                return true;
            }
        }
        return false;
    }

    private static boolean verbose(String[] args) {
        int end = Arrays.asList(args).indexOf("--");
        return Arrays.asList(args).subList(0, end < 0 ? args.length : end).contains("--verbose");
    }

    /** {@code s} on one line and at most {@link #MAX_MESSAGE} characters. */
    static String oneLine(String s) {
        if (s == null) {
            return "(no message)";
        }
        String one = s.replaceAll("[\\r\\n\\t]+", " ").strip();
        if (one.length() > MAX_MESSAGE) {
            one = one.substring(0, MAX_MESSAGE - 60) + " ... (" + (one.length() - MAX_MESSAGE + 60) + " characters cut) ..."
                    + one.substring(one.length() - 20);
        }
        return one;
    }

    /** In the restarted JVM: ends it when the launcher JVM ends, even by SIGKILL (it then cannot pass a signal on). */
    private static void watchParent() {
        String pid = System.getProperty(PARENT_PROPERTY);
        if (pid == null) {
            return;
        }
        try {
            ProcessHandle.of(Long.parseLong(pid)).ifPresentOrElse(
                    p -> p.onExit().thenRun(() -> Runtime.getRuntime().halt(143)),
                    () -> Runtime.getRuntime().halt(143));
        } catch (NumberFormatException | UnsupportedOperationException e) {
            // no way to watch: the launcher's shutdown hook still ends this JVM on SIGTERM and Ctrl-C
        }
    }

    /**
     * When this JVM lacks {@code jdk.incubator.vector} but the runtime has it, runs the same jar again with the module
     * added, and returns the child's exit code; {@code null} to run here. Started with {@code java -jar}, the fast CPU
     * backend would otherwise run its scalar loop: slower, though with identical results. The child ends with this
     * JVM: a shutdown hook passes SIGTERM and Ctrl-C on, and the child watches this JVM's pid for a SIGKILL.
     */
    private static Integer reexecWithVectorModule(String[] args) {
        if (System.getProperty(PARENT_PROPERTY) != null || "0".equals(System.getenv("KVCHECKSUM_REEXEC"))
                || "false".equals(System.getProperty("kvchecksum.reexec")) || !vectorPays(args)
                || ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent()
                || ModuleFinder.ofSystem().find("jdk.incubator.vector").isEmpty()) {
            return null;
        }
        try {
            String java = ProcessHandle.current().info().command().orElse(null);
            File jar = new File(Main.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            if (java == null || !jar.isFile()) {
                return null;
            }
            List<String> cmd = new ArrayList<>(List.of(java));
            cmd.addAll(jvmArguments());
            cmd.addAll(List.of("--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                    "-D" + PARENT_PROPERTY + "=" + ProcessHandle.current().pid(), "-cp", jar.getPath(), Main.class.getName()));
            cmd.addAll(List.of(args));
            Process p = new ProcessBuilder(cmd).inheritIO().start();
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                if (p.isAlive()) {
                    p.destroy(); // SIGTERM: the child's own shutdown runs
                    try {
                        if (!p.waitFor(3, TimeUnit.SECONDS)) {
                            p.destroyForcibly();
                        }
                    } catch (InterruptedException e) {
                        p.destroyForcibly();
                    }
                }
            }, "kvchecksum-child-reaper"));
            try {
                return p.waitFor();
            } catch (InterruptedException e) {
                p.destroy();
                Thread.currentThread().interrupt();
                return INTERNAL;
            }
        } catch (IOException | URISyntaxException | SecurityException | UnsupportedOperationException e) {
            return null; // run here, on the scalar loop; the backend description says so
        }
    }

    /**
     * Whether the Vector API loop is worth a second JVM: for demo and bench, where the JIT has time to compile it. A
     * one-shot sum, verify or diff ends sooner on the scalar loop (same values). {@code KVCHECKSUM_VECTOR=1} or
     * {@code 0} decides instead, as it does in the launcher {@code cli/kvchecksum}.
     */
    static boolean vectorPays(String[] args) {
        String v = System.getenv("KVCHECKSUM_VECTOR");
        if ("1".equals(v) || "0".equals(v)) {
            return "1".equals(v);
        }
        String command = Arrays.stream(args).filter(a -> !a.startsWith("-")).findFirst().orElse("demo");
        return command.equals("demo") || command.equals("bench");
    }

    private static List<String> jvmArguments() {
        try {
            return java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                    .filter(s -> !s.startsWith("-Djdk.module.") && !s.startsWith("--add-modules")).toList();
        } catch (LinkageError e) {
            return List.of();
        }
    }

    /** The version from the jar's manifest, or "dev". */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = Main.class.getPackage().getImplementationVersion();
            return new String[] {"kvchecksum " + (v == null ? "0.1.0-SNAPSHOT" : v) + " (Java " + Runtime.version() + ")"};
        }
    }
}
