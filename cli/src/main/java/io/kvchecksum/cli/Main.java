package io.kvchecksum.cli;

import io.kvchecksum.BackendUnavailableException;
import io.kvchecksum.InvalidLayoutException;
import io.kvchecksum.cli.dump.InvalidInputException;
import io.kvchecksum.engine.MalformedPayloadException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.module.ModuleFinder;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code kvchecksum}: checksum, verify and diff KV cache dumps; decode payloads; demo; bench.
 *
 * <p>With no arguments it runs {@link DemoCommand}. Exit codes: 0 match or success, 1 mismatch, 2 unverified, 64
 * usage error (including a backend asked for by name that cannot run here), 65 invalid input (malformed dump or
 * payload, options that do not fit the dump), 70 internal error.
 */
@Command(name = "kvchecksum", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = {"Checksums of LLM KV caches moved between prefill and decode engines.",
                "Checksum, verify and diff KV dumps (safetensors, .npy, .npz), decode checksum payloads.",
                "With no arguments: the demo."},
        subcommands = {SumCommand.class, VerifyCommand.class, DiffCommand.class, PayloadCommand.class, DemoCommand.class,
                BenchCommand.class, CommandLine.HelpCommand.class},
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:match, or success", "1:mismatch (verify, diff, demo)", "2:unverified (verify)",
                "64:usage error (bad option; a backend asked for by name that cannot run here)",
                "65:invalid input (malformed dump or payload; options that do not fit the dump)",
                "70:internal error (a bug: please report it with the stack trace)"},
        footerHeading = "%nCPU speed:%n",
        footer = {"The fast CPU backend uses the Vector API (incubator module jdk.incubator.vector). Started with"
                + " `java -jar`, kvchecksum restarts itself once with --add-modules jdk.incubator.vector (set"
                + " KVCHECKSUM_REEXEC=0 to stop that). Every output names the backend that ran."})
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

    private static final String CHILD_PROPERTY = "kvchecksum.child";

    @Spec
    CommandSpec spec;

    /** No subcommand: the demo with its defaults. */
    @Override
    public Integer call() {
        CommandLine demo = spec.commandLine().getSubcommands().get("demo");
        return demo.execute();
    }

    /** Runs the command line and exits with its code; restarts with the Vector API module first where that helps. */
    public static void main(String[] args) {
        Integer child = reexecWithVectorModule(args);
        if (child != null) {
            System.exit(child);
        }
        System.exit(commandLine().execute(args));
    }

    /**
     * The configured command line: exit codes, one-line errors. Tests call {@code execute} on it with their own
     * writers ({@link CommandLine#setOut}, {@link CommandLine#setErr}).
     */
    public static CommandLine commandLine() {
        CommandLine cl = new CommandLine(new Main());
        cl.setParameterExceptionHandler((ex, args) -> {
            CommandLine c = ex.getCommandLine();
            PrintWriter err = c.getErr();
            err.println("kvchecksum: " + ex.getMessage());
            err.println("Try '" + c.getCommandSpec().qualifiedName() + " --help' for usage.");
            err.flush();
            return USAGE;
        });
        cl.setExecutionExceptionHandler((ex, c, parsed) -> {
            PrintWriter err = c.getErr();
            int code;
            String msg;
            if (ex instanceof InvalidInputException || ex instanceof InvalidLayoutException
                    || ex instanceof MalformedPayloadException) {
                code = INVALID_INPUT;
                msg = ex.getMessage();
            } else if (ex instanceof BackendUnavailableException) {
                code = USAGE;
                msg = ex.getMessage();
            } else if (ex instanceof CommandLine.ParameterException pe) {
                code = USAGE;
                msg = pe.getMessage();
            } else {
                ex.printStackTrace(err);
                code = INTERNAL;
                msg = "internal error: " + ex;
            }
            err.println("kvchecksum: " + oneLine(msg));
            err.flush();
            return code;
        });
        return cl;
    }

    static String oneLine(String s) {
        if (s == null) {
            return "(no message)";
        }
        return s.replace('\n', ' ').replace('\r', ' ');
    }

    /**
     * When this JVM lacks {@code jdk.incubator.vector} but the runtime has it, runs the same jar again with the module
     * added, and returns the child's exit code; {@code null} to run here. Started with {@code java -jar}, the fast CPU
     * backend would otherwise run its scalar loop: slower, though with identical results.
     */
    private static Integer reexecWithVectorModule(String[] args) {
        if (Boolean.getBoolean(CHILD_PROPERTY) || "0".equals(System.getenv("KVCHECKSUM_REEXEC"))
                || "false".equals(System.getProperty("kvchecksum.reexec"))
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
            List<String> cmd = new ArrayList<>();
            cmd.add(java);
            cmd.addAll(jvmArguments());
            cmd.add("--add-modules=jdk.incubator.vector");
            cmd.add("--enable-native-access=ALL-UNNAMED");
            cmd.add("--sun-misc-unsafe-memory-access=allow"); // msgpack-core still uses sun.misc.Unsafe
            cmd.add("-D" + CHILD_PROPERTY + "=true");
            cmd.add("-cp");
            cmd.add(jar.getPath());
            cmd.add(Main.class.getName());
            cmd.addAll(List.of(args));
            Process p = new ProcessBuilder(cmd).inheritIO().start();
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

    private static List<String> jvmArguments() {
        try {
            List<String> a = new ArrayList<>();
            for (String s : java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()) {
                if (!s.startsWith("-Djdk.module.") && !s.startsWith("--add-modules")) {
                    a.add(s);
                }
            }
            return a;
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
