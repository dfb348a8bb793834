"""The JSON Schema corpus (tests/data/json_schema_corpus) judged by the independent validator
(json_schema_validator.py): every test's `valid` is the specification's verdict, every `text`
parses to its `data`, every `contract` mark is one the corpus README documents and its group's
description names, and the corpus has the shape of the JSON-Schema-Test-Suite. The grammar
test (tests/grammar/test_json_schema_corpus.cpp) then holds the engine to these labels.
"""

import glob
import json
import os
import sys
from decimal import Decimal

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import json_schema_validator as V  # noqa: E402

CORPUS = os.path.join(HERE, "..", "data", "json_schema_corpus")
failures = []


def check(ok, what):
    if not ok:
        print("FAIL " + what)
        failures.append(what)


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate key in " + repr(keys))
    return dict(pairs)


def load(text):
    return json.loads(text, parse_float=Decimal, object_pairs_hook=no_duplicates)


readme = open(os.path.join(CORPUS, "README.md")).read()
files = sorted(glob.glob(os.path.join(CORPUS, "*.json")))
check(len(files) >= 10, "the corpus has its files (%d)" % len(files))
total = contracts = 0
for path in files:
    name = os.path.basename(path)
    with open(path, encoding="utf-8") as f:
        groups = load(f.read())
    check(isinstance(groups, list) and groups, name + " is a non-empty array")
    for g in groups:
        where = name + ": " + str(g.get("description"))
        check(set(g) == {"description", "schema", "tests"}, where + ": keys are description, schema, tests")
        for t in g["tests"]:
            total += 1
            at = where + " / " + str(t.get("description"))
            check({"description", "data", "valid"} <= set(t) <= {"description", "data", "valid", "text", "contract"},
                  at + ": keys")
            try:
                verdict = V.valid(g["schema"], t["data"])
            except V.Unsupported as e:
                check(False, at + ": outside the subset: " + str(e))
                continue
            check(verdict == t["valid"], at + ": labelled %s, the validator says %s" % (t["valid"], verdict))
            if "text" in t:
                check(V.json_equal(load(t["text"]), t["data"]), at + ": text parses to data")
            if "contract" in t:
                contracts += 1
                key = t["contract"]
                check("- `%s`:" % key in readme, at + ": contract '%s' is documented in README.md" % key)
                check(key in g["description"], at + ": the group's description names '%s'" % key)

# The validator itself on cases checked by hand, so a wrong validator cannot bless wrong labels.
check(V.valid({"type": "integer"}, Decimal("1.0")) and not V.valid({"type": "integer"}, Decimal("1.5")), "integer")
check(not V.valid({"type": "number"}, True), "a boolean is not a number")
check(V.valid({"enum": [1]}, Decimal("1.00")) and not V.valid({"enum": [1]}, True), "enum equality")
check(not V.valid({"oneOf": [{}, {}]}, 1), "oneOf matching twice")
check(V.valid({"maxLength": 1}, "\U0001d11e"), "length in code points")
check(not V.pattern_matches("^a$", "a\n") and not V.pattern_matches("^.$", "\u2028"), "ECMA-262 $ and .")
check(not V.pattern_matches("\\S", "\u00a0") and not V.pattern_matches("\\d", "\u0663"), "ECMA-262 \\S \\d")
check(not V.format_matches("date", "2100-02-29") and V.format_matches("date", "2400-02-29"), "leap years")
check(V.format_matches("time", "23:59:60Z") and not V.format_matches("time", "23:58:60Z"), "leap seconds")
check(not V.valid({"exclusiveMinimum": Decimal("0.1")}, Decimal("0.1")), "exclusive bound")

print("%d instances in %d files, %d marked as contract differences" % (total, len(files), contracts))
check(total >= 300, "the corpus holds at least 300 instances")
if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("ok")
