"""A hook command for the tests: `hook_app.py LOG HOW [KEY=VALUE ...]`. It appends the
event it reads on stdin to LOG (one JSON line), then answers as HOW says:

- `refuse-if`: exit code 2, with `reason` on stderr, when the call's arguments hold
  `pattern`; else no opinion.
- `rewrite`: the shell call's `command` becomes `command`.
- `note`: a note for the model, `text`.
- `keep`: text kept among a compaction's anchors, `text`.
- `send-back-once`: at the first `stop`, "not yet" with `reason`; then no opinion.
- `hang`: never answers (while the file `unless` does not exist, when given).
- `fail`: exit code 1.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main() -> int:
    log, how = Path(sys.argv[1]), sys.argv[2]
    given = dict(arg.split("=", 1) for arg in sys.argv[3:])
    event = json.load(sys.stdin)
    earlier = log.read_text().splitlines() if log.exists() else []
    with log.open("a") as out:
        out.write(json.dumps(event) + "\n")
    if how == "refuse-if":
        if given["pattern"] in json.dumps(event.get("arguments", {})):
            print(given["reason"], file=sys.stderr)
            return 2
        if "hang" in given and not Path(given["hang"]).exists():
            time.sleep(600)
    elif how == "rewrite":
        print(json.dumps({"arguments": {**event["arguments"], "command": given["command"]}}))
    elif how == "note":
        print(json.dumps({"note": given["text"]}))
    elif how == "keep":
        print(json.dumps({"text": given["text"]}))
    elif how == "send-back-once":
        if not any(json.loads(line)["event"] == "stop" for line in earlier):
            print(json.dumps({"decision": "continue", "reason": given["reason"]}))
    elif how == "hang":
        time.sleep(600)
    elif how == "fail":
        print("the hook is broken", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
