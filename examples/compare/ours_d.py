"""Task D with orchestrator: an approval that waits for a person who is not there. The
first run parks the call that needs a yes and ends; later (in another process, hours on),
the person's decision is given and the call runs once, or the model reads the refusal.

Run: python examples/compare/ours_d.py [MODEL]                     (prints what waits)
     python examples/compare/ours_d.py MODEL SESSION REQUEST yes|no  (decides it)
Offline: python examples/compare/offline.py ours_d.py DIR [SESSION REQUEST yes|no]
Compared with the same work in pydantic-ai and the Agents SDK: docs/library.md.
"""

import sys

import orchestrator as orc

MODEL = sys.argv[1] if len(sys.argv) > 1 else "openai:gpt-4.1"


@orc.tool
def deploy(version: str) -> str:
    """Deploy a version to production.

    Args:
        version: the version to deploy.
    """
    return f"version {version} is live"


def main() -> None:
    if len(sys.argv) > 4:  # the person's decision, later
        session, waiting, decision = sys.argv[2:5]
        answer = True if decision == "yes" else orc.Denied("not this week")
        result = orc.resume_sync(
            session, sessions_dir="sessions", model=MODEL, tools=[deploy],
            approvals={waiting: answer},
        )  # fmt: skip
        print(result.output)
        return
    result = orc.run_sync(
        "Deploy version 1.2.", model=MODEL, tools=[deploy], sessions_dir="sessions",
        approve=lambda request: orc.Later(),
    )  # fmt: skip
    for request in result.approvals:
        print(f"waiting: {result.session_id} {request.id} {request.tool} {request.arguments}")


if __name__ == "__main__":
    main()
