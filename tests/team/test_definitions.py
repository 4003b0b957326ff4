"""Agent definitions: built-ins, TOML files in the user and project dirs, validation that
names file and field, and project trust."""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from orchestrator import AgentDefinition, Definitions, load_definitions
from orchestrator.errors import ConfigError
from orchestrator.team.definitions import EXPLORER, READ_ONLY_TOOLS, WORKER
from orchestrator.team.trust import MAX_FINGERPRINTS, TRUST_FILE, TrustStore, fingerprint
from orchestrator.tools import workspace_tools
from orchestrator.tools.base import WORKSPACE_TOOLS

COORDINATION = (
    "complete",
    "report_progress",
    "ask_decision",
    "report_blocked",
    "raise_risk",
    "request_direction_change",
)


class Asker:
    """An interactive user who answers every question the same way, and counts them."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.questions: list[str] = []

    def __call__(self, question: str) -> bool:
        self.questions.append(question)
        return self.answer


def never_asked(question: str) -> bool:
    raise AssertionError(f"asked without need: {question}")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    directory = tmp_path / "project"
    (directory / ".orchestrator" / "agents").mkdir(parents=True)
    return directory


@pytest.fixture
def user(tmp_path: Path) -> Path:
    directory = tmp_path / "config"
    (directory / "agents").mkdir(parents=True)
    return directory


def project_file(project: Path, name: str, text: str) -> None:
    (project / ".orchestrator" / "agents" / f"{name}.toml").write_text(text)


def user_file(user: Path, name: str, text: str) -> None:
    (user / "agents" / f"{name}.toml").write_text(text)


def load(
    project: Path | None = None,
    user: Path | None = None,
    *,
    ask: Callable[[str], bool] | None = None,
    trust: bool = True,
) -> Definitions:
    return load_definitions(
        project_dir=project,
        user_dir=user,
        trust=TrustStore(user) if trust and user is not None else None,
        ask=ask,
        known_tools=WORKSPACE_TOOLS,
    )


def refusal(project: Path, user: Path | None = None, *, ask: Asker | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        load(project, user, ask=ask)
    return str(caught.value)


# --- built-ins --------------------------------------------------------------------------


def test_builtins_are_worker_and_explorer() -> None:
    definitions = load()
    assert definitions.names() == ("explorer", "worker")
    assert definitions.get("worker") == WORKER
    assert definitions.get("explorer") == EXPLORER
    assert definitions.sources("worker") == ("built-in",)
    assert not WORKER.read_only
    assert EXPLORER.read_only
    assert WORKER.tools == WORKSPACE_TOOLS
    assert set(EXPLORER.tools) == READ_ONLY_TOOLS


def test_tool_names_match_the_workspace_tools() -> None:
    tools = workspace_tools()
    assert set(WORKSPACE_TOOLS) == set(tools.names())
    read_only = {name for name in tools.names() if (tool := tools.get(name)) and tool.read_only}
    assert read_only == READ_ONLY_TOOLS


@pytest.mark.parametrize("definition", [WORKER, EXPLORER], ids=lambda d: d.name)
def test_builtin_prompts_name_the_coordination_tools(definition: AgentDefinition) -> None:
    for tool in COORDINATION:
        assert tool in definition.prompt
    assert "{" not in definition.prompt  # no template left unfilled, nothing per task
    assert "\n" not in definition.description
    assert definition.description


def test_get_unknown_type_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="unknown agent type 'tester'; the agent types are "):
        load().get("tester")
    assert "tester" not in load()


# --- user definitions -------------------------------------------------------------------


def test_user_file_overrides_only_the_keys_it_sets(user: Path) -> None:
    user_file(
        user,
        "worker",
        'model = "openai:gpt-4.1"\nmax_rounds = 200\nallow = ["shell:pytest *=allow"]\n',
    )
    worker = load(user=user).get("worker")
    assert worker == WORKER.model_copy(
        update={"model": "openai:gpt-4.1", "max_rounds": 200, "allow": ("shell:pytest *=allow",)}
    )
    sources = load(user=user).sources("worker")
    assert sources == ("built-in", str(user / "agents" / "worker.toml"))


def test_user_file_defines_a_new_role(user: Path) -> None:
    user_file(
        user,
        "tester",
        'description = "Runs the tests."\nprompt = "You run tests."\n'
        'tools = ["read_file", "shell"]\nmay_delegate = true\nresume = "ask"\n',
    )
    tester = load(user=user).get("tester")
    assert tester.name == "tester"
    assert tester.tools == ("read_file", "shell")
    assert (tester.may_delegate, tester.resume, tester.max_rounds) == (True, "ask", 50)
    assert not tester.read_only


def test_the_name_key_wins_over_the_file_name(user: Path) -> None:
    user_file(user, "anything", 'name = "reviewer"\nprompt = "Review."\ntools = ["grep"]\n')
    assert load(user=user).names() == ("explorer", "reviewer", "worker")


def test_two_files_with_one_name_are_refused(user: Path) -> None:
    user_file(user, "a", 'name = "tester"\nprompt = "p"\ntools = []\n')
    user_file(user, "tester", 'prompt = "p"\ntools = []\n')
    with pytest.raises(ConfigError) as caught:
        load(user=user)
    assert str(caught.value) == (
        f"{user / 'agents' / 'tester.toml'}: name: 'tester' is also defined by "
        f"{user / 'agents' / 'a.toml'}; one file per agent type"
    )


def test_files_that_are_not_definitions_are_ignored(user: Path) -> None:
    (user / "agents" / "notes.md").write_text("not TOML")
    (user / "agents" / ".worker.toml").write_text("editor = 'swap file'")
    assert load(user=user).names() == ("explorer", "worker")


# --- validation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("max_rounds = 0", "max_rounds: Input should be greater than 0"),
        ("max_continues = -1", "max_continues: Input should be greater than or equal to 0"),
        ('resume = "sometimes"', "resume: Input should be 'auto', 'ask' or 'never'"),
        ('model = "gpt-4.1"', "model: 'gpt-4.1' is not PROVIDER:NAME"),
        ('allow = ["shell=maybe"]', "allow: permission rule 'shell=maybe' is not TOOL="),
        ('description = """two\nlines"""', "description: must be one line"),
        ('prompt = "  "', "prompt: must not be empty"),
        ('tools = ["grep", "grep"]', "tools: listed more than once: grep"),
        ('tools = "grep"', "tools: Input should be a valid tuple"),
        ('name = "Tester"', "name: 'Tester' is not a role name"),
        ('name = "main"', "name: 'main' is the main agent's role"),
        ("name = [1]", "name: Input should be a valid string"),
        ("colour = 'blue'", "colour: unknown key; the keys are name, description, prompt,"),
        ('max_rounds = "many"', "max_rounds: Input should be a valid integer"),
    ],
)
def test_errors_name_the_file_and_the_field(
    project: Path, user: Path, text: str, expected: str
) -> None:
    project_file(project, "explorer", text + "\n")
    with pytest.raises(ConfigError) as caught:
        load(project, user)
    assert str(caught.value).startswith(f".orchestrator/agents/explorer.toml: {expected}")
    user_file(user, "worker", text + "\n")
    with pytest.raises(ConfigError) as caught:
        load(user=user)
    assert str(caught.value).startswith(f"{user / 'agents' / 'worker.toml'}: {expected}")


def test_a_new_role_needs_a_prompt(user: Path) -> None:
    user_file(user, "tester", 'description = "d"\n')
    with pytest.raises(ConfigError) as caught:
        load(user=user)
    assert str(caught.value) == (f"{user / 'agents' / 'tester.toml'}: prompt: Field required")


def test_a_file_name_that_is_no_role_name_says_so(user: Path) -> None:
    user_file(user, "My Tester", 'prompt = "p"\ntools = []\n')
    with pytest.raises(ConfigError, match="unless the file sets name") as caught:
        load(user=user)
    assert "My Tester.toml: name: 'My Tester' is not a role name" in str(caught.value)


def test_unknown_tool_lists_the_known_ones(project: Path) -> None:
    project_file(project, "explorer", 'tools = ["read_file", "browse"]\n')
    with pytest.raises(ConfigError) as caught:
        load(project)
    assert str(caught.value) == (
        ".orchestrator/agents/explorer.toml: tools: unknown tool 'browse'; the known tools "
        "are edit_file, grep, list_files, read_file, shell, write_file"
    )


def test_known_tools_come_from_the_caller(user: Path) -> None:
    user_file(user, "browser", 'prompt = "p"\ntools = ["fetch"]\n')
    definitions = load_definitions(
        project_dir=None,
        user_dir=user,
        trust=None,
        ask=None,
        known_tools={*WORKSPACE_TOOLS, "fetch"},
    )
    assert definitions.get("browser").tools == ("fetch",)
    assert not definitions.get("browser").read_only  # a tool it does not know may write


def test_bad_toml_names_the_file_and_the_line(project: Path) -> None:
    project_file(project, "explorer", "max_rounds = 10\ntools = [grep]\n")
    with pytest.raises(ConfigError) as caught:
        load(project)
    message = str(caught.value)
    assert message.startswith(".orchestrator/agents/explorer.toml: not valid TOML: ")
    assert "line 2" in message


def test_agents_path_that_is_not_a_directory(tmp_path: Path) -> None:
    (tmp_path / ".orchestrator").mkdir()
    (tmp_path / ".orchestrator" / "agents").write_text("")
    with pytest.raises(ConfigError, match=r"^\.orchestrator/agents: not a directory$"):
        load(tmp_path)


# --- project files: narrowing needs no trust ---------------------------------------------


def test_project_may_narrow_without_trust(project: Path, user: Path) -> None:
    project_file(
        project,
        "worker",
        'prompt = "You are this project\'s worker."\ndescription = "Edits the docs."\n'
        'tools = ["read_file", "edit_file"]\nmax_rounds = 20\nmax_continues = 1\n'
        'resume = "ask"\nallow = ["shell=deny", "edit_file=deny"]\n',
    )
    project_file(project, "scout", 'prompt = "Look around."\ntools = ["grep", "list_files"]\n')
    definitions = load(project, user, ask=never_asked)
    worker = definitions.get("worker")
    assert worker.tools == ("read_file", "edit_file")
    assert (worker.max_rounds, worker.max_continues, worker.resume) == (20, 1, "ask")
    assert worker.prompt == "You are this project's worker."
    assert definitions.sources("worker") == ("built-in", ".orchestrator/agents/worker.toml")
    assert definitions.get("scout").read_only
    assert not (user / TRUST_FILE).exists()


def test_project_narrows_the_users_definition(project: Path, user: Path) -> None:
    user_file(user, "worker", 'model = "openai:gpt-4.1"\nmax_rounds = 100\n')
    project_file(project, "worker", "max_rounds = 80\n")
    worker = load(project, user).get("worker")
    assert (worker.model, worker.max_rounds) == ("openai:gpt-4.1", 80)
    assert worker.tools == WORKER.tools
    project_file(project, "worker", "max_rounds = 120\n")  # wider than the user's
    assert "max_rounds: 120 (was 100)" in refusal(project, user)


# --- project files: widening needs trust -------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (
            "worker",
            'model = "openai:gpt-4.1@http://10.0.0.1/v1"',
            'model: "openai:gpt-4.1@http://10.0.0.1/v1" (instead of the config\'s model',
        ),
        ("worker", 'allow = ["shell:pytest *=allow"]', 'allow: "shell:pytest *=allow"'),
        ("worker", 'allow = ["shell=ask"]', 'allow: "shell=ask"'),
        ("explorer", 'tools = ["grep", "shell"]', "tools: adds shell"),
        ("worker", "max_rounds = 51", "max_rounds: 51 (was 50)"),
        ("worker", "max_continues = 10", "max_continues: 10 (was 3)"),
        ("worker", "may_delegate = true", "may_delegate: true (was false)"),
        (
            "tester",
            'prompt = "p"\ntools = ["read_file", "shell"]',
            "tools: read_file, shell (a new agent type may only read)",
        ),
        ("scout", 'prompt = "p"\ntools = ["grep"]\nmay_delegate = true', "may_delegate: true"),
    ],
)
def test_project_widening_is_refused_headless(
    project: Path, user: Path, name: str, text: str, expected: str
) -> None:
    project_file(project, name, text + "\n")
    message = refusal(project, user)
    assert message.startswith(f".orchestrator/agents/{name}.toml: {expected}")
    assert f"you have not trusted {project} with these settings" in message
    assert "run orchestrator in the project interactively once and answer yes" in message
    assert f"copy the definition into {user / 'agents'}/" in message
    assert not (user / TRUST_FILE).exists()


def test_resume_policy_that_runs_more_unasked_is_widening(project: Path, user: Path) -> None:
    user_file(user, "worker", 'resume = "never"\n')
    project_file(project, "worker", 'resume = "ask"\n')
    assert 'resume: "ask" (was "never")' in refusal(project, user)


def test_verify_commands_run_unasked_so_they_are_widening(project: Path, user: Path) -> None:
    project_file(project, "worker", 'verify = ["make check"]\n')
    message = refusal(project, user)
    assert 'verify: ["make check"] (commands run in the workspace when a task completes)' in (
        message
    )
    # The user's own commands, repeated by the project, widen nothing.
    user_file(user, "worker", 'verify = ["make check"]\n')
    assert load(project, user).get("worker").verify == ("make check",)


def test_asked_once_then_remembered(project: Path, user: Path) -> None:
    project_file(project, "worker", 'model = "openai:gpt-4.1"\nmax_rounds = 200\n')
    project_file(project, "tester", 'prompt = "p"\ntools = ["shell"]\n')
    ask = Asker(True)
    definitions = load(project, user, ask=ask)
    assert definitions.get("worker").model == "openai:gpt-4.1"
    assert definitions.get("tester").tools == ("shell",)
    assert ask.questions == [
        f"The project {project} has agent definitions that ask for more than a repository "
        "may set on its own:\n"
        "  .orchestrator/agents/tester.toml: tools: shell (a new agent type may only read)\n"
        '  .orchestrator/agents/worker.toml: max_rounds: 200 (was 50); model: "openai:gpt-4.1"'
        " (instead of the config's model for this role)\n"
        "Trust this project with these settings? (You are asked again if they change.)"
    ]
    load(project, user, ask=ask)
    assert len(ask.questions) == 1
    assert load(project, user).get("worker").max_rounds == 200  # headless, remembered


def test_the_project_is_the_same_however_it_is_spelt(
    project: Path, user: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project_file(project, "worker", "max_rounds = 200\n")
    load(project, user, ask=Asker(True))
    (tmp_path / "link").symlink_to(project)
    monkeypatch.chdir(tmp_path)
    assert load(Path("link"), user).get("worker").max_rounds == 200
    assert load(Path("project/../project"), user).get("worker").max_rounds == 200


def test_asked_again_when_the_widening_settings_change(project: Path, user: Path) -> None:
    project_file(project, "worker", "max_rounds = 200\n")
    ask = Asker(True)
    load(project, user, ask=ask)
    project_file(project, "worker", "max_rounds = 300\n")
    assert "max_rounds: 300 (was 50)" in refusal(project, user)
    assert load(project, user, ask=ask).get("worker").max_rounds == 300
    assert len(ask.questions) == 2
    project_file(project, "worker", "max_rounds = 300\nmay_delegate = true\n")
    load(project, user, ask=ask)
    assert len(ask.questions) == 3


def test_not_asked_again_when_only_text_or_narrowing_changes(project: Path, user: Path) -> None:
    project_file(project, "worker", 'max_rounds = 200\nprompt = "Work."\n')
    ask = Asker(True)
    load(project, user, ask=ask)
    project_file(
        project,
        "worker",
        'max_rounds = 200\nprompt = "Work harder."\ndescription = "New words."\n'
        'tools = ["read_file", "shell"]\nallow = ["shell:rm *=deny"]\n',
    )
    project_file(project, "scout", 'prompt = "Look."\ntools = ["grep"]\n')
    worker = load(project, user, ask=ask).get("worker")
    assert (worker.prompt, worker.tools) == ("Work harder.", ("read_file", "shell"))
    assert len(ask.questions) == 1


def test_trusting_again_settings_trusted_before_is_not_asked(project: Path, user: Path) -> None:
    """Switching back to a branch whose settings were trusted asks nothing."""
    ask = Asker(True)
    for rounds in (200, 300, 200):
        project_file(project, "worker", f"max_rounds = {rounds}\n")
        load(project, user, ask=ask)
    assert len(ask.questions) == 2


def test_answer_no_refuses_and_remembers_nothing(project: Path, user: Path) -> None:
    project_file(project, "worker", 'allow = ["shell=allow"]\n')
    ask = Asker(False)
    message = refusal(project, user, ask=ask)
    assert f"you did not trust {project} with these settings" in message
    assert len(ask.questions) == 1
    assert not (user / TRUST_FILE).exists()


def test_without_a_trust_store_every_run_asks(project: Path) -> None:
    project_file(project, "worker", 'allow = ["shell=allow"]\n')
    ask = Asker(True)
    for _ in range(2):
        load_definitions(
            project_dir=project, user_dir=None, trust=None, ask=ask, known_tools=WORKSPACE_TOOLS
        )
    assert len(ask.questions) == 2
    with pytest.raises(ConfigError, match="copy the definition into agents/ in your config dir"):
        load(project)


def test_user_definitions_need_no_trust(user: Path, project: Path) -> None:
    user_file(user, "tester", 'prompt = "p"\ntools = ["shell"]\nallow = ["shell=allow"]\n')
    project_file(project, "tester", 'prompt = "Project tests."\n')  # narrows nothing wider
    tester = load(project, user, ask=never_asked).get("tester")
    assert (tester.prompt, tester.allow) == ("Project tests.", ("shell=allow",))


# --- the trust store ---------------------------------------------------------------------


def test_trust_file_is_private_and_readable(tmp_path: Path, project: Path) -> None:
    store = TrustStore(tmp_path / "new" / "config")
    store.trust(project, "sha256:a")
    mode = stat.S_IMODE(store.path.stat().st_mode)
    assert mode == 0o600
    assert orjson.loads(store.path.read_bytes()) == {
        "version": 1,
        "projects": {str(project): ["sha256:a"]},
    }
    assert store.is_trusted(project, "sha256:a")
    assert not store.is_trusted(project, "sha256:b")
    assert not store.is_trusted(tmp_path, "sha256:a")
    assert [p.name for p in store.path.parent.iterdir()] == [TRUST_FILE]  # no temp left


def test_trust_keeps_the_newest_fingerprints(tmp_path: Path, project: Path) -> None:
    store = TrustStore(tmp_path)
    for i in range(MAX_FINGERPRINTS + 5):
        store.trust(project, f"sha256:{i}")
    store.trust(project, "sha256:10")  # trusted again: moves to the newest
    assert not store.is_trusted(project, "sha256:4")
    assert store.is_trusted(project, "sha256:5")
    assert store.is_trusted(project, "sha256:10")
    kept = orjson.loads(store.path.read_bytes())["projects"][str(project)]
    assert len(kept) == MAX_FINGERPRINTS
    assert kept[-1] == "sha256:10"


def test_fingerprint_is_canonical() -> None:
    assert fingerprint({"a": 1, "b": [1, 2]}) == fingerprint({"b": [1, 2], "a": 1})
    assert fingerprint({"a": 1}) != fingerprint({"a": 2})
    assert fingerprint({}).startswith("sha256:")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"{not json", "not valid JSON ("),
        (b'{"version": 1, "projects": []}', "not a list of trusted projects (projects: "),
        (b'{"version": 7}', "not a list of trusted projects (version: "),
    ],
)
def test_corrupt_trust_file_is_a_clear_error(
    project: Path, user: Path, content: bytes, expected: str
) -> None:
    (user / TRUST_FILE).write_bytes(content)
    assert load(project, user).names() == ("explorer", "worker")  # not read: no need
    project_file(project, "worker", "max_rounds = 200\n")
    message = refusal(project, user, ask=Asker(True))
    assert message.startswith(f"{user / TRUST_FILE}: {expected}")
    assert "delete it to forget every trusted project" in message
