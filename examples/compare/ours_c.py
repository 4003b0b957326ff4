"""Task C with orchestrator: one agent, one tool of the program's, the answer; from a
plain script, with no event loop of its own.

Run: python examples/compare/ours_c.py [MODEL]
Offline: python examples/compare/offline.py ours_c.py
Compared with the same work in pydantic-ai and the Agents SDK: docs/library.md.
"""

import sys

import orchestrator as orc

MODEL = sys.argv[1] if len(sys.argv) > 1 else "openai:gpt-4.1"


@orc.tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: the key.
    """
    return {"k": "42"}.get(key, "nothing")


def main() -> None:
    result = orc.run_sync("What does the key k hold? Look it up.", model=MODEL, tools=[lookup])
    print(result.output)


if __name__ == "__main__":
    main()
