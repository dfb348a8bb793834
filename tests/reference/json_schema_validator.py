"""A small JSON Schema (2020-12) validator of the subset the grammar engine supports, written
from the specification (JSON Schema Core and Validation, RFC 3339 for the formats, ECMA-262
for `pattern`), standard library only. It judges the labels of the schema test corpus, so it
knows nothing of the engine: numbers are compared as exact decimals, strings are counted in
code points, `oneOf` means exactly one, and `$ref` sits beside other keywords as 2020-12 says.

A keyword outside the subset raises Unsupported: the corpus must not rely on one by accident.
"""

import re
from decimal import Decimal
from urllib.parse import unquote


class Unsupported(Exception):
    pass


ANNOTATIONS = {"$schema", "$id", "$comment", "title", "description", "default", "examples", "deprecated",
               "readOnly", "writeOnly", "$defs", "definitions"}
ASSERTIONS = {"type", "properties", "required", "additionalProperties", "enum", "const", "anyOf", "oneOf", "$ref",
              "items", "prefixItems", "minItems", "maxItems", "minLength", "maxLength", "pattern", "format",
              "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}


def is_number(v):
    return isinstance(v, (int, Decimal, float)) and not isinstance(v, bool)


def json_equal(a, b):
    """JSON equality: numbers by value (1 == 1.0), objects without order, booleans apart from numbers."""
    if is_number(a) and is_number(b):
        return Decimal(a) == Decimal(b)
    if isinstance(a, bool) or isinstance(b, bool) or type(a) is not type(b):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return a == b


def type_matches(name, v):
    if name == "null":
        return v is None
    if name == "boolean":
        return isinstance(v, bool)
    if name == "string":
        return isinstance(v, str)
    if name == "array":
        return isinstance(v, list)
    if name == "object":
        return isinstance(v, dict)
    if name == "number":
        return is_number(v)
    if name == "integer":  # any number with a zero fractional part (1.0 included)
        return is_number(v) and Decimal(v) == Decimal(v).to_integral_value()
    raise Unsupported("type " + repr(name))


# --- pattern: ECMA-262 rewritten for Python's re ------------------------------------------
# The classes ECMA-262 defines differently from Python: `.` leaves out the line terminators,
# \s is its own list of white space, \d and \w are ASCII.
ECMA_SPACE = "\\t\\n\\x0b\\x0c\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
ECMA_CLASS = {"d": "0-9", "w": "A-Za-z0-9_", "s": ECMA_SPACE}


def ecma_to_python(p):
    out, i, in_class = [], 0, False
    while i < len(p):
        c = p[i]
        if c == "\\":
            e = p[i + 1]
            i += 2
            if e in "dws":
                out.append(ECMA_CLASS[e] if in_class else "[" + ECMA_CLASS[e] + "]")
            elif e in "DWS":
                if in_class:
                    raise Unsupported("a negated shorthand inside a class")
                out.append("[^" + ECMA_CLASS[e.lower()] + "]")
            elif e == "u":
                out.append("\\u" + p[i:i + 4])
                i += 4
            elif e.isalnum() and e not in "ntrfv0":
                raise Unsupported("the escape \\" + e)
            else:
                out.append("\\" + e)
            continue
        if in_class:
            if c == "]":
                in_class = False
            out.append("\\[" if c == "[" else c)
        elif c == "[":
            in_class = True
            out.append(c)
            if p[i + 1:i + 2] == "^":
                out.append("^")
                i += 1
            if p[i + 1:i + 2] == "]":  # ECMA's [] / [^] differ from Python's; not used here
                raise Unsupported("an empty class")
        elif c == ".":
            out.append("[^\\n\\r\\u2028\\u2029]")
        elif c == "$":
            out.append("\\Z")  # ECMA's $ is the end of input; Python's also matches before a final \n
        elif c == "{" and re.match(r"\{,", p[i:]):
            raise Unsupported("{,n}")
        else:
            out.append(c)
        i += 1
    return "".join(out)


def pattern_matches(pattern, s):
    return re.search(ecma_to_python(pattern), s) is not None


# --- format: RFC 3339 and RFC 4122 ---------------------------------------------------------
DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})\Z", re.ASCII)
TIME = re.compile(r"(\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|([+-])(\d{2}):(\d{2}))\Z", re.ASCII)
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z", re.ASCII)


def days_in_month(year, month):
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def valid_date(s):
    m = DATE.match(s)
    if not m:
        return False
    y, mo, d = (int(x) for x in m.groups())
    return 1 <= mo <= 12 and 1 <= d <= days_in_month(y, mo)


def valid_time(s):
    m = TIME.match(s)
    if not m:
        return False
    h, mi, sec = int(m[1]), int(m[2]), int(m[3])
    oh, om = (int(m[7]), int(m[8])) if m[6] else (0, 0)
    if h > 23 or mi > 59 or sec > 60 or oh > 23 or om > 59:
        return False
    if sec == 60:  # a leap second: only at 23:59:60 UTC
        sign = -1 if m[6] == "+" else 1
        utc = (h * 60 + mi + sign * (oh * 60 + om)) % (24 * 60)
        return utc == 23 * 60 + 59
    return True


def format_matches(fmt, s):
    if fmt == "date":
        return valid_date(s)
    if fmt == "time":
        return valid_time(s)
    if fmt == "date-time":
        parts = re.split("[Tt]", s)
        return len(parts) == 2 and valid_date(parts[0]) and valid_time(parts[1])
    if fmt == "uuid":
        return UUID.match(s) is not None
    raise Unsupported("format " + repr(fmt))


# --- the validator ---------------------------------------------------------------------------
def resolve(root, ref):
    if not ref.startswith("#"):
        raise Unsupported("$ref outside the document: " + ref)
    node = root
    for token in unquote(ref[1:]).split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


def valid(schema, v, root=None):
    root = schema if root is None else root
    if schema is True or schema is False:
        return schema
    for k in schema:
        if k not in ANNOTATIONS and k not in ASSERTIONS:
            raise Unsupported(k)
    ok = True
    if "$ref" in schema:
        ok = ok and valid(resolve(root, schema["$ref"]), v, root)
    if "type" in schema:
        t = schema["type"]
        ok = ok and any(type_matches(x, v) for x in (t if isinstance(t, list) else [t]))
    if "enum" in schema:
        ok = ok and any(json_equal(x, v) for x in schema["enum"])
    if "const" in schema:
        ok = ok and json_equal(schema["const"], v)
    if "anyOf" in schema:
        ok = ok and any(valid(s, v, root) for s in schema["anyOf"])
    if "oneOf" in schema:
        ok = ok and sum(1 for s in schema["oneOf"] if valid(s, v, root)) == 1
    if isinstance(v, dict):
        props = schema.get("properties", {})
        ok = ok and all(valid(props[k], x, root) for k, x in v.items() if k in props)
        if "additionalProperties" in schema:
            ok = ok and all(valid(schema["additionalProperties"], x, root) for k, x in v.items() if k not in props)
        ok = ok and all(k in v for k in schema.get("required", []))
    if isinstance(v, list):
        prefix = schema.get("prefixItems", [])
        ok = ok and all(valid(s, x, root) for s, x in zip(prefix, v))
        if "items" in schema:
            ok = ok and all(valid(schema["items"], x, root) for x in v[len(prefix):])
        ok = ok and len(v) >= schema.get("minItems", 0)
        ok = ok and ("maxItems" not in schema or len(v) <= schema["maxItems"])
    if isinstance(v, str):
        n = len(v)  # code points: Python's str holds them, a surrogate pair escape read as one
        ok = ok and n >= schema.get("minLength", 0) and ("maxLength" not in schema or n <= schema["maxLength"])
        if "pattern" in schema:
            ok = ok and pattern_matches(schema["pattern"], v)
        if "format" in schema:
            ok = ok and format_matches(schema["format"], v)
    if is_number(v):
        x = Decimal(v)
        ok = ok and ("minimum" not in schema or x >= Decimal(schema["minimum"]))
        ok = ok and ("maximum" not in schema or x <= Decimal(schema["maximum"]))
        ok = ok and ("exclusiveMinimum" not in schema or x > Decimal(schema["exclusiveMinimum"]))
        ok = ok and ("exclusiveMaximum" not in schema or x < Decimal(schema["exclusiveMaximum"]))
    return ok
