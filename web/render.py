"""Render one of the site's jinja2 templates: `render.py TEMPLATE OUT` with the context as JSON
on stdin. build.py runs it with the .venv's Python (build.py itself is standard library only).
StrictUndefined: a name missing from the context fails the build instead of rendering empty."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jinja2


def main(template: str, out: str) -> int:
    path = Path(template)
    # HTML is autoescaped; in JavaScript templates values go in through |tojson only
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(path.parent), undefined=jinja2.StrictUndefined,
                             autoescape=path.name.endswith(".html.j2"), keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True)
    text = env.get_template(path.name).render(**json.loads(sys.stdin.read()))
    Path(out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
