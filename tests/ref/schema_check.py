"""The subset of JSON Schema (draft 2020-12) docs/stats.schema.json uses, checked with the
standard library alone: type (one or a list), const, pattern, required, properties,
additionalProperties (false or a schema) and items.

    schema_check.py SCHEMA FILE...   exit 0 when every FILE holds an instance of SCHEMA,
                                     else 1 with the first mismatch of each, by JSON path
"""
import json
import re
import sys

TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def type_ok(v, t):
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    return isinstance(v, TYPES[t])


def check(v, s, path):
    """The first mismatch of v against s, or None."""
    types = s.get("type")
    if types is not None:
        types = types if isinstance(types, list) else [types]
        if not any(type_ok(v, t) for t in types):
            return "%s: %s is not %s" % (path, type(v).__name__, " or ".join(types))
    if "const" in s and v != s["const"]:
        return "%s: %r is not %r" % (path, v, s["const"])
    if "pattern" in s and isinstance(v, str) and not re.search(s["pattern"], v):
        return "%s: %r does not match %s" % (path, v, s["pattern"])
    if isinstance(v, dict):
        for k in s.get("required", []):
            if k not in v:
                return "%s: '%s' missing" % (path, k)
        props = s.get("properties", {})
        extra = s.get("additionalProperties", True)
        for k, x in v.items():
            if k in props:
                e = check(x, props[k], "%s.%s" % (path, k))
            elif extra is False:
                e = "%s: '%s' is not in the schema" % (path, k)
            elif isinstance(extra, dict):
                e = check(x, extra, "%s.%s" % (path, k))
            else:
                e = None
            if e:
                return e
    if isinstance(v, list) and "items" in s:
        for i, x in enumerate(v):
            e = check(x, s["items"], "%s[%d]" % (path, i))
            if e:
                return e
    return None


def main():
    schema = json.load(open(sys.argv[1]))
    bad = 0
    for f in sys.argv[2:]:
        e = check(json.load(open(f)), schema, "$")
        if e:
            print("%s: %s" % (f, e))
            bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
