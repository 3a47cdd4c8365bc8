#!/usr/bin/env python3
"""Compare two kvchecksum JMH result files by ratio to the read bound.

    python3 jmh/compare.py OLD.json NEW.json [--threshold 0.10]

For every checksum benchmark present in both files, the ratio to the read bound of the same
shape and size *in the same file* (read time / op time) is compared; absolute GB/s drift between
runs on shared machines, the ratio much less. A ratio that fell by more than the threshold
(default 10%) is a regression. Host-side submit times are compared as they are (absolute, so
noisier), and any synchronizing call per submit where there was none is a regression.
The read bound is the fastest reader of the same bytes (BoundsBench.read has a "reader" parameter:
vector, vector256, scalar, native); from v4 on, each pass is divided by the bound measured in its
own fork before each iteration (secondary results boundNanos / boundIterations), not by the bound's
forks minutes away. Files written before that (one Vector API reader, no "reader" parameter: v1;
no 256-bit reader: v2; no same-fork bound: v3; a same-fork bound that was a best time against JMH's mean
time of the pass, mixed statistics, and in-cache sizes rounded past the L2: v4; v5 is the best of N
reads of the bound against the best of N passes, sampled in turn, secondary results boundBestNanos /
passBestNanos) have another bound: their ratios are not comparable,
and the output says so instead of flagging regressions.
A pass measured faster than its read bound (ratio above 1, the suite's FAILED verdict) is a failed
measurement, not a result: such a row is shown and not compared; in the new file it is a failure.
Exits 1 when something regressed or the new file has a failed measurement, 2 when the two files'
read bounds are defined differently, 0 otherwise. Python 3 standard library only.
"""
import argparse
import json
import sys


def key(entry):
    params = entry.get("params", {})
    bench = entry["benchmark"].rsplit(".", 2)
    backend = params.get("backend", "-")
    if bench[-1] == "read" and "reader" in params:
        backend = params["reader"]
    return (bench[-2], bench[-1], backend, params.get("shape", "-"), params.get("size", "-"))


def load(path):
    with open(path, encoding="utf-8") as f:
        entries = json.load(f)
    out = {}
    for e in entries:
        out[key(e)] = e
    return out, bound_definition(entries)


def ns_per_op(entry):
    m = entry["primaryMetric"]
    unit = m["scoreUnit"]
    scale = {"ns/op": 1.0, "us/op": 1e3, "ms/op": 1e6, "s/op": 1e9}.get(unit)
    if scale is None:
        raise SystemExit("unsupported unit %s in %s" % (unit, entry["benchmark"]))
    return m["score"] * scale


def bound_definition(entries):
    """How the file's read bound was measured: the set of readers, or the single reader of old files."""
    readers = sorted({e.get("params", {}).get("reader", "vector (only)") for e in entries
                      if e["benchmark"].endswith("BoundsBench.read")})
    if not readers:
        return "no read bound"
    if readers == ["vector (only)"]:
        return "v1: one Vector API reader"
    passes = [e for e in entries if e["benchmark"].endswith(("ChecksumBench.blockChecksums", "ChecksumBench.sliceSums"))]
    if passes and all(interleaved_ratio(e) for e in passes):
        # v5: best of N reads of the bound over best of N passes, sampled in turn in the pass's fork; in-cache
        # sizes rounded down to the L2 (fewer layers where one block is larger)
        return "v5 (interleaved best/best): fastest of " + ", ".join(readers)
    if passes and all(same_fork_bound(e) for e in passes):
        # v4: each pass against the bound measured in its own fork, seconds before each iteration
        return "v4 (same fork): fastest of " + ", ".join(readers)
    # v3 added the 256-bit Vector API reader (a 512-bit loop reads memory at half its rate on AMD Zen 4)
    return ("v3" if "vector256" in readers else "v2") + ": fastest of " + ", ".join(readers)


def same_fork_bound(entry):
    """Nanoseconds of the read bound measured in the entry's own fork (ChecksumBench.SameForkBound), or None."""
    sec = entry.get("secondaryMetrics", {})
    nanos = sec.get("boundNanos", {}).get("score")
    iterations = sec.get("boundIterations", {}).get("score")
    if not nanos or not iterations:
        return None
    return nanos / iterations


def interleaved_ratio(entry):
    """v5: the bound's best sample over the pass's best sample, over every iteration of every fork
    (ChecksumBench.Interleaved: boundBestNanos / passBestNanos), or None. One statistic on both sides."""
    sec = entry.get("secondaryMetrics", {})
    bound = [v for fork in sec.get("boundBestNanos", {}).get("rawData") or [] for v in fork if v > 0]
    passes = [v for fork in sec.get("passBestNanos", {}).get("rawData") or [] for v in fork if v > 0]
    if not bound or not passes:
        return None
    return min(bound) / min(passes)


def same_fork_ratio(entry):
    """The best over the entry's forks of (that fork's same-fork bound / that fork's time per op), or None.
    From memory the bandwidth drifts within a fork's iterations (docs/bench-cpu.md): the best fork is the
    row's ratio, as the bound is a best time."""
    sec = entry.get("secondaryMetrics", {})
    nanos = sec.get("boundNanos", {}).get("rawData")
    iterations = sec.get("boundIterations", {}).get("rawData")
    times = entry["primaryMetric"].get("rawData")
    if not nanos or not iterations or not times or len(nanos) != len(times):
        bound = same_fork_bound(entry)
        return bound / ns_per_op(entry) if bound else None
    scale = ns_per_op(entry) / entry["primaryMetric"]["score"]
    return max((sum(n) / sum(i)) / (scale * sum(t) / len(t)) for n, i, t in zip(nanos, iterations, times))


def ratios(results):
    """(cls, op, backend, shape, size) -> ratio to the read bound (fastest reader) of the same shape and size:
    the one measured in the entry's own fork where there is one, else the BoundsBench forks' fastest."""
    reads = {}
    for k, e in results.items():
        if k[0] == "BoundsBench" and k[1] == "read":
            t = ns_per_op(e)
            reads[(k[3], k[4])] = min(t, reads.get((k[3], k[4]), t))
    out = {}
    for k, e in results.items():
        if k[0] == "ChecksumBench" and interleaved_ratio(e) is not None:
            out[k] = interleaved_ratio(e)
        elif k[0] == "ChecksumBench" and same_fork_ratio(e) is not None:
            out[k] = same_fork_ratio(e)
        elif k[0] == "ChecksumBench" or (k[0] == "BoundsBench" and k[1] == "copy"):
            read = reads.get((k[3], k[4]))
            if read is not None:
                out[k] = read / ns_per_op(e)
    return out


def failed_measurement(k, ratio):
    """A pass over the KV measured faster than the bound of the same bytes (the suite's FAILED verdict)."""
    return k[0] == "ChecksumBench" and k[1] in ("blockChecksums", "sliceSums") and ratio > 1.0


def syncs_per_op(entry):
    sec = entry.get("secondaryMetrics", {})
    calls = sec.get("syncCalls", {}).get("score")
    recorded = sec.get("recordedSubmits", {}).get("score")
    if not recorded:
        return None
    return calls / recorded


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--threshold", type=float, default=0.10, help="relative drop that counts as a regression")
    args = ap.parse_args()
    (old, old_def), (new, new_def) = load(args.old), load(args.new)
    old_r, new_r = ratios(old), ratios(new)
    comparable = old_def == new_def
    if not comparable:
        print("NOT COMPARABLE: the read bound is defined differently in the two files, so their ratios are not")
        print("  comparable (shown, never flagged):\n  %s: %s\n  %s: %s\n" % (args.old, old_def, args.new, new_def))

    regressions = 0
    failed_old = failed_new = 0
    rows = []
    for k in sorted(set(old_r) & set(new_r)):
        change = new_r[k] / old_r[k] - 1 if old_r[k] else float("nan")
        flag = ""
        if not comparable:
            flag = "(bounds differ)"
        elif failed_measurement(k, new_r[k]):
            flag = "FAILED MEASUREMENT in the new file (faster than the bound)"
            failed_new += 1
        elif failed_measurement(k, old_r[k]):
            flag = "not compared: FAILED MEASUREMENT in the old file (faster than the bound)"
            failed_old += 1
        elif change < -args.threshold:
            flag = "REGRESSION"
            regressions += 1
        elif change > args.threshold:
            flag = "improved"
        rows.append((k[2], k[1], k[3], k[4], "%.3f" % old_r[k], "%.3f" % new_r[k], "%+.1f%%" % (100 * change), flag))

    for k in sorted(set(old) & set(new)):
        if k[0] != "SubmitBench":
            continue
        o, n = ns_per_op(old[k]), ns_per_op(new[k])
        change = n / o - 1
        flag = ""
        if change > args.threshold:
            flag = "REGRESSION (host time)"
            regressions += 1
        so, sn = syncs_per_op(old[k]), syncs_per_op(new[k])
        if sn is not None and sn > 0 and (so is None or sn > so):
            flag = (flag + "; " if flag else "") + "REGRESSION (%.3f syncs/op)" % sn
            regressions += 1
        rows.append((k[2], "submit us", k[3], k[4], "%.1f" % (o / 1e3), "%.1f" % (n / 1e3), "%+.1f%%" % (100 * change), flag))

    header = ("backend", "op", "shape", "size", "old", "new", "change", "")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    only_old = sorted(set(old) - set(new))
    only_new = sorted(set(new) - set(old))
    if only_old:
        print("\nonly in %s: %d benchmarks (e.g. %s)" % (args.old, len(only_old), "/".join(only_old[0])))
    if only_new:
        print("only in %s: %d benchmarks (e.g. %s)" % (args.new, len(only_new), "/".join(only_new[0])))
    print("\n%d compared, %d regression(s) beyond %.0f%% (ratio = read-bound time / op time, same file; read bound: %s)"
          % (len(rows) - failed_old - failed_new, regressions, 100 * args.threshold, new_def))
    if failed_old:
        print("%d row(s) not compared: the old file measured them faster than their bound (re-baseline them)"
              % failed_old)
    if failed_new:
        print("%d row(s) of the new file measured faster than their bound: failed measurements, not results"
              % failed_new)
    if not comparable:
        print("NOT COMPARABLE: read bound %s vs %s; re-baseline with the same suite" % (old_def, new_def))
        return 2
    return 1 if regressions or failed_new else 0


if __name__ == "__main__":
    sys.exit(main())
