#!/usr/bin/env python3
"""Links between the Markdown documents, and where they land.

Lists every Markdown link from a document of the repository to another one
(or to a heading of its own) and checks that it lands on text:

  - the file exists;
  - the anchor (#...) is a heading of that file, slugged as GitHub does
    (lower case, punctuation dropped, spaces to hyphens, -1, -2 for repeats);
  - the heading is not a stub: a section whose whole text is one line
    that links on to another file (README.md's one-line summaries of the
    guides).  A link that lands there makes the reader follow a second link
    to reach the text; point it at the guide's heading instead.  README.md's
    navigation (the lines before its first "## " heading) is exempt: it is
    the README's own table of contents, and its summaries are what it lists.

    python3 scripts/doclinks.py          # every link and its status
    python3 scripts/doclinks.py --bad    # only the links that fail

scripts/check-release.py runs the same checks as TAP lines (the release
suite), so a dead anchor fails the tests.
"""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
# [text](target) and [text](target "title"); not images' own files, which we do not check
LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")


def slug(text):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"<[^>]+>", "", text)            # inline HTML
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links keep their text
    text = text.lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)            # \w keeps letters, digits, _
    return text.replace(" ", "-")


def documents(repo=REPO):
    """The Markdown files git knows (or, outside a checkout, every *.md)."""
    try:
        out = subprocess.run(["git", "-C", repo, "ls-files", "*.md"], capture_output=True,
                             text=True, check=True).stdout.split()
        if out:
            return sorted(out)
    except (OSError, subprocess.CalledProcessError):
        pass
    found = []
    for root, dirs, files in os.walk(repo):
        dirs[:] = [d for d in dirs if not d.startswith((".", "tmp_check"))
                   and d not in ("demo", "dist", "node_modules", "debian")]
        found += [os.path.relpath(os.path.join(root, f), repo) for f in files if f.endswith(".md")]
    return sorted(found)


class Doc:
    """One Markdown file: its lines outside code, its headings and their sections."""

    def __init__(self, path, text):
        self.path = path
        self.lines = []           # (line number, text) outside fenced code
        self.headings = {}        # anchor -> (level, index into self.lines)
        prose = []                # the text with code blanked, line for line
        fenced = False
        for n, line in enumerate(text.splitlines(), 1):
            if FENCE.match(line):
                fenced = not fenced
                if fenced:
                    self.lines.append((n, "```"))   # a code block counts as text
                prose.append("")
                continue
            if not fenced:
                self.lines.append((n, line))
            prose.append("" if fenced else line)
        self.prose = "\n".join(prose)
        seen = {}
        for i, (n, line) in enumerate(self.lines):
            m = HEADING.match(line)
            if m:
                base = slug(m.group(2))
                k = seen.get(base, 0)
                seen[base] = k + 1
                self.headings[base if k == 0 else f"{base}-{k}"] = (len(m.group(1)), i)
        for m in re.finditer(r"<a\s+(?:id|name)=\"([^\"]+)\"", text):
            self.headings.setdefault(m.group(1), (7, None))

    def stub(self, anchor):
        """True when the heading's section is one line that links on to another file."""
        level, i = self.headings[anchor]
        if i is None:
            return False
        body = []
        j = i + 1
        while j < len(self.lines):
            m = HEADING.match(self.lines[j][1])
            if m:
                if len(m.group(1)) > level:
                    return False      # a parent section: its subsections hold the text
                break
            body.append(self.lines[j][1])
            j += 1
        text = [b for b in body if b.strip()]
        if len(text) != 1:
            return False
        targets = [t for t in LINK.findall(text[0]) if not t.startswith("#")
                   and re.match(r"^[^:]*\.md(#|$)", t)]
        return bool(targets)

    def toc_end(self):
        """The line number of README.md's first "## " heading (its navigation ends there)."""
        for n, line in self.lines:
            if line.startswith("## "):
                return n
        return 0


def links(repo=REPO):
    """Every link from a document to a document: (source, line, target, problem or None)."""
    paths = documents(repo)
    docs = {}
    for p in paths:
        with open(os.path.join(repo, p), encoding="utf-8") as f:
            docs[p] = Doc(p, f.read())
    out = []
    for p in paths:
        doc = docs[p]
        toc_end = doc.toc_end() if p == "README.md" else 0
        for m in LINK.finditer(doc.prose):   # a link's text may run over lines
            n = doc.prose.count("\n", 0, m.start()) + 1
            for target in [m.group(1)]:
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                    continue          # http:, mailto:: not ours to check
                file_part, _, anchor = target.partition("#")
                if file_part:
                    dest = os.path.normpath(os.path.join(os.path.dirname(p), file_part))
                else:
                    dest = p
                if not dest.endswith(".md") and not anchor:
                    problem = None if os.path.exists(os.path.join(repo, dest)) else "no such file"
                    out.append((p, n, target, problem))
                    continue
                if not dest.endswith(".md"):
                    continue          # an anchor in a non-Markdown file: not checked
                if dest not in docs:
                    problem = "no such file" if not os.path.exists(os.path.join(repo, dest)) \
                        else None
                    out.append((p, n, target, problem))
                    continue
                problem = None
                if anchor:
                    if anchor not in docs[dest].headings:
                        problem = f"no heading #{anchor} in {dest}"
                    elif docs[dest].stub(anchor) and not (p == "README.md" and n < toc_end):
                        problem = (f"#{anchor} in {dest} is a one-line stub that links on: "
                                   "link to the text it points to")
                out.append((p, n, target, problem))
    return out


def main(argv):
    bad_only = "--bad" in argv
    failed = 0
    for src, n, target, problem in links():
        if problem:
            failed += 1
        if problem or not bad_only:
            print(f"{src}:{n}: {target}: {problem or 'ok'}")
    print(f"# {failed} link(s) fail", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
