"""Import-cycle check shared by the tests of a package's layout (test_code_layout.py for
engine/, test_modeltools_imports.py for modeltools/)."""


def assert_no_cycle(graph: dict) -> None:
    """graph: module -> the modules it imports. Fails naming the first cycle found."""
    done, path = set(), []

    def visit(m):
        assert m not in path, f"import cycle: {' -> '.join(path[path.index(m):] + [m])}"
        if m in done:
            return
        path.append(m)
        for d in sorted(graph[m]):
            visit(d)
        path.pop()
        done.add(m)

    for m in sorted(graph):
        visit(m)
