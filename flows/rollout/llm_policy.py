"""The `llm` policy: a vision-language model acts through the `computer_use` tool, one call per turn
(and the `shell` tool too in sandboxes with a command line: desktop and cli kinds).

Each turn is one self-contained request (system prompt, task, short action history, page URL, a
truncated ARIA tree and the screenshot as a PNG data URL), so requests are cacheable and replayable.

Output that does not parse still becomes a turn: `PolicyTurn(raw_output, actions=[], faults=[])` with
an extra attribute `format_error` ("<code>: <message>", see `sandboxes.action_parsing`); readable turns
carry `format_error = None`. Read it with `getattr(turn, "format_error", None)`. After
MAX_FORMAT_ERRORS unreadable turns in a row the policy gives up with `terminate(status="failure")`.
An unreachable model (the client's error after retries) raises `LLMUnavailable`: the endpoint, not the
policy, ended the episode, so the rollout records it as env_error.
"""

from __future__ import annotations

import base64
import json

from flows.rollout.policies import PolicyTurn
from flows.task_synthesis.task_spec import TaskSpec
from flywheel.llm import LLMClient
from sandboxes.action_parsing import COMPUTER_USE_TOOL, SHELL_TOOL, parse_model_output
from sandboxes.actions import Action, Shell, Terminate, dump_actions
from sandboxes.driver import ActionResult, Observation

MAX_FORMAT_ERRORS = 3
HISTORY_TURNS = 12  # previous turns shown to the model
TREE_CHARS = 6000  # ARIA tree characters shown to the model
SHELL_OUTPUT_CHARS = 1500  # of each shell command's output, shown to the model in its history
SHELL_KINDS = ("desktop", "cli")  # sandbox kinds whose policies also get the `shell` tool

SYSTEM_PROMPT = """You are a computer-use agent operating a web application to complete the user's task.
Each turn you see the task, the actions you took so far, the page URL, part of the page's accessibility
tree and a screenshot of the current screen.

Act by calling the `computer_use` function; several calls in one turn run in order as a batch.
Coordinates are [x, y] on a 0..999 grid laid over the screenshot: [0, 0] is the top-left corner and
[999, 999] the bottom-right, whatever the real screen size. Click a text field before typing into it.
When the task is complete, call computer_use with action="terminate" and status="success" (put the
answer in `answer` when the task asks a question). If the task cannot be done, terminate with
status="failure". Do not ask the user for anything the task already tells you."""

SHELL_PROMPT = """
This machine also has a command line: call the `shell` function with a command to run it in the
workspace; its exit code and output appear in your history. Mix GUI actions and commands as suits
the task."""


class LLMUnavailable(RuntimeError):
    """The model endpoint failed after retries: an environment failure, not a policy decision."""


class LLMPolicy:
    """A model behind `flywheel.llm.LLMClient` as a rollout policy."""

    name = "llm"

    def __init__(self, client: LLMClient, shell: bool = False, **params: object) -> None:
        self.client = client
        self.model = client.model
        self.shell = shell  # offer the `shell` tool (sandboxes with a command line)
        self.params = params  # sampling parameters passed on each call, e.g. temperature

    def start(self, task: TaskSpec, episode: int) -> None:
        self._task, self._episode = task, episode
        self._history: list[str] = []
        self._bad_in_a_row = 0

    def next_turn(self, observation: Observation) -> PolicyTurn:
        step = len(self._history)
        result = self.client.complete(
            self._messages(observation), tools=[COMPUTER_USE_TOOL, SHELL_TOOL] if self.shell else [COMPUTER_USE_TOOL],
            purpose="policy",
            salt=f"{self._task.task_id}#{self._episode}#{step}", **self.params,
        )
        if result.error:
            raise LLMUnavailable(f"model {self.model}: {result.error}")
        parsed = parse_model_output(result.message)
        if parsed.format_error:
            self._bad_in_a_row += 1
            self._history.append(f"(your output could not be read: {parsed.format_error[:200]})")
            give_up = [Terminate(status="failure")] if self._bad_in_a_row >= MAX_FORMAT_ERRORS else []
            turn = PolicyTurn(raw_output=parsed.raw, actions=give_up, faults=[])
        else:
            self._bad_in_a_row = 0
            self._history.append(json.dumps(dump_actions(parsed.actions), ensure_ascii=False))
            turn = PolicyTurn(raw_output=parsed.raw, actions=parsed.actions, faults=[])
        turn.format_error = parsed.format_error  # type: ignore[attr-defined]  # see the module docstring
        return turn

    def observe_results(self, actions: list[Action], results: list[ActionResult]) -> None:
        """What the shell printed joins the history, so the model sees its commands' output."""
        for action, result in zip(actions, results):
            if isinstance(action, Shell) and result.details:
                out = (result.details.get("stdout", "") + result.details.get("stderr", "")).strip()
                if len(out) > SHELL_OUTPUT_CHARS:
                    out = "…" + out[-SHELL_OUTPUT_CHARS:]
                self._history.append(f"(shell `{action.command}` exit {result.details.get('exit_code')}: {out or 'no output'})")

    def _messages(self, obs: Observation) -> list[dict]:
        shown = self._history[-HISTORY_TURNS:]
        first = len(self._history) - len(shown) + 1
        history = "\n".join(f"{first + i}. {h}" for i, h in enumerate(shown)) or "(none yet)"
        tree = obs.ui_tree if len(obs.ui_tree) <= TREE_CHARS else obs.ui_tree[:TREE_CHARS] + "\n... (truncated)"
        text = (
            f"Task: {self._task.instruction}\n\nActions so far:\n{history}\n\n"
            f"Current page: {obs.url} ({obs.title})\nAccessibility tree:\n{tree}"
        )
        content: list[dict] = [{"type": "text", "text": text}]
        if obs.screenshot:
            url = "data:image/png;base64," + base64.b64encode(obs.screenshot).decode()
            content.append({"type": "image_url", "image_url": {"url": url}})
        system = SYSTEM_PROMPT + (SHELL_PROMPT if self.shell else "")
        return [{"role": "system", "content": system}, {"role": "user", "content": content}]
