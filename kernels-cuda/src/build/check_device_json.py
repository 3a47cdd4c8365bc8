"""Checks a device-check .json against kernels-cuda/device-check.schema.json, standard library only (CI has no
jsonschema package). Implements the JSON Schema keywords that schema uses: type, const, enum, required, properties,
additionalProperties, items, minimum, minLength, pattern, allOf, if/then (a row kind's required fields); any other keyword in the schema is an error here, so the
schema cannot silently outgrow this checker.

Usage: python3 check_device_json.py SCHEMA RESULT.json [--complete] [--kinds k1,k2,...] [--stages s1,s2,...]
  --complete  the run must have finished (complete 1, cannotRun null, no failed stage, every stage passed or skipped)
  --kinds     these row kinds must each appear at least once
  --stages    these stages must appear, in this order
Exit 0 and one line "ok ..." when it conforms; 1 and one line per problem otherwise.
"""
import json
import re
import sys

KNOWN = {"$schema", "$id", "title", "description", "type", "const", "enum", "required", "properties",
         "additionalProperties", "items", "minimum", "minLength", "pattern", "allOf", "if", "then"}
TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
}


def validate(schema, v, path, errors):
    unknown = set(schema) - KNOWN
    if unknown:
        raise ValueError(f"schema at {path} uses keywords this checker does not implement: {sorted(unknown)}")
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(TYPES[t](v) for t in types):
            errors.append(f"{path}: {json.dumps(v)[:60]} is not of type {' or '.join(types)}")
            return
    if "const" in schema and v != schema["const"]:
        errors.append(f"{path}: {json.dumps(v)[:60]} is not {json.dumps(schema['const'])}")
    if "enum" in schema and not any(v == e and type(v) is type(e) for e in schema["enum"]):
        errors.append(f"{path}: {json.dumps(v)[:60]} is not one of {json.dumps(schema['enum'])}")
    if "minimum" in schema and TYPES["number"](v) and v < schema["minimum"]:
        errors.append(f"{path}: {v} is below the minimum {schema['minimum']}")
    if isinstance(v, str):
        if "minLength" in schema and len(v) < schema["minLength"]:
            errors.append(f"{path}: shorter than {schema['minLength']} characters")
        if "pattern" in schema and not re.search(schema["pattern"], v):
            errors.append(f"{path}: {v!r} does not match {schema['pattern']}")
    if isinstance(v, dict):
        for k in schema.get("required", []):
            if k not in v:
                errors.append(f"{path}: required property {k!r} is missing")
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for k, x in v.items():
            if k in props:
                validate(props[k], x, f"{path}.{k}", errors)
            elif extra is False:
                errors.append(f"{path}: property {k!r} is not in the schema")
            elif isinstance(extra, dict):
                validate(extra, x, f"{path}.{k}", errors)
    for sub in schema.get("allOf", []):
        validate(sub, v, path, errors)
    if "if" in schema:
        probe = []
        validate(schema["if"], v, path, probe)
        if not probe and "then" in schema:
            validate(schema["then"], v, path, errors)
    if isinstance(v, list) and "items" in schema:
        for i, x in enumerate(v):
            validate(schema["items"], x, f"{path}[{i}]", errors)


def main(argv):
    args = argv[1:]
    opts = {"--complete": False, "--kinds": "", "--stages": ""}
    pos = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--complete":
            opts[a] = True
        elif a in ("--kinds", "--stages"):
            i += 1
            opts[a] = args[i]
        else:
            pos.append(a)
        i += 1
    if len(pos) != 2:
        print(__doc__, file=sys.stderr)
        return 64
    with open(pos[0]) as f:
        schema = json.load(f)
    try:
        with open(pos[1]) as f:
            doc = json.load(f)
    except ValueError as e:
        print(f"{pos[1]}: not valid JSON: {e}")
        return 1
    errors = []
    validate(schema, doc, "$", errors)
    if not errors:
        stages = [s["name"] for s in doc["stages"]]
        kinds = {r["kind"] for r in doc["rows"]}
        if opts["--complete"]:
            if doc["complete"] != 1 or doc["cannotRun"] is not None or doc["failedStages"] != 0:
                errors.append(f"$: the run did not complete (complete {doc['complete']}, cannotRun {doc['cannotRun']!r}, "
                              f"failedStages {doc['failedStages']})")
            errors += [f"$.stages: {s['name']} {s['status']} ({s['note']})" for s in doc["stages"]
                       if s["status"] not in ("pass", "skipped")]
            errors += [f"$.stages: {s['name']} took {s['seconds']}s, over its {s['budgetSeconds']}s budget"
                       for s in doc["stages"] if s["seconds"] > s["budgetSeconds"]]
        if opts["--kinds"]:
            errors += [f"$.rows: no row of kind {k!r}" for k in opts["--kinds"].split(",") if k not in kinds]
        if opts["--stages"] and stages != opts["--stages"].split(","):
            errors.append(f"$.stages: {stages}, expected {opts['--stages'].split(',')}")
    for e in errors:
        print(f"{pos[1]}: {e}")
    if errors:
        return 1
    print(f"ok: {pos[1]} conforms to {schema['$id']}: {len(doc['stages'])} stages, {len(doc['rows'])} rows "
          f"({', '.join(sorted(kinds))})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
