"""Validate a JUnit XML file against tests/junit/junit.xsd. With `xmlschema` or `lxml` installed, they do it; else
(as in this environment) a small interpreter of the XSD subset the file uses: global elements, each a complexType
with a <sequence> of element refs (minOccurs/maxOccurs, in order), attributes (required, xs:int, xs:decimal),
text allowed only where mixed="true" or the element is xs:string."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

XSD = Path(__file__).with_name("junit.xsd")
XS = "{http://www.w3.org/2001/XMLSchema}"
TYPES = {"xs:string": lambda v: True, "xs:int": lambda v: re.fullmatch(r"[+-]?\d+", v) is not None,
         "xs:decimal": lambda v: re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)", v) is not None}


def _schema():
    out = {}
    for el in ET.parse(XSD).getroot().findall(f"{XS}element"):
        ct = el.find(f"{XS}complexType")
        if ct is None:
            out[el.get("name")] = {"text": True, "seq": [], "attrs": {}}
            continue
        seq = [(e.get("ref"), int(e.get("minOccurs", "1")),
                None if e.get("maxOccurs") == "unbounded" else int(e.get("maxOccurs", "1")))
               for e in ct.findall(f"{XS}sequence/{XS}element")]
        attrs = {a.get("name"): (a.get("type", "xs:string"), a.get("use") == "required")
                 for a in ct.findall(f"{XS}attribute")}
        out[el.get("name")] = {"text": ct.get("mixed") == "true", "seq": seq, "attrs": attrs}
    return out


def _by_hand(path) -> list[str]:
    schema, problems = _schema(), []

    def walk(el, where):
        spec = schema.get(el.tag)
        if spec is None:
            problems.append(f"{where}: element <{el.tag}> is not in the schema")
            return
        for name, value in el.attrib.items():
            if name not in spec["attrs"]:
                problems.append(f"{where}: attribute {name!r} is not allowed on <{el.tag}>")
            elif not TYPES[spec["attrs"][name][0]](value):
                problems.append(f"{where}: {name}={value!r} is not {spec['attrs'][name][0]}")
        for name, (_, required) in spec["attrs"].items():
            if required and name not in el.attrib:
                problems.append(f"{where}: <{el.tag}> lacks required attribute {name!r}")
        if not spec["text"] and ((el.text or "").strip() or any((c.tail or "").strip() for c in el)):
            problems.append(f"{where}: <{el.tag}> holds text")
        kids, i = list(el), 0
        for ref, lo, hi in spec["seq"]:
            n = 0
            while i < len(kids) and kids[i].tag == ref and (hi is None or n < hi):
                n, i = n + 1, i + 1
            if n < lo:
                problems.append(f"{where}: <{el.tag}> needs at least {lo} <{ref}>")
        if i < len(kids):
            problems.append(f"{where}: <{kids[i].tag}> is not allowed there in <{el.tag}>")
        for j, k in enumerate(kids):
            walk(k, f"{where}/{k.tag}[{j}]")

    root = ET.parse(path).getroot()
    if root.tag not in schema:
        return [f"root <{root.tag}> is not in the schema"]
    walk(root, root.tag)
    return problems


def validate(path) -> tuple[str, list[str]]:
    """(which validator ran, the problems found: [] when the file is valid)."""
    try:
        import xmlschema  # type: ignore
        s = xmlschema.XMLSchema(str(XSD))
        return "xmlschema", [str(e) for e in s.iter_errors(str(path))]
    except ImportError:
        pass
    try:
        from lxml import etree  # type: ignore
        s = etree.XMLSchema(etree.parse(str(XSD)))
        ok = s.validate(etree.parse(str(path)))
        return "lxml", [] if ok else [str(e) for e in s.error_log]
    except ImportError:
        pass
    return "by hand (xml.etree; neither xmlschema nor lxml is installed)", _by_hand(path)
