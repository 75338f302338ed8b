"""Read an XML model file with the line number of every element, and report problems
that name the file, the line and the element.

``xml.etree.ElementTree`` drops line numbers, so the tree is built here from expat's
events: elements are plain ``ElementTree.Element`` objects (``find``/``iter`` work) and
their lines live in :class:`XmlFile`.
"""
from __future__ import annotations

import os
import warnings
import xml.etree.ElementTree as ET
from xml.parsers import expat


class ModelFileError(ValueError):
    """A URDF/MJCF file cannot be imported; the message names the file, line and element."""


class ModelImportWarning(UserWarning):
    """A feature of a URDF/MJCF file that the importer does not support (named with file, line
    and element); the model is imported without it."""


class XmlFile:
    """One parsed XML file: ``root``, ``path`` and the line of each element."""

    def __init__(self, path, who):
        self.path = os.fspath(path)
        self.who = who
        self.lines = {}
        if not os.path.isfile(self.path):
            raise ModelFileError(f"{who}: {self.path}: file not found" if not os.path.exists(self.path)
                                 else f"{who}: {self.path}: not a file")
        with open(self.path, "rb") as f:
            data = f.read()
        parser = expat.ParserCreate()
        stack = []
        roots = []

        def start(tag, attrs):
            el = ET.Element(tag, attrs)
            self.lines[id(el)] = parser.CurrentLineNumber
            if stack:
                stack[-1].append(el)
            else:
                roots.append(el)
            stack.append(el)

        def end(tag):
            stack.pop()

        parser.StartElementHandler = start
        parser.EndElementHandler = end
        try:
            parser.Parse(data, True)
        except expat.ExpatError as e:
            raise ModelFileError(f"{who}: {self.path}:{e.lineno}: malformed XML: {expat.ErrorString(e.code)} "
                                 f"(column {e.offset + 1})") from None
        self.root = roots[0]
        self._keep = roots  # ids in self.lines stay valid while the elements live

    def line(self, el):
        return self.lines.get(id(el))

    def where(self, el):
        """``path:line: <tag name='...'>`` for messages."""
        if el is None:
            return self.path
        line = self.line(el)
        name = el.get("name")
        tag = f"<{el.tag}" + (f" name='{name}'" if name is not None else "") + ">"
        return f"{self.path}:{line}: {tag}" if line else f"{self.path}: {tag}"

    def error(self, el, msg):
        return ModelFileError(f"{self.who}: {self.where(el)}: {msg}")


class Report:
    """Warnings (physics the importer could not reproduce) and notes (things skipped that carry
    no physics, e.g. visual materials) of one import."""

    def __init__(self, who):
        self.who = who
        self.warnings = []
        self.notes = []

    def warn(self, source, el, msg):
        text = f"{source.where(el)}: {msg}"
        if text not in self.warnings:
            self.warnings.append(text)
            warnings.warn(f"{self.who}: {text}", ModelImportWarning, stacklevel=4)

    def note(self, source, el, msg):
        text = f"{source.where(el)}: {msg}"
        if text not in self.notes:
            self.notes.append(text)
