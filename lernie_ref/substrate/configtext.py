"""The words of ``lernie.toml`` that the light paths need: its file name, the model names,
the text ``lernie new`` writes (R-WS-1, R-STEP-6, R-CLI-8); the error for an unknown
model is :meth:`lernie_ref.core.errors.ConfigError.unknown_model`.

A module of its own so that :mod:`~lernie_ref.substrate.config` (the full reader) and
:mod:`~lernie_ref.substrate.preflight` (the cheap check on the ``lernie message`` path,
R-CLI-5) share them without importing each other both ways; it imports nothing.
"""

CONFIG_FILE = "lernie.toml"
MODELS = ("scripted", "command", "anthropic", "openai")
"""R-STEP-6: the model adapters."""
PROVIDERS = ("anthropic", "openai")
"""R-STEP-8: the hosted models, each with a settings table of its own."""

DEFAULT_TEXT = """\
# lernie workspace configuration. Each key can be overridden by the
# environment variable LERNIE_<KEY> (upper case), e.g. LERNIE_MODEL=command.
# An agent keeps the model it was started with (recorded in steps/<id>/model.json).

# The model adapter: "scripted" (deterministic, no network), "command"
# (an executable that reads the request as JSON on stdin and answers on stdout),
# "anthropic" (the Messages API; key in ANTHROPIC_API_KEY) or "openai" (Chat
# Completions, or any compatible server via OPENAI_BASE_URL; key in OPENAI_API_KEY).
model = "scripted"

# For model = "command": the command line to run (no shell; split like a shell would).
model_command = ""

# Model calls an agent may make before it stops with epitaph budget-exhausted.
step_budget = 100

# Seconds a "command" model may take for one answer; then its process group is
# killed and the step fails (nothing is committed; the next touch tries again).
model_timeout = 600.0

# The tools every agent is offered (LERNIE_TOOLS="a,b,c" overrides). "bash" runs
# any shell command with your own rights inside the agent's worktree: it is not
# contained, so it is off unless you add it. The file tools (read_file, cd,
# apply_patch) never reach outside the agent's worktree. Also "multi_tool".
tools = ["message", "dispatch", "read_file", "cd", "apply_patch"]

# Tools for one agent instead, by its display name or its id, e.g.
# [agent_tools]
# tester = ["message", "read_file", "cd", "bash"]

# Seconds one bash call may run before it is killed with every process it started.
tool_timeout = 120.0

# Bytes of a file read, or of each of a command's stdout and stderr, that a tool
# result keeps; the rest is cut with a marker.
tool_output_cap = 65536

# Settings of the provider adapters (all optional), e.g.
# [anthropic]
# model = "claude-sonnet-4-5"   # LERNIE_ANTHROPIC_MODEL
# max_tokens = 4096
# system_file = "system.md"     # or system = "..."
# temperature = 0.2
# timeout = 600.0               # seconds per HTTP attempt
# max_retries = 5               # on 429, 529, 5xx and broken connections
# retry_backoff = 1.0           # seconds before the first retry, then doubled
# [openai] takes the same keys (LERNIE_OPENAI_MODEL, ...).
"""
"""What ``lernie new`` writes (R-WS-1); a file holding exactly this needs no parsing."""
